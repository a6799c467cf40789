"""The consistency arithmetic: from each derivation's three reciprocal ranks to a table row.

A statement is *believed* when its gold ranks at or above ``believe_at`` among its candidates.
For one rule's derivations:

* **consistency** = P(conclusion believed | both premises believed): 1 for a model whose
  beliefs are closed under the rule;
* ``p_given_not_both`` = P(conclusion believed | not both premises believed), and the
  **difference** between the two: above 0 when believing the premises goes with believing the
  conclusion. Its interval resamples each group's derivations; its p is a permutation test of
  the group labels (`studies.comparisons.unpaired_difference`); ``p_holm`` adjusts the
  table's p-values together. The ``all`` row pools the rules' derivations, but its difference
  is the mean of the rules' differences (labels permuted within rules): pooled, a rule with
  easy conclusions and often-believed premises would pass for a link that no rule shows;
* **violations**: derivations whose premises are both believed and whose conclusion is not;
* the graded version: ``MRR`` = the conclusions' mean reciprocal rank, and ``graded`` = the
  conclusions' mean reciprocal rank weighted by how firmly both premises are held,
  min(RR(P1), RR(P2)) (with 0/1 beliefs it is the consistency itself).

Every interval is the 95 % BCa bootstrap over derivations (`studies.stats`), seeded by the
run's seed and the row, so the same ranks give the same table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from kgprobe.studies.comparisons import holm, unpaired_difference
from kgprobe.studies.stats import Clustered, bootstrap_interval, mean_interval

COLUMNS = ["rule", "template", "n_derivations", "n_both", "consistency", "consistency_lo",
           "consistency_hi", "n_not_both", "p_given_not_both", "p_given_not_both_lo",
           "p_given_not_both_hi", "difference", "difference_lo", "difference_hi", "p", "p_holm",
           "violations", "conclusion_believed", "MRR", "MRR_lo", "MRR_hi", "graded",
           "graded_lo", "graded_hi", "believe_at"]


@dataclass(frozen=True)
class DerivationRanks:
    """One derivation's statements by the gold's rank: P1, P2 and the conclusion."""

    id: str
    p1: int
    p2: int
    conclusion: int

    def rr(self) -> tuple[float, float, float]:
        return 1.0 / self.p1, 1.0 / self.p2, 1.0 / self.conclusion

    def both(self, believe_at: int) -> bool:
        return self.p1 <= believe_at and self.p2 <= believe_at

    def believed(self, believe_at: int) -> bool:
        return self.conclusion <= believe_at

    def violation(self, believe_at: int) -> bool:
        return self.both(believe_at) and not self.believed(believe_at)


def _mean(values: Sequence[float], *, seed: int, key: tuple) -> tuple[float, float, float]:
    if not values:
        return float("nan"), float("nan"), float("nan")
    iv = mean_interval(values, seed=seed, key=key)
    return float(iv.estimate[0]), float(iv.lo[0]), float(iv.hi[0])


def _graded(derivations: Sequence[DerivationRanks], *, seed: int,
            key: tuple) -> tuple[float, float, float]:
    """The conclusions' mean RR weighted by min(RR(P1), RR(P2)), with its interval."""
    if not derivations:
        return float("nan"), float("nan"), float("nan")
    rr = np.array([d.rr() for d in derivations])
    weight = np.minimum(rr[:, 0], rr[:, 1])
    sample = Clustered(np.array(weight * rr[:, 2])[:, None], weight,
                       np.zeros(len(derivations), dtype=object))
    iv = bootstrap_interval(sample, seed=seed, key=key)
    return float(iv.estimate[0]), float(iv.lo[0]), float(iv.hi[0])


def _difference(both: list[float], both_strata: list[str], rest: list[float],
                rest_strata: list[str], *, seed: int, key: tuple) -> dict:
    """consistency − p_given_not_both over the strata (rules) with at least two derivations
    on each side: a side of one has no spread to resample, and would make the interval look
    surer than the data are."""
    keep = {s for s in set(both_strata) if both_strata.count(s) >= 2
            and rest_strata.count(s) >= 2}
    if not keep:
        return {}
    first = [(v, s) for v, s in zip(both, both_strata) if s in keep]
    second = [(v, s) for v, s in zip(rest, rest_strata) if s in keep]
    diff = unpaired_difference(
        "|".join(map(str, (*key, "difference"))),
        Clustered.from_prompts(range(len(first)), [v for v, _ in first], [s for _, s in first]),
        Clustered.from_prompts(range(len(second)), [v for v, _ in second],
                               [s for _, s in second]), seed=seed)
    return {"difference": diff.estimate, "difference_lo": diff.lo, "difference_hi": diff.hi,
            "p": diff.p}


def consistency_row(derivations: Sequence[DerivationRanks], *, believe_at: int = 1,
                    seed: int = 0, key: tuple = (), strata: Sequence[str] | None = None) -> dict:
    """One row of `COLUMNS` (less its cell columns and ``p_holm``) for these derivations.

    `strata` (the ``all`` row: each derivation's rule): the difference is then the mean over
    rules of each rule's difference, labels permuted within rules, so rules whose conclusions
    are easy (rdfs2) and that often have both premises believed do not pass for a link
    between premises and conclusion."""
    believed = [float(d.believed(believe_at)) for d in derivations]
    labels = list(strata) if strata is not None else [""] * len(derivations)
    both = [b for d, b in zip(derivations, believed) if d.both(believe_at)]
    rest = [b for d, b in zip(derivations, believed) if not d.both(believe_at)]
    both_strata = [s for d, s in zip(derivations, labels) if d.both(believe_at)]
    rest_strata = [s for d, s in zip(derivations, labels) if not d.both(believe_at)]
    row = {"n_derivations": len(derivations), "n_both": len(both), "n_not_both": len(rest),
           "violations": sum(d.violation(believe_at) for d in derivations),
           "believe_at": believe_at,
           "conclusion_believed": float(np.mean(believed)) if believed else float("nan")}
    for name, values in (("consistency", both), ("p_given_not_both", rest)):
        row[name], row[f"{name}_lo"], row[f"{name}_hi"] = _mean(values, seed=seed,
                                                                key=(*key, name))
    row["difference"] = row["difference_lo"] = row["difference_hi"] = row["p"] = float("nan")
    row.update(_difference(both, both_strata, rest, rest_strata, seed=seed, key=key))
    row["MRR"], row["MRR_lo"], row["MRR_hi"] = _mean(
        [d.rr()[2] for d in derivations], seed=seed, key=(*key, "MRR"))
    row["graded"], row["graded_lo"], row["graded_hi"] = _graded(derivations, seed=seed,
                                                                key=(*key, "graded"))
    return row


def consistency_table(by_cell: dict[tuple[str, int], Sequence[DerivationRanks]], *,
                      believe_at: int = 1, seed: int = 0) -> list[dict]:
    """A row per (rule, template) cell and an ``all`` row per template (every rule's
    derivations pooled; its difference stratified by rule); ``p_holm`` adjusts every row's p
    together."""
    rows = []
    templates = sorted({t for _, t in by_cell})
    for template in templates:
        cells = [(rule, ds) for (rule, t), ds in by_cell.items() if t == template]
        pooled = [d for _, ds in cells for d in ds]
        rules = [rule for rule, ds in cells for _ in ds]
        for rule, ds, strata in [*((r, ds, None) for r, ds in cells), ("all", pooled, rules)]:
            row = consistency_row(ds, believe_at=believe_at, seed=seed, key=(rule, template),
                                  strata=strata)
            rows.append({"rule": rule, "template": template, **row})
    for row, p in zip(rows, holm([r["p"] for r in rows])):
        row["p_holm"] = float(p)
    return rows
