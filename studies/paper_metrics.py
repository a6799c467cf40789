"""R@k, MRR and MRRa as the OntoProbe paper's ``metric.py`` computes them (`--protocol paper`).

The paper's definitions (§3.1.3) match kgprobe's (`studies.metrics`) except in two details
that the official code decides and that change numbers:

* **Ties** go to the candidate listed first: a candidate's rank is its position after a
  descending sort of the scores (``argsort(argsort(-s))``), not the pessimistic count of
  candidates scoring at least as high. Torch's sort does not promise an order among equal
  scores; a stable sort (what this module uses) lists them in candidate order.
* **Golds are a list**, duplicates kept: a record whose answer chain names one candidate twice
  (two labels that normalize alike) counts that rank twice in MRRa's mean.

For one prompt with gold ranks r_1..r_n (1-based): ``R@k`` = 1 if some r_i <= k; ``MRR`` =
1 / min r_i; ``MRRa`` = 1 / mean r_i. `paper_evaluate` averages over prompts.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

KS = (1, 5, 10)


def paper_ranks(scores: Sequence[float] | np.ndarray, golds: Sequence[int]) -> np.ndarray:
    """1-based ranks of `golds` (candidate indices, duplicates kept) under a stable descending
    sort: equal scores rank in candidate order."""
    row = np.asarray(scores, dtype=np.float64).reshape(-1)
    row = np.where(np.isnan(row), -np.inf, row)
    if len(golds) == 0:
        raise ValueError("a prompt needs at least one gold candidate index")
    order = np.argsort(-row, kind="stable")
    position = np.empty(row.size, dtype=np.int64)
    position[order] = np.arange(row.size)
    return position[np.asarray(list(golds), dtype=np.int64)] + 1


def paper_item_metrics(scores, golds: Sequence[int], ks: Sequence[int] = KS) -> dict[str, float]:
    ranks = paper_ranks(scores, golds)
    out = {f"R@{k}": float(ranks.min() <= k) for k in ks}
    out["MRR"] = 1.0 / float(ranks.min())
    out["MRRa"] = 1.0 / float(ranks.mean())
    return out


def paper_evaluate(rows: Sequence[np.ndarray], golds: Sequence[Sequence[int]],
                   ks: Sequence[int] = KS) -> dict[str, float]:
    """Mean of `paper_item_metrics` over prompts (fractions in [0, 1]) and ``n``."""
    if len(rows) != len(golds):
        raise ValueError(f"{len(rows)} score rows but {len(golds)} gold lists")
    keys = [f"R@{k}" for k in ks] + ["MRR", "MRRa"]
    if not rows:
        return {**dict.fromkeys(keys, 0.0), "n": 0}
    total = dict.fromkeys(keys, 0.0)
    for row, gold in zip(rows, golds):
        for key, value in paper_item_metrics(row, gold, ks).items():
            total[key] += value
    return {**{k: v / len(rows) for k, v in total.items()}, "n": len(rows)}


def paper_gold_indices(candidates: Sequence[str], golds: Sequence[str]) -> list[int]:
    """Each gold label's candidate index, in the gold list's order, duplicates kept (the
    official ``gt``); labels not among the candidates are skipped."""
    position = {c: i for i, c in reversed(list(enumerate(candidates)))}
    return [position[g] for g in golds if g in position]


def split_top_half(rr: Sequence[float]) -> tuple[list[int], list[int]]:
    """The paper's memorized split (get_memorized.split_by_MRR): indices sorted by reciprocal
    rank, best first (stable: earlier records first among equals); the first ⌊n/2⌋ are
    memorized, the last ⌊n/2⌋ not (with n odd, the middle record is in neither)."""
    order = sorted(range(len(rr)), key=lambda i: -rr[i])
    half = len(rr) // 2
    return order[:half], order[len(order) - half:] if half else []


def split_rank1(rr: Sequence[float]) -> tuple[list[int], list[int]]:
    """The official code's rule for P1 (get_memorized.split_by_Acc): memorized when the gold
    ranks first, not memorized otherwise."""
    return ([i for i, r in enumerate(rr) if r >= 1.0], [i for i, r in enumerate(rr) if r < 1.0])
