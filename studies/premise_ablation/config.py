"""The premise-ablation study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

from kgprobe.reasoning.rdfs import RULES

SETTINGS = ("not", "implicit", "explicit")
TEMPLATE_KINDS = ("manual", "soft")
COLUMNS = ["rule", "p1", "p2", "template", "n", "R@1", "R@5", "MRR", "MRRa", "protocol"]


@dataclass
class AblationConfig:
    model: str
    rules: tuple[str, ...] = RULES
    templates: tuple[str, ...] = ("manual",)
    limit: int | None = 10  # items per rule (seeded sample); None: all
    seed: int = 0
    pairs: int = 1  # pseudoword pairs per item (the paper samples 10 and averages)
    memorized_fraction: float = 0.5  # top fraction by reciprocal rank counted as known
    device: str = "cpu"
    batch_size: int = 64
    soft_epochs: int = 30
    extra: dict = field(default_factory=dict)
    candidates: str = "all"  # "all" or K: the gold vs K − 1 seeded distractors (reasoning/distractors)
    dtype: str = "float32"  # the weights' dtype (models/loading.DTYPES)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}
