"""The COPEN study's one request stream: its configuration and data sets → what it asks.

`plan` picks, per task, the test items (``--limit``, a seeded sample) and, for the trained
methods, the train and dev items; `TaskPlan.batches` lays them out as the rows of prompts
whose features are read, in the order they are read (train, dev, test, then CiC's
out-of-context test prompts), and `methods.zero_shot_requests` gives the prompts zero-shot
scores. The run (`study.build_units`) and ``--dry-run`` (`plan.CopenPlan`) both use these, so
the prompts a dry run lists are the ones a run asks, in its order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgprobe.errors import KgprobeError
from kgprobe.reasoning.copen_items import select

from .config import CopenConfig
from .methods import Batchable


@dataclass
class TaskPlan:
    """One task's items: `test` always, `train` and `dev` for the trained methods."""

    task: str
    test: list
    train: list = field(default_factory=list)
    dev: list = field(default_factory=list)

    def batches(self) -> dict[str, Batchable]:
        """The trained methods' rows of prompts per split, in the order they are encoded."""
        return {"train": Batchable.of(self.task, self.train), "dev": Batchable.of(self.task, self.dev),
                "test": Batchable.of(self.task, self.test)}

    def ooc(self) -> Batchable | None:
        """CiC's test prompts with the sentence left out (Table 5); None for other tasks."""
        return Batchable.of(self.task, self.test, context=False) if self.task == "cic" else None


def train_dev(task: str, splits: dict, cfg: CopenConfig) -> tuple[list, list]:
    train = [it for it in splits.get("train", []) if it.label is not None]
    dev = [it for it in splits.get("dev", []) if it.label is not None]
    if not train or not dev:
        raise KgprobeError(f"{task.upper()}: {cfg.method} needs labeled train and dev items "
                           f"(found {len(train)} and {len(dev)}); pass data with train.json and dev.json")
    limit = cfg.limit_for(task, train=True)
    dev_limit = max(1, limit // 4) if limit else None
    return select(train, limit, cfg.seed), select(dev, dev_limit, cfg.seed)


def plan(cfg: CopenConfig, sets: dict) -> list[TaskPlan]:
    """Every task's items, task by task, as the run asks them."""
    plans = []
    for task, splits in sets.items():
        test = select(splits.get("test", []), cfg.limit_for(task), cfg.seed)
        if not test:
            raise KgprobeError(f"{task.upper()}: no test items; pass data with a test split")
        if cfg.method == "zero-shot":
            plans.append(TaskPlan(task, test))
        else:
            plans.append(TaskPlan(task, test, *train_dev(task, splits, cfg)))
    return plans
