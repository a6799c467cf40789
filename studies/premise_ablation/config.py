"""The premise-ablation study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

from kgprobe.reasoning.rdfs import RULES

SETTINGS = ("not", "implicit", "explicit")
TEMPLATE_KINDS = ("manual", "soft")
METRICS = ("R@1", "R@5", "MRR", "MRRa")
#: A unit's row: one cell under one template ("variant": its index among the relation's manual
#: templates; the soft kind has one).
UNIT_COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", *METRICS, "protocol", "ranking"]
#: results.csv: the unit rows, the template averages (variant "mean") and the rule averages
#: (rule "mean"), each with its item and prompt counts and 95 % interval; `n` counts prompts.
COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", "n_items", "n_prompts",
           *[f"{m}{suffix}" for m in METRICS for suffix in ("", "_lo", "_hi")], "low_n",
           "protocol", "study_protocol", "ranking"]
COMPARISON_COLUMNS = ["template", "rule", "comparison", "test", "n_items", "difference",
                      "difference_lo", "difference_hi", "p", "p_holm", "finding"]


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
    resamples: int = 2000  # bootstrap resamples (and permutations) per interval and test
    min_items: int = 10  # cells with fewer items are shown but flagged
    extra: dict = field(default_factory=dict)
    candidates: str = "all"  # "all" or K: the gold vs K − 1 seeded distractors (reasoning/distractors)
    dtype: str = "float32"  # the weights' dtype (models/loading.DTYPES)
    protocol: str = "default"  # "paper": the paper's items, split and metrics (paper.py)
    memorized: str = "top-half"  # paper protocol, P1: top-half (the paper) or rank1 (its code)
    ranking: str = "filtered"  # filtered: an item's other true answers never count (reasoning/filtering)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    #: Settings only the report reads: a rerun with other values keeps every unit.
    REPORT_ONLY = ("resamples", "min_items")

    def pinned(self) -> dict:
        """The settings a run folder is pinned to: every one that changes a unit's numbers."""
        return {k: v for k, v in self.to_json().items() if k not in self.REPORT_ONLY}

    def report_settings(self) -> dict:
        return {k: getattr(self, k) for k in self.REPORT_ONLY}
