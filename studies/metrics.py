"""Ranking metrics of OntoProbe (§3.1.3).

For one item with candidate scores ``s`` (higher = better) and gold candidate set ``G``:

* rank(g) is 1-based. **Ties are pessimistic**: ``rank(g) = #{c : s_c >= s_g}``, i.e. a gold
  tied with other candidates is placed after all of them (a model that gives every
  candidate the same score gets rank = #candidates, never a lucky rank 1). NaN scores
  count as -inf.
* ``R@k``  = 1 if some gold has rank <= k, else 0 (as in the authors' code: a hit in the top k).
* ``MRR``  = 1 / min_{g in G} rank(g)   (reciprocal rank of the best-ranked gold).
* ``MRRa`` = 1 / mean_{g in G} rank(g)  (reciprocal of the *average* rank of all golds;
  raw ranks, so with |G| golds the best possible value is 2 / (|G| + 1)).
* ``accuracy`` = 1 if the single top-ranked candidate (rank 1) is a gold (= R@1).

**Filtered ranks** (`filtered_gold_ranks`, ``--ranking filtered``, the default of the ranking
studies): a gold's rank counts only the candidates that are not true for the item — the other
golds and the item's other true answers (`reasoning.filtering`) are left out — so a model
is never ranked down for putting one true answer above another. With one gold and nothing
else true it is the raw rank; MRRa's best value becomes 1.

`evaluate` averages these over items and returns fractions in [0, 1].

The baselines (§4.1: ``--model frequency``, ``--model random``) are models, not metrics: they
live in `kgprobe.models.baselines` and every study loads them like any other model.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from kgprobe.models.baselines import stable_seed  # noqa: F401 (seeds of stats and STA)

__all__ = [
    "gold_ranks",
    "filtered_gold_ranks",
    "ranks_of",
    "recall_at_k",
    "reciprocal_rank",
    "reciprocal_mean_rank",
    "accuracy",
    "item_metrics",
    "evaluate",
    "gold_indices",
    "DEFAULT_KS",
    "stable_seed",
]

DEFAULT_KS = (1, 5, 10)


def _row(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    row = np.asarray(scores, dtype=np.float64).reshape(-1)
    return np.where(np.isnan(row), -np.inf, row)


def _golds(gold: int | Iterable[int], n: int) -> np.ndarray:
    idx = np.atleast_1d(np.asarray(list(gold) if not isinstance(gold, (int, np.integer)) else [gold], dtype=np.int64))
    if idx.size == 0:
        raise ValueError("an item needs at least one gold candidate index")
    if (idx < 0).any() or (idx >= n).any():
        raise ValueError(f"gold index out of range for {n} candidates: {idx.tolist()}")
    return np.unique(idx)


def gold_ranks(scores: Sequence[float] | np.ndarray, gold: int | Iterable[int]) -> np.ndarray:
    """1-based pessimistic ranks of the gold candidates (see module docstring)."""
    row = _row(scores)
    idx = _golds(gold, row.size)
    return np.array([int(np.count_nonzero(row >= row[g])) for g in idx], dtype=np.int64)


def filtered_gold_ranks(scores: Sequence[float] | np.ndarray, gold: int | Iterable[int],
                        also_true: Iterable[int] = ()) -> np.ndarray:
    """1-based pessimistic ranks of the golds, each among the candidates that are neither
    another gold nor in `also_true` (indices of the item's other true answers)."""
    row = _row(scores)
    idx = _golds(gold, row.size)
    barred = np.zeros(row.size, dtype=bool)
    barred[idx] = True
    barred[[i for i in also_true if 0 <= i < row.size]] = True
    rest = row[~barred]
    return np.array([1 + int(np.count_nonzero(rest >= row[g])) for g in idx], dtype=np.int64)


def ranks_of(scores, gold, *, filtered: bool = False, also_true: Iterable[int] = ()) -> np.ndarray:
    """`filtered_gold_ranks` or (``filtered`` False) `gold_ranks`: the one switch the studies'
    ``--ranking filtered|raw`` sets."""
    return filtered_gold_ranks(scores, gold, also_true) if filtered else gold_ranks(scores, gold)


def recall_at_k(scores, gold, k: int) -> float:
    return float(gold_ranks(scores, gold).min() <= k)


def reciprocal_rank(scores, gold) -> float:
    return 1.0 / float(gold_ranks(scores, gold).min())


def reciprocal_mean_rank(scores, gold) -> float:
    return 1.0 / float(gold_ranks(scores, gold).mean())


def accuracy(scores, gold) -> float:
    return recall_at_k(scores, gold, 1)


def item_metrics(scores, gold, ks: Sequence[int] = DEFAULT_KS, *, filtered: bool = False,
                 also_true: Iterable[int] = ()) -> dict[str, float]:
    """All metrics of one item (``R@k`` for each k, ``MRR``, ``MRRa``, ``accuracy``)."""
    return rank_metrics(ranks_of(scores, gold, filtered=filtered, also_true=also_true), ks)


def rank_metrics(ranks: Sequence[int] | np.ndarray, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """The metrics of one item from its golds' ranks: the one place they are defined, for a
    unit's row and for the per-item observations `kgprobe compare` pairs."""
    ranks = np.asarray(ranks, dtype=float)
    out = {f"R@{k}": float(ranks.min() <= k) for k in ks}
    out["MRR"] = 1.0 / float(ranks.min())
    out["MRRa"] = 1.0 / float(ranks.mean())
    out["accuracy"] = float(ranks.min() <= 1)
    return out


def rank_observations(predictions: Iterable[Mapping], cells: Sequence[str], *,
                      item: str = "id", ranks: str = "gold_ranks") -> list[dict]:
    """One observation per prediction that has ranks: its cell's columns, ``item`` and
    `rank_metrics` (``Study.observations`` of the ranking studies)."""
    out = []
    for p in predictions:
        golds = p.get(ranks)
        if not golds:
            continue
        out.append({**{c: p.get(c) for c in cells}, "item": str(p[item]), **rank_metrics(golds)})
    return out


def evaluate(
    scores: np.ndarray | Sequence[Sequence[float]],
    golds: Sequence[int | Iterable[int]],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    filtered: bool = False,
    also_true: Sequence[Iterable[int]] | None = None,
) -> dict[str, float]:
    """Mean of `item_metrics` over items (rows of `scores`); fractions in [0, 1] plus ``n``.
    `filtered`: filtered ranks, leaving out each item's other golds and ``also_true[i]``."""
    matrix = [np.asarray(r) for r in scores]
    if len(matrix) != len(golds):
        raise ValueError(f"{len(matrix)} score rows but {len(golds)} gold sets")
    keys = [f"R@{k}" for k in ks] + ["MRR", "MRRa", "accuracy"]
    if not matrix:
        return {**{k: 0.0 for k in keys}, "n": 0}
    totals = dict.fromkeys(keys, 0.0)
    extra = also_true if also_true is not None else [()] * len(matrix)
    for row, gold, true in zip(matrix, golds, extra):
        for key, value in item_metrics(row, gold, ks, filtered=filtered, also_true=true).items():
            totals[key] += value
    result: dict[str, float] = {k: v / len(matrix) for k, v in totals.items()}
    result["n"] = len(matrix)
    return result


def gold_indices(candidates: Sequence[str], gold_labels: Iterable[str]) -> list[int]:
    """Indices of `gold_labels` in `candidates`, each at its first place (labels not among the
    candidates are skipped). A few golds (an item's answers): a scan per gold, cheaper than a
    position table of hundreds of candidates. Many (the other true answers a filtered ranking
    skips, about 90 a premise probe among 785 candidates on the bundled ontology): the table,
    which took the gold lookups of a premise-ablation run's premise classification from
    4.1 s to 0.5 s."""
    golds = (gold_labels if isinstance(gold_labels, (list, tuple, set, frozenset))
             else list(gold_labels))
    if len(golds) > SCANNED_GOLDS:
        positions: dict[str, int] = {}
        for i, label in enumerate(candidates):
            positions.setdefault(label, i)
        return sorted({positions[g] for g in golds if g in positions})
    found = set()
    for gold in golds:
        try:
            found.add(candidates.index(gold))
        except ValueError:
            continue
    return sorted(found)


#: `gold_indices` scans the candidates for up to this many golds, and builds a table past it.
SCANNED_GOLDS = 8
