"""The candidate protocol of a ranking probe: the whole candidate set, or gold vs K−1 distractors.

OntoProbe §3 ranks the gold answer against every label of its kind (~800 classes); §5 ranks it
among K = 20 options. Ranking against K is K/800 of the work, which is what makes a study of
every reasoning item fit a CPU; metrics of the two protocols are not comparable (a random
model's MRR is ~1 % against 800 and ~18 % against 20), so results name their protocol.

Distractors are drawn from the same kind's candidates (classes for classes, properties for
properties), never one of the item's gold answers, seeded by the item, so every setting
(prompt variant, pseudoword pair) of one item ranks the same K candidates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Sequence

from kgprobe.errors import KgprobeError

__all__ = ["Protocol", "parse_protocol", "distractor_candidates"]


@dataclass(frozen=True)
class Protocol:
    """``k`` None: every candidate of the kind; else the gold and ``k − 1`` distractors."""

    k: int | None = None

    @property
    def name(self) -> str:
        """The value of results' ``protocol`` column: ``all`` or ``K=20``."""
        return "all" if self.k is None else f"K={self.k}"

    @property
    def option(self) -> str:
        """The value of ``--candidates`` that gives this protocol: ``all`` or ``20`` (what run
        folders' ``config.json`` pins)."""
        return "all" if self.k is None else str(self.k)

    def describe(self) -> str:
        if self.k is None:
            return "the gold ranked against every candidate of its kind (OntoProbe §3)"
        return (f"the gold ranked against {self.k - 1} seeded distractors of its kind that are "
                f"no gold of the item (K = {self.k}, as in OntoProbe §5)")

    def candidates(self, pool: Sequence[str], gold: Sequence[str], *, seed: int | str,
                   exclude: Sequence[str] = ()) -> list[str]:
        """The candidates an item ranks (see `distractor_candidates`)."""
        if self.k is None:
            return list(pool)
        return distractor_candidates(pool, gold, self.k, seed=seed, exclude=exclude)

    def check_pools(self, pools: Iterable[Sequence[str]]) -> None:
        """Refuse a K above the number of candidates of every kind the run ranks: results
        labelled ``K=100000`` would have ranked far fewer, and read as the harder protocol they
        are not. (A smaller kind, properties beside classes, ranks all of its candidates.)"""
        sizes = [len(set(pool)) for pool in pools]
        if self.k is not None and sizes and self.k > (n := max(sizes)):
            raise KgprobeError(f"--candidates {self.k}: there are only {n} candidates to rank; "
                               f"give K ≤ {n}, or all")


def parse_protocol(text: "str | int | Protocol | None") -> Protocol:
    """``all`` (or None) or an integer K ≥ 2, as given to ``--candidates`` (a `Protocol` is
    returned as it is: configurations hold the parsed value)."""
    if isinstance(text, Protocol):
        return text
    if isinstance(text, str) and text.strip().upper().startswith("K="):  # a results.csv name
        text = text.strip()[2:]
    if text is None or str(text).strip().lower() in ("all", ""):
        return Protocol(None)
    try:
        k = int(str(text).strip())
    except ValueError:
        k = 0
    if k < 2:
        raise KgprobeError(f"--candidates {text}: give all, or a number K ≥ 2 (the gold and "
                           "K − 1 distractors; the paper's §5 uses 20)")
    return Protocol(k)


def distractor_candidates(pool: Sequence[str], gold: Sequence[str], k: int, *, seed: int | str,
                          exclude: Sequence[str] = ()) -> list[str]:
    """`gold` and ``k − len(gold)`` distractors from `pool` (none of them gold or `exclude`),
    in `pool` order (so a candidate's position says nothing about being gold).

    Seeded by `seed` alone (e.g. ``f"{run seed}:{item id}"``): the same item gets the same
    candidates in every setting. A pool with fewer distractors gives them all.
    """
    barred = set(gold) | set(exclude)
    others = [c for c in dict.fromkeys(pool) if c not in barred]
    n = max(0, min(k - len(set(gold)), len(others)))
    chosen = set(random.Random(str(seed)).sample(others, n)) | set(gold)
    ordered = [c for c in dict.fromkeys(pool) if c in chosen]
    return ordered + [g for g in dict.fromkeys(gold) if g not in ordered]  # a gold outside the pool
