"""The consistency arithmetic: from each derivation's reciprocal ranks to a table row.

A statement is *believed* when its gold ranks at or above ``believe_at`` among its candidates.
For one rule's derivations:

* **consistency** = P(conclusion believed | both premises believed): 1 for a model whose
  beliefs are closed under the rule;
* ``p_given_not_both`` = P(conclusion believed | not both premises believed), and the
  **difference** between the two; its p permutes the labels within clusters
  (`clustered.within_p`);
* the **matched contrast** (`controls.matched_controls`): ``control_consistency`` =
  P(conclusion believed | the control premises, which do not entail it, both believed), and
  ``matched_difference`` = P(conclusion believed | its own premises believed) − that, over
  the derivations with a control (``n_controlled``); its p swaps the two sets of premises
  within clusters (`clustered.sign_flip_p`);
* the **headline** (`consistency_table` with a reference): ``consistency_minus_prior`` = the
  consistency minus the reference model's consistency on the same derivations (by default
  the model's own content-free prior), a paired cluster bootstrap and a sign-flip test;
* **violations**: derivations whose premises are both believed and whose conclusion is not;
* graded: ``MRR`` = the conclusions' mean reciprocal rank, ``graded`` = the same weighted by
  min(RR(P1), RR(P2)).

The ``all`` row pools the rules' derivations, but its two contrasts (difference, matched
difference) are the mean of the rules' contrasts: pooled, a rule with easy conclusions and
often-believed premises would pass for a link no rule shows; only rules with at least two
derivations on each side enter a contrast. Every interval is a 95 % BCa bootstrap over
**clusters** of derivations sharing a statement (`clustered`), seeded by the run's seed and
the row, so the same ranks give the same table.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from kgprobe.studies.comparisons import holm

from .clustered import (
    NAN3,
    cluster_interval,
    cluster_sums,
    ratio,
    sign_flip_p,
    statement_clusters,
    within_p,
)

COLUMNS = ["rule", "template", "n_derivations", "n_clusters", "n_both", "consistency",
           "consistency_lo", "consistency_hi", "n_not_both", "p_given_not_both",
           "p_given_not_both_lo", "p_given_not_both_hi", "difference", "difference_lo",
           "difference_hi", "p", "p_holm", "n_controlled", "n_control_both",
           "control_consistency", "control_consistency_lo", "control_consistency_hi",
           "matched_difference", "matched_difference_lo", "matched_difference_hi",
           "p_matched", "p_matched_holm", "reference", "reference_consistency",
           "consistency_minus_prior", "consistency_minus_prior_lo",
           "consistency_minus_prior_hi", "p_minus_prior", "p_minus_prior_holm",
           "violations", "conclusion_believed", "MRR", "MRR_lo", "MRR_hi",
           "graded", "graded_lo", "graded_hi", "believe_at"]
ALPHA = 0.05
MIN_BOTH = 10  # a row with fewer derivations whose premises are both believed claims nothing


@dataclass(frozen=True)
class DerivationRanks:
    """One derivation's statements by the gold's rank: P1, P2 and the conclusion; `control`
    the ranks of its matched control premises (None: it has none); `statements` the keys that
    link it to other derivations (its own and its control's), for the clusters."""

    id: str
    p1: int
    p2: int
    conclusion: int
    control: tuple[int, int] | None = None
    statements: tuple[Hashable, ...] = ()

    def rr(self) -> tuple[float, float, float]:
        return 1.0 / self.p1, 1.0 / self.p2, 1.0 / self.conclusion

    def both(self, believe_at: int) -> bool:
        return self.p1 <= believe_at and self.p2 <= believe_at

    def believed(self, believe_at: int) -> bool:
        return self.conclusion <= believe_at

    def violation(self, believe_at: int) -> bool:
        return self.both(believe_at) and not self.believed(believe_at)

    def control_both(self, believe_at: int) -> bool:
        return self.control is not None and max(self.control) <= believe_at


def _blocks(columns: np.ndarray, strata: Sequence[str], rules: Sequence[str]) -> np.ndarray:
    """(n, F) → (n, F × rules): each derivation's columns in its rule's block, zeros elsewhere,
    so one bootstrap of clusters (which may span rules) gives every rule's sums."""
    out = np.zeros((len(columns), columns.shape[1] * len(rules)))
    for r, rule in enumerate(rules):
        rows = np.array([s == rule for s in strata], dtype=bool)
        out[rows, r * columns.shape[1]:(r + 1) * columns.shape[1]] = columns[rows]
    return out


def _mean_of_rules(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean over rule blocks of (a_num / a_den − b_num / b_den); a block is (num, den). A rule
    a resample leaves without one side drops out of that resample's mean (NaN if all do)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = a[:, 0::2] / a[:, 1::2] - b[:, 0::2] / b[:, 1::2]
    present = np.isfinite(diff)
    count = present.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.where(present, diff, 0).sum(1) / count, np.nan)


def _eligible(first: np.ndarray, second: np.ndarray, strata: Sequence[str],
              clusters: Sequence) -> list[str]:
    """The rules with at least two clusters on each side of a contrast: a side from one
    cluster has no spread to resample, and would make the interval look surer than the data
    are."""
    def spread(side: np.ndarray, rule: str) -> bool:
        return len({c for v, s, c in zip(side, strata, clusters) if v and s == rule}) >= 2

    return [r for r in dict.fromkeys(strata) if spread(first, r) and spread(second, r)]


def _contrast(first: np.ndarray, second: np.ndarray, y: np.ndarray, strata: Sequence[str],
              clusters: Sequence, *, seed: int, key: tuple) -> tuple[tuple, list[str], np.ndarray]:
    """P(y | first) − P(y | second), the mean over eligible rules; (estimate, lo, hi), the
    rules, and the per-cluster sums of [first arm | second arm] blocks."""
    rules = _eligible(first, second, strata, clusters)
    if not rules:
        return NAN3, rules, np.zeros((0, 0))
    a = _blocks(np.stack([first * y, first], 1), strata, rules)
    b = _blocks(np.stack([second * y, second], 1), strata, rules)
    sums = cluster_sums(np.hstack([a, b]), clusters)
    width = a.shape[1]
    iv = cluster_interval(sums, lambda t: _mean_of_rules(t[:, :width], t[:, width:]),
                          seed=seed, key=key)
    return iv, rules, sums


def _split_statistic(rules: list[str], strata: Sequence[str]):
    masks = [np.array([s == r for s in strata]) for r in rules]

    def statistic(labels: np.ndarray, y: np.ndarray) -> np.ndarray:
        parts = []
        for m in masks:
            lab = labels[:, m]
            with np.errstate(divide="ignore", invalid="ignore"):
                parts.append(lab @ y[m] / lab.sum(1) - (1 - lab) @ y[m] / (1 - lab).sum(1))
        return np.mean(parts, axis=0)
    return statistic


def _set(row: dict, name: str, iv: tuple) -> None:
    row[name], row[f"{name}_lo"], row[f"{name}_hi"] = iv


def consistency_row(derivations: Sequence[DerivationRanks], *, believe_at: int = 1,
                    seed: int = 0, key: tuple = (), strata: Sequence[str] | None = None,
                    clusters: Sequence | None = None,
                    reference: Sequence[DerivationRanks] | None = None) -> dict:
    """One row of `COLUMNS` (less its cell columns, Holm-adjusted p's and ``claimed``).

    `strata` (the ``all`` row: each derivation's rule): the contrasts are the mean over rules
    of each rule's contrast, labels permuted within rules. `clusters`: each derivation's
    cluster (None: each its own). `reference`: the reference model's ranks of the same
    derivations, for ``consistency_minus_prior``."""
    n = len(derivations)
    labels = list(strata) if strata is not None else [""] * n
    groups = list(clusters) if clusters is not None else list(range(n))
    y = np.array([d.believed(believe_at) for d in derivations], dtype=float)
    b = np.array([d.both(believe_at) for d in derivations], dtype=float)
    h = np.array([d.control is not None for d in derivations], dtype=float)
    k = np.array([d.control_both(believe_at) for d in derivations], dtype=float)
    row = {"n_derivations": n, "n_clusters": len(set(groups)), "n_both": int(b.sum()),
           "n_not_both": int(n - b.sum()), "n_controlled": int(h.sum()),
           "n_control_both": int(k.sum()),
           "violations": sum(d.violation(believe_at) for d in derivations),
           "believe_at": believe_at,
           "conclusion_believed": float(y.mean()) if n else float("nan")}
    rr = np.array([d.rr() for d in derivations]).reshape(n, 3)
    weight = np.minimum(rr[:, 0], rr[:, 1])
    base = cluster_sums(np.stack([b * y, b, (1 - b) * y, 1 - b, k * y, k, rr[:, 2],
                                  np.ones(n), weight * rr[:, 2], weight], 1), groups)
    for name, num in (("consistency", 0), ("p_given_not_both", 2), ("control_consistency", 4),
                      ("MRR", 6), ("graded", 8)):
        _set(row, name, cluster_interval(base, ratio(num, num + 1), seed=seed, key=(*key, name),
                                         support=(num + 1,)))
    iv, rules, _ = _contrast(b, 1 - b, y, labels, groups, seed=seed, key=(*key, "difference"))
    _set(row, "difference", iv)
    row["p"] = (within_p(b, y, list(zip(groups, labels)), _split_statistic(rules, labels),
                         seed=seed, key=(*key, "difference")) if rules else float("nan"))
    iv, rules, sums = _contrast(b * h, k, y, labels, groups, seed=seed, key=(*key, "matched"))
    _set(row, "matched_difference", iv)
    half = sums.shape[1] // 2
    row["p_matched"] = (sign_flip_p(sums[:, :half], sums[:, half:], _mean_of_rules, seed=seed,
                                    key=(*key, "matched")) if rules else float("nan"))
    row.update(_minus_reference(b, y, reference, groups, believe_at, seed=seed, key=key))
    return row


def _minus_reference(b: np.ndarray, y: np.ndarray, reference, groups, believe_at: int, *,
                     seed: int, key: tuple) -> dict:
    """The consistency minus the reference's on the same derivations, clusters resampled
    together (paired); p: the model and the reference swapped within whole clusters."""
    row = {"reference_consistency": float("nan"), "p_minus_prior": float("nan")}
    _set(row, "consistency_minus_prior", NAN3)
    if reference is None or not len(b):
        return row
    rb = np.array([d.both(believe_at) for d in reference], dtype=float)
    ry = np.array([d.believed(believe_at) for d in reference], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        row["reference_consistency"] = float((rb * ry).sum() / rb.sum()) if rb.sum() else float("nan")
    mine = cluster_sums(np.stack([b * y, b], 1), groups)
    theirs = cluster_sums(np.stack([rb * ry, rb], 1), groups)
    _set(row, "consistency_minus_prior", cluster_interval(
        np.hstack([mine, theirs]), lambda t: _mean_of_rules(t[:, :2], t[:, 2:]), seed=seed,
        key=(*key, "minus prior"), support=(1, 3)))
    row["p_minus_prior"] = sign_flip_p(mine, theirs, _mean_of_rules, seed=seed,
                                       key=(*key, "minus prior"))
    return row


def template_clusters(by_cell: dict[tuple[str, int], Sequence[DerivationRanks]],
                      template: int) -> dict[tuple[str, int], list[int]]:
    """Each derivation's cluster within a template, over every rule (a statement can be a
    premise of one rule's derivations and the conclusion of another's); a derivation with no
    statement keys is its own cluster."""
    cells = [(cell, ds) for cell, ds in by_cell.items() if cell[1] == template]
    keys = [d.statements or (("own", cell, i),) for cell, ds in cells for i, d in enumerate(ds)]
    numbers = iter(statement_clusters(keys))
    return {cell: [next(numbers) for _ in ds] for cell, ds in cells}


def consistency_table(by_cell: dict[tuple[str, int], Sequence[DerivationRanks]], *,
                      believe_at: int = 1, seed: int = 0,
                      reference: dict[tuple[str, int], Sequence[DerivationRanks]] | None = None,
                      reference_name: str = "") -> list[dict]:
    """A row per (rule, template) cell and an ``all`` row per template (every rule's
    derivations pooled; its contrasts within rules); every p of the table (difference,
    matched, minus prior) is Holm-adjusted together, as one exploratory family (what a run
    claims is `claims`' confirmatory test, not these)."""
    rows = []
    for template in sorted({t for _, t in by_cell}):
        clusters = template_clusters(by_cell, template)
        cells = [(rule, ds) for (rule, t), ds in by_cell.items() if t == template]
        pooled = [d for _, ds in cells for d in ds]
        rules = [rule for rule, ds in cells for _ in ds]
        groups = [c for rule, _ in cells for c in clusters[(rule, template)]]
        ref = ([d for rule, _ in cells for d in reference[(rule, template)]]
               if reference is not None else None)
        for rule, ds, strata, cl, rf in [
                *((r, ds, None, clusters[(r, template)],
                   reference[(r, template)] if reference is not None else None)
                  for r, ds in cells), ("all", pooled, rules, groups, ref)]:
            row = consistency_row(ds, believe_at=believe_at, seed=seed, key=(rule, template),
                                  strata=strata, clusters=cl, reference=rf)
            rows.append({"rule": rule, "template": template, "reference": reference_name,
                         **row})
    family = [(r, name) for r in rows for name in ("p", "p_matched", "p_minus_prior")]
    for (row, name), p in zip(family, holm([row[name] for row, name in family])):
        row[f"{name}_holm"] = float(p)
    return rows
