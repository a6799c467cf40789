"""How generated COPEN items are split and accounted for (`copen_kg`, `copen_norms`).

Train/dev and test concepts are disjoint by top-level concept (Table 16's idea):
`split_top_levels` keeps the paper's side for the top-level concepts Table 16 names and
assigns the others with the seed; `split_train_dev` makes a seeded fifth of the train groups
dev. `GenerationReport` counts what a generator kept and skipped, and why.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping

from kgprobe.reasoning.copen_items import Item

#: Table 16 of the paper: the top-level concepts of the train/dev and of the test data.
PAPER_SPLIT = {
    **{k: "train" for k in ("organisation", "name", "award", "meanoftransportation", "colour",
                            "language", "person", "holiday", "work", "currency", "ethnicgroup")},
    **{k: "test" for k in ("anatomicalstructure", "species", "food", "event", "timeperiod",
                           "chemicalsubstance", "place", "device", "disease", "activity",
                           "biomolecule", "sportsseason")},
}


def _paper_key(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def split_top_levels(weights: Mapping[str, int], *, seed: int, test_share: float = 0.45,
                     names: Mapping[str, str] | None = None) -> dict[str, str]:
    """Assign each top-level concept to ``train`` (train and dev data) or ``test``.

    Top-level concepts the paper's Table 16 names keep the paper's side; the others go, in a
    seeded order, to whichever side is further below its target share of `weights` (items
    per top-level concept). Both sides get at least one top-level concept when there are two.
    `names` maps a key to the name matched against Table 16 (default: the key itself)."""
    names = names or {}
    side: dict[str, str] = {}
    load = {"train": 0, "test": 0}
    for key in sorted(weights):
        paper = PAPER_SPLIT.get(_paper_key(names.get(key, key)))
        if paper:
            side[key] = paper
            load[paper] += weights[key]
    rest = sorted(k for k in weights if k not in side)
    random.Random(seed).shuffle(rest)
    rest.sort(key=lambda k: -weights[k])  # stable: big ones first, seeded among equals
    total = sum(weights.values()) or 1
    target = {"test": test_share, "train": 1 - test_share}
    for key in rest:
        pick = min(("train", "test"), key=lambda s: (load[s] / total - target[s], s))
        side[key] = pick
        load[pick] += weights[key]
    if len(side) >= 2 and len(set(side.values())) == 1:
        smallest = min(side, key=lambda k: (weights[k], k))
        side[smallest] = "test" if side[smallest] == "train" else "train"
    return side


def split_train_dev(items: list[Item], *, seed: int, dev_share: float = 0.2) -> None:
    """Mark a seeded `dev_share` of the groups of train items as dev (in place)."""
    keys = sorted({it.group or it.id for it in items if it.split == "train"})
    random.Random(seed + 1).shuffle(keys)
    dev = set(keys[: round(len(keys) * dev_share)])
    for it in items:
        if it.split == "train" and (it.group or it.id) in dev:
            it.split = "dev"


@dataclass
class GenerationReport:
    """Counts of what a generator kept and skipped, and why (written to summary.json)."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def to_json(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "notes": self.notes}
