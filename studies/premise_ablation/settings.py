"""What a premise-ablation report reads from its run folder's ``config.json``, typed.

Every default is stated here once: a folder `kgprobe import lm-eval` wrote pins only its
candidates and ranking, one written before a setting existed lacks it, and the tables, the
comparisons and the report must agree on what such a folder means.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from kgprobe.studies import stats


@dataclass(frozen=True)
class ReportSettings:
    """The pinned settings the report's numbers and words depend on."""

    model: str | None = None  # None: not recorded (an imported folder)
    rules: tuple[str, ...] = ()  # empty: the rules the prompts on disk have
    templates: tuple[str, ...] = ()  # empty: the template kinds the prompts on disk have
    limit: int | None = None
    pairs: int | None = None
    seed: int = 0  # the intervals' and tests' seed
    resamples: int = stats.RESAMPLES
    min_items: int = stats.MIN_ITEMS
    memorized_fraction: float = 0.5
    memorized: str = "top-half"
    protocol: str = "default"
    candidates: str = "all"
    ranking: str = "raw"  # a folder from before filtered ranking ranked raw
    depth: tuple[int, ...] | None = None  # None: no chained items (`--depth`)
    distractors: tuple[int, ...] | None = None
    premise_order: str = "ordered"
    memorized_sample: int | None = None  # None: the split over the whole population
    premises: tuple[str, ...] = ("true",)  # with "counterfactual": its cells too
    controls: tuple[str, ...] = ()  # scored beside the model (`studies.controls`)

    @classmethod
    def of(cls, pinned: dict) -> "ReportSettings":
        known = {f.name for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in pinned.items()
                  if k in known and v is not None}
        return cls(**values)

    @classmethod
    def read(cls, out: Path) -> "ReportSettings":
        path = Path(out) / "config.json"
        pinned = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        return cls.of(pinned if isinstance(pinned, dict) else {})

    @property
    def chained(self) -> bool:
        """Whether the run scored chained items (its tables gain depth rows)."""
        return self.depth is not None

    @property
    def counterfactual(self) -> bool:
        """Whether the run scored counterfactual cells (its tables gain a premises column)."""
        return "counterfactual" in self.premises
