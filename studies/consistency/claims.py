"""What a consistency run claims: the subject-matched contrast, paired against every control.

**The claim.** A row is claimed when the model's subject-matched contrast (`subject_matched`:
entailed conclusions about a subject against that subject's other conclusions, each
statement's belief taken net of its relation-and-answer base rate) is larger than

* 0 (no link between premises and conclusion), and
* every control's on the same derivations and statements (``--controls``: frequency, copy,
  random by default; ``prior`` on request), each a **paired** one-sided test of model −
  control over the same clusters (`wild_bootstrap`: a wild cluster bootstrap-t, G clusters
  reported, "not testable" below `wild_bootstrap.MIN_CLUSTERS`).

It must beat each of them, so the row's p is the **largest** of these p's (an
intersection–union test: no correction is owed within a row). Across rows, Holm's adjustment
runs over the **confirmatory family, the `all` row of each template asked** (one test per
template; a run of template 0 has a family of one). The rule rows get the same columns, to
read, but are exploratory: they are never claimed (a rule's cell usually has too few clusters
to test). A row is claimed only where every comparison is testable, the Holm-adjusted p is
below 0.05, at least `beliefs.MIN_BOTH` derivations have both premises believed, and the run's
model is not itself a control.

**Why these and not the consistency against the controls' upper bound** (the rule this
replaces): the consistency is a conditional rate over *different* derivations for the model
and each control (those whose premises each believes), so comparing it with a control's
bound compares different items; the bound of a control with a few lucky derivations is 100;
and a model that knows some subjects well, with no entailment, scores higher than one closed
under entailment. The contrast here pairs the model and each control on the same statements
and leaves familiarity and answer preference out by construction.

**The content-free reference** (`base_rate`, `consistency_minus_base_rate`): each derivation
with both premises believed contributes its conclusion's base rate (`subject_matched.base_rates`),
so the reference is defined wherever the consistency is; its interval is a BCa bootstrap over
the same clusters. It is descriptive: a familiarity-only model is above it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgprobe.studies.comparisons import holm

from .beliefs import ALPHA, MIN_BOTH
from .clustered import cluster_interval
from .statements import BeliefDerivation, Statement
from .subject_matched import base_rates, layout, minus_base_rate, scores
from .wild_bootstrap import wild_cluster_test

#: The confirmatory family, named in results.csv (``confirmatory``) and the report.
FAMILY = "the all row of each template"
HEAD = ["base_rate", "consistency_minus_base_rate", "consistency_minus_base_rate_lo",
        "consistency_minus_base_rate_hi", "n_strata", "G", "subject_matched",
        "subject_matched_lo", "subject_matched_hi", "p_subject_matched"]
TAIL = ["testable", "confirmatory", "p_claim", "p_claim_holm", "claimed"]


def control_columns(control: str) -> list[str]:
    """The columns of one control's paired comparison."""
    return [f"subject_matched_{control}", f"vs_{control}", f"vs_{control}_lo",
            f"vs_{control}_hi", f"p_vs_{control}", f"G_vs_{control}"]


def claim_columns(controls: Sequence[str]) -> list[str]:
    return [*HEAD, *(c for name in controls for c in control_columns(name)), *TAIL]


def _believed(ranks: Mapping[tuple[str, int], dict], keys, template: int,
              believe_at: int) -> dict[str, bool]:
    return {k: ranks[(k, template)]["rank"] <= believe_at for k in keys}


def _net_of_base_rate(sums: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sums[:, 0] - sums[:, 1]) / sums[:, 2]


def entailment_rows(derivations: Mapping[str, Sequence[BeliefDerivation]],
                    statements: Mapping[int, Mapping[str, Statement]],
                    ranks: Mapping[str, Mapping[tuple[str, int], dict]], model: str,
                    controls: Sequence[str], *, believe_at: int = 1,
                    seed: int = 0) -> dict[tuple[str, int], dict]:
    """(rule, template) → the claim's columns (less the family's: `confirm`), a row per rule
    and an ``all`` row per template. `ranks`: model name → (statement key, template) → its
    prediction (``rank``), for `model` and every control; `statements`: template → every
    statement scored in it (the base rates' population)."""
    out = {}
    for t, population in statements.items():
        beliefs = {name: _believed(ranks[name], population, t, believe_at)
                   for name in (model, *controls)}
        rates = {name: base_rates(population, b) for name, b in beliefs.items()}
        pooled = [d for ds in derivations.values() for d in ds]
        for rule, ds in [*derivations.items(), ("all", pooled)]:
            lay = layout(ds)
            key = (rule, t)
            mine = scores(lay, beliefs[model], rates[model])
            row = {"n_strata": mine.n_strata, "G": mine.G}
            sums = minus_base_rate(lay, beliefs[model], rates[model])
            n = sums[:, 2].sum()
            row["base_rate"] = float(sums[:, 1].sum() / n) if n else float("nan")
            iv = cluster_interval(sums, _net_of_base_rate, seed=seed,
                                  key=(*key, "minus base rate"), support=(2,))
            (row["consistency_minus_base_rate"], row["consistency_minus_base_rate_lo"],
             row["consistency_minus_base_rate_hi"]) = iv
            alone = wild_cluster_test(mine.contributions()[mine.den > 0], seed=seed,
                                      key=(*key, "subject matched"))
            row.update(subject_matched=mine.estimate, subject_matched_lo=alone.lo,
                       subject_matched_hi=alone.hi, p_subject_matched=alone.p)
            results = [alone]
            for name in controls:
                theirs = scores(lay, beliefs[name], rates[name])
                active = (mine.den + theirs.den) > 0
                paired = wild_cluster_test((mine.contributions() - theirs.contributions())[active],
                                           seed=seed, key=(*key, "versus", name))
                results.append(paired)
                row.update({f"subject_matched_{name}": theirs.estimate,
                            f"vs_{name}": paired.estimate, f"vs_{name}_lo": paired.lo,
                            f"vs_{name}_hi": paired.hi, f"p_vs_{name}": paired.p,
                            f"G_vs_{name}": paired.G})
            row["testable"] = all(r.testable for r in results)
            row["p_claim"] = max(r.p for r in results) if row["testable"] else float("nan")
            out[key] = row
    return out


def confirm(rows: list[dict], *, control_run: bool) -> list[dict]:
    """Holm over the confirmatory family (`FAMILY`), then ``claimed`` (see the module)."""
    family = [r for r in rows if r["rule"] == "all"]
    for r in rows:
        r["confirmatory"] = r["rule"] == "all"
        r["p_claim_holm"] = float("nan")
    for r, p in zip(family, holm([r["p_claim"] for r in family])):
        r["p_claim_holm"] = float(p)
    for r in rows:
        r["claimed"] = bool(r["confirmatory"] and r["testable"] and not control_run
                            and r["n_both"] >= MIN_BOTH
                            and np.isfinite(r["p_claim_holm"]) and r["p_claim_holm"] < ALPHA)
    return rows
