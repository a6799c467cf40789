"""The COPEN study's settings: everything that decides its numbers (pinned in OUT/config.json)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kgprobe.reasoning.copen_items import TASKS

METHODS = ("zero-shot", "linear", "finetune")
DEFAULT_SEEDS = (42, 43, 44)


@dataclass
class CopenConfig:
    """Everything that decides the numbers of a run (pinned in OUT/config.json)."""

    model: str
    method: str
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    data: str | None = None  # official data folder or zip
    from_kg: bool = False
    store: str | None = None
    endpoint: str | None = None  # a SPARQL endpoint read instead of the store (--endpoint)
    norms: str | None = None
    limit: int | dict | None = None  # test items per task (one number, or {task: number})
    train_limit: int | dict | None = None  # train items per task (dev: a quarter of it)
    seed: int = 0  # data generation and item selection
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    parts: list[str] | None = None  # zero-shot text parts (default: all of the task's)
    pooling: str = "auto"
    hparams: dict = field(default_factory=dict)
    device: str = "cpu"
    reason: bool = False  # --reason: re-run stale inferences first (not pinned: same items)
    wait: bool = False  # --wait: for another writer, with --reason (not pinned)

    def limit_for(self, task: str, train: bool = False) -> int | None:
        value = self.train_limit if train else self.limit
        return value.get(task) if isinstance(value, dict) else value

    def pinned(self) -> dict:
        d = asdict(self)
        for key in ("device", "reason", "wait"):
            d.pop(key)
        return d
