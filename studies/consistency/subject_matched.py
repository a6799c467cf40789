"""Entailment, not familiarity: conclusions about a subject compared with the same subject's others.

A model that simply knows some subjects well (believes everything about Messi, nothing about
an obscure footballer) believes both premises *and* the conclusion about a known subject, and
neither about an unknown one: P(conclusion | premises believed) is high without any entailment.
A model that likes an answer ("athlete") believes a premise and the conclusion that share it.
This module's contrast holds both fixed:

* **Strata.** The conclusions of a row's derivations are grouped by (subject, relation):
  "Messi is a [MASK]" with gold *athlete*, and with gold *person*, are one stratum. Within a
  stratum a conclusion is **entailed** (E) when some derivation of the row concludes it from
  two premises the model believes, else **not entailed** (N). Only strata holding both kinds
  enter (a familiarity-only believer's known subjects are believed on both sides, so they
  cancel).
* **The base rate** (`base_rates`, the content-free reference): a statement's expected belief
  from its relation and answer alone, the model's belief rate over the statements of the
  same relation with the same answer *about other subjects* (else of the same relation;
  else of every other statement). It is defined for every statement, so, unlike the
  content-free prior (which believes one answer per template, and so often no derivation's
  premises), it never leaves the headline undefined. A statement's **residual** is its belief
  minus its base rate; a model that likes an answer is matched on it: its residuals are 0
  whatever it believes.
* **The contrast** is, per eligible stratum, mean residual over E − mean residual over N,
  averaged over strata with weights |E||N| / (|E| + |N|) (Cochran–Mantel–Haenszel's, so a
  stratum with one statement on a side weighs little). A model whose beliefs are closed
  under entailment believes E and not (more than its base rate) N: positive. A familiarity
  believer or an answer liker: 0 in expectation.

**Clusters** (belief-independent, so every model is tested over the same partition): two
strata are one cluster when the derivations concluding their statements share a statement
(premise or conclusion), as `clustered.statement_clusters` links derivations. The estimate is
a ratio of per-cluster sums; `contributions` gives each cluster's share of it (the
denominator fixed), which is what `wild_bootstrap` reweights.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .clustered import statement_clusters
from .statements import BeliefDerivation, Statement


@dataclass(frozen=True)
class Layout:
    """A row's strata and clusters, fixed before any belief is read."""

    derivations: tuple[BeliefDerivation, ...]
    strata: tuple[tuple[str, str], ...]  # (subject, relation)
    members: tuple[tuple[str, ...], ...]  # each stratum's distinct conclusion keys
    cluster: tuple[int, ...]  # each stratum's cluster
    derivation_cluster: tuple[int, ...]  # each derivation's: its conclusion's stratum's

    @property
    def n_clusters(self) -> int:
        return len(set(self.cluster))


def layout(derivations: Sequence[BeliefDerivation]) -> Layout:
    """The strata of `derivations`' conclusions and the clusters that join them."""
    members: dict[tuple[str, str], dict[str, None]] = {}
    links: dict[tuple[str, str], dict[str, None]] = {}
    for d in derivations:
        c = d.conclusion
        stratum = (c.subject, c.relation)
        members.setdefault(stratum, {})[c.key] = None
        links.setdefault(stratum, {}).update(dict.fromkeys(s.key for s in d.statements))
    strata = tuple(members)
    cluster = tuple(statement_clusters([tuple(links[s]) for s in strata]))
    of = dict(zip(strata, cluster))
    return Layout(tuple(derivations), strata, tuple(tuple(members[s]) for s in strata), cluster,
                  tuple(of[(d.conclusion.subject, d.conclusion.relation)] for d in derivations))


def base_rates(statements: Mapping[str, Statement], believed: Mapping[str, bool]) -> dict[str, float]:
    """key → the statement's base rate: the belief rate of the same relation and answer about
    other subjects; with none, of the same relation about other subjects; with none, of every
    other statement; with none (a lone statement), 0."""
    def add(table, key, subject, value):
        total = table.setdefault(key, [0.0, 0, defaultdict(lambda: [0.0, 0])])
        total[0] += value
        total[1] += 1
        total[2][subject][0] += value
        total[2][subject][1] += 1

    by_answer: dict = {}
    by_relation: dict = {}
    overall = [0.0, 0]
    for key, s in statements.items():
        value = float(bool(believed[key]))
        add(by_answer, (s.relation, s.answer), s.subject, value)
        add(by_relation, s.relation, s.subject, value)
        overall[0] += value
        overall[1] += 1

    def others(table, key, subject):
        total, n, per = table[key]
        own_total, own_n = per[subject]
        return (total - own_total, n - own_n)

    out = {}
    for key, s in statements.items():
        value = float(bool(believed[key]))
        for total, n in (others(by_answer, (s.relation, s.answer), s.subject),
                         others(by_relation, s.relation, s.subject),
                         (overall[0] - value, overall[1] - 1)):
            if n > 0:
                out[key] = total / n
                break
        else:
            out[key] = 0.0
    return out


def entailed(derivations: Sequence[BeliefDerivation], believed: Mapping[str, bool]) -> set[str]:
    """The conclusions some derivation draws from two believed premises."""
    return {d.conclusion.key for d in derivations
            if all(believed[p.key] for p in d.premises)}


@dataclass(frozen=True)
class Scores:
    """One model's contrast on a layout: per-cluster numerator and denominator sums."""

    num: np.ndarray
    den: np.ndarray
    n_strata: int  # strata with both an entailed and a not-entailed conclusion

    @property
    def estimate(self) -> float:
        """The weighted mean of the strata's differences; 0 where no stratum is eligible (a
        model that believes no premises about a subject that also has conclusions it does not
        entail shows no link)."""
        total = self.den.sum()
        return float(self.num.sum() / total) if total > 0 else 0.0

    def contributions(self) -> np.ndarray:
        """Each cluster's share of `estimate` (the denominator fixed): they sum to it."""
        total = self.den.sum()
        return self.num / total if total > 0 else np.zeros_like(self.num)

    @property
    def G(self) -> int:
        return int(np.count_nonzero(self.den))


def scores(lay: Layout, believed: Mapping[str, bool], rates: Mapping[str, float]) -> Scores:
    """The subject-matched contrast of the model whose beliefs are `believed` (rates: its
    `base_rates`)."""
    e = entailed(lay.derivations, believed)
    num = np.zeros(lay.n_clusters)
    den = np.zeros(lay.n_clusters)
    n = 0
    for keys, g in zip(lay.members, lay.cluster):
        sides = ([k for k in keys if k in e], [k for k in keys if k not in e])
        if not all(sides):
            continue
        means = [np.mean([float(bool(believed[k])) - rates[k] for k in side]) for side in sides]
        w = len(sides[0]) * len(sides[1]) / len(keys)
        num[g] += w * (means[0] - means[1])
        den[g] += w
        n += 1
    return Scores(num, den, n)


def minus_base_rate(lay: Layout, believed: Mapping[str, bool],
                    rates: Mapping[str, float]) -> np.ndarray:
    """(clusters, 3) sums over the derivations with both premises believed: conclusion
    believed, its base rate, and the count; consistency − base rate = (col 0 − col 1) / col 2."""
    out = np.zeros((lay.n_clusters, 3))
    for d, g in zip(lay.derivations, lay.derivation_cluster):
        if all(believed[p.key] for p in d.premises):
            out[g] += (float(bool(believed[d.conclusion.key])), rates[d.conclusion.key], 1.0)
    return out
