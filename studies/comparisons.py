"""Comparisons between a study's cells, on the item-level resampling of `studies/stats.py`.

* **paired** (the same items under two settings): the per-item differences, bootstrapped as a
  cell is; p from the sign-flip permutation test swapping the two settings within items
  (``scipy.stats.permutation_test``'s, vectorized in `sign_flip`);
* **unpaired** (different items): each side bootstrapped on its own; p from a permutation
  test of the item labels — ``scipy.stats.permutation_test`` for one stratum, the same test
  with labels permuted within each stratum (which scipy cannot do) for a summary;
* **against a target** (both premises written vs a perfect 100): the bootstrap p-value of the
  target, the test the percentile interval inverts.

* **one-sided, against a control** (`one_sided`): a model − a control on the prompts both
  scored, in the declared direction model > control; `beyond_every` joins one such test per
  control into the intersection–union test a claim rests on.

`holm` adjusts a family's p-values together; `Comparison.supported` is the report's rule for
stating a (descriptive) finding. scipy is imported inside the functions that use it.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from kgprobe.studies.sign_flip import paired_permutation_p
from kgprobe.studies.stats import (
    CHUNK,
    CONFIDENCE,
    RESAMPLES,
    TEST_FACTOR,
    Clustered,
    Crossed,
    bootstrap_interval,
    chunks,
    percentile,
    rng_for,
)


@dataclass
class Comparison:
    """A difference (first − second, or value − target) with its interval and p-value."""

    name: str
    test: str  # "paired" | "unpaired" | "target"
    estimate: float
    lo: float
    hi: float
    p: float
    n_items: str  # "24" (paired, target) or "12 vs 9" (unpaired)
    p_holm: float = float("nan")

    @property
    def excludes_zero(self) -> bool:
        return bool(self.lo > 0 or self.hi < 0)

    def supported(self, alpha: float = 1 - CONFIDENCE) -> bool:
        """A finding: the interval excludes no difference and the Holm-adjusted p is below alpha."""
        return self.excludes_zero and self.p_holm < alpha


#: Whether p-values are computed (`estimates_only` turns them off for a block).
_WITH_P: ContextVar[bool] = ContextVar("with_p", default=True)


@contextmanager
def estimates_only():
    """Within the block, comparisons give their estimate and interval but no p (NaN): for
    the controls' side of the descriptive rows, of which a report shows the estimate and the
    upper bound only. Permutation tests were half a weightless run's time there, and every
    interval and estimate stays what it was (each draws from its own seeded stream)."""
    token = _WITH_P.set(False)
    try:
        yield
    finally:
        _WITH_P.reset(token)


def paired_difference(name: str, first: Clustered, second: Clustered, *, seed: int,
                      resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Comparison:
    """The same items (and prompts) under two settings: `first` and `second` hold, item by
    item in the same order, the sums over the *matched* prompts of one metric."""
    if not np.array_equal(first.counts, second.counts):
        raise ValueError("a paired comparison needs the same prompts on both sides")
    diff = Clustered(first.sums - second.sums, first.counts, first.strata)
    if diff.n_items == 0:
        return Comparison(name, "paired", *([float("nan")] * 4), "0")
    interval = bootstrap_interval(diff, seed=seed, key=(name,), resamples=resamples,
                                  confidence=confidence)
    p = float("nan")  # one item: nothing to permute, not testable
    if diff.n_items > 1 and _WITH_P.get():
        p = paired_permutation_p(first.sums[:, 0], second.sums[:, 0], _item_weights(diff),
                                 rng=rng_for(seed, name, "p"),
                                 n_resamples=TEST_FACTOR * resamples,
                                 batch=max(1, CHUNK // diff.n_items))
    return Comparison(name, "paired", float(interval.estimate[0]), float(interval.lo[0]),
                      float(interval.hi[0]), p, str(diff.n_items))


def _item_weights(diff: Clustered) -> np.ndarray:
    """Each item's weight in the estimate (the mean over strata of each stratum's
    prompt-weighted mean): the paired tests' statistic is the weighted sum of differences."""
    labels = diff.stratum_labels()
    totals = {s: diff.counts[diff.strata == s].sum() for s in labels}
    return np.array([1 / (len(labels) * totals[s]) for s in diff.strata])


def unpaired_difference(name: str, first: Clustered, second: Clustered, *, seed: int,
                        resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Comparison:
    """Different items: mean over the strata both sides have of (first − second)."""
    common = [s for s in first.stratum_labels() if s in set(second.stratum_labels())]
    a, b = first.only(common), second.only(common)
    sizes = f"{a.n_items} vs {b.n_items}"
    if not common:
        return Comparison(name, "unpaired", *([float("nan")] * 4), sizes)
    estimate = float(a.estimate()[0] - b.estimate()[0])
    boot = (a.resampled(rng_for(seed, name, "first"), resamples)
            - b.resampled(rng_for(seed, name, "second"), resamples))[:, 0]
    lo, hi = percentile(boot, confidence)
    p = (permutation_p(a, b, rng=rng_for(seed, name, "p"), resamples=TEST_FACTOR * resamples)
         if _WITH_P.get() else float("nan"))
    return Comparison(name, "unpaired", estimate, float(lo), float(hi), p, sizes)


def permutation_p(a: Clustered, b: Clustered, *, rng: np.random.Generator,
                  resamples: int = RESAMPLES) -> float:
    """Two-sided p of (a − b) with the item labels permuted (within strata, if several)."""
    from scipy.stats import permutation_test

    sums = np.concatenate([a.sums[:, 0], b.sums[:, 0]])
    counts = np.concatenate([a.counts, b.counts])
    strata = np.concatenate([a.strata, b.strata])
    if len(a.stratum_labels()) == 1:
        if min(a.n_items, b.n_items) < 2:
            return float("nan")  # scipy needs two items a side; too few to test anyway
        def statistic(x, y, axis=-1):
            # x, y: item indices into sums/counts (permuted between the sides by scipy)
            return (sums[x].sum(axis) / counts[x].sum(axis)
                    - sums[y].sum(axis) / counts[y].sum(axis))

        result = permutation_test((np.arange(a.n_items), np.arange(a.n_items, counts.size)),
                                  statistic, vectorized=True, n_resamples=resamples,
                                  batch=max(1, CHUNK // counts.size),
                                  permutation_type="independent", random_state=rng)
        return float(result.pvalue)
    return stratified_permutation_p(sums, counts, strata, np.arange(counts.size) < a.n_items,
                                    rng=rng, resamples=resamples)


def stratified_permutation_p(sums: np.ndarray, counts: np.ndarray, strata: np.ndarray,
                             first: np.ndarray, *, rng: np.random.Generator,
                             resamples: int = RESAMPLES) -> float:
    """The label permutation test with labels shuffled only within each stratum: the
    statistic is the mean over strata of (first's mean − second's mean)."""
    labels = sorted(set(strata.tolist()), key=str)
    observed, null = 0.0, np.zeros(resamples)
    for s in labels:
        m = strata == s
        x, c, is_first = sums[m], counts[m], first[m]
        observed += _split_diff(x, c, is_first[None, :])[0]
        null += np.concatenate([_split_diff(x, c, rng.permuted(np.tile(is_first, (size, 1)), axis=1))
                                for size in chunks(resamples, is_first.size)])
    observed, null = observed / len(labels), null / len(labels)
    hits = np.count_nonzero(np.abs(null) >= abs(observed) - 1e-12)
    return float((hits + 1) / (resamples + 1))


def _split_diff(x: np.ndarray, c: np.ndarray, is_first: np.ndarray) -> np.ndarray:
    return ((is_first * x).sum(1) / (is_first * c).sum(1)
            - (~is_first * x).sum(1) / (~is_first * c).sum(1))


def against_target(name: str, sample: Clustered, target: float, *, seed: int,
                   resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Comparison:
    """value − target, its interval, and the bootstrap p-value of the target."""
    if sample.n_items == 0:
        return Comparison(name, "target", *([float("nan")] * 4), "0")
    lo, hi = percentile(sample.resampled(rng_for(seed, name), resamples)[:, 0], confidence)
    boot = sample.resampled(rng_for(seed, name, "p"), TEST_FACTOR * resamples)[:, 0]
    below = (np.count_nonzero(boot <= target) + 1) / (boot.size + 1)
    above = (np.count_nonzero(boot >= target) + 1) / (boot.size + 1)
    return Comparison(name, "target", float(sample.estimate()[0] - target), float(lo - target),
                      float(hi - target), float(min(1.0, 2 * min(below, above))),
                      str(sample.n_items))


def one_sided(name: str, first: Clustered, second: Clustered, *, seed: int,
              crossed: Crossed | None = None, resamples: int = RESAMPLES,
              alpha: float = 1 - CONFIDENCE) -> Comparison:
    """first − second on the same prompts (a model − a control), tested one-sided in the
    declared direction first > second: the returned `lo` is the one-sided (1 − alpha) lower
    bound (`hi` the matching upper bound: together the two-sided 1 − 2·alpha interval) and `p`
    the one-sided p-value, so ``p < alpha`` and ``lo > 0`` say the same thing up to
    resampling noise.

    `first` and `second` hold, item by item in one order, the sums over the matched prompts.
    With one pseudoword draw (`crossed` None) the interval is the item bootstrap of the per-item
    differences (BCa, stratified as a cell is) and p the paired sign-flip permutation test
    (scipy's ``permutation_test``, the two sides swapped within items; `sign_flip`): exact under
    "model and control are exchangeable within an item", with no assumption on the
    differences' distribution, which at the ceiling (many prompts at MRR 1 on both sides) is
    far from normal. With several pairs (`crossed`: the per-prompt differences in an items ×
    pairs table) a pair is shared by every item, so flipping items alone would take the draw
    of pairs as fixed; there the bound is the estimate − t × the crossed-effects standard
    error (`stats.Crossed.variance`, as a cell's interval) and p the t-test that bound
    inverts."""
    from scipy.stats import t as student

    if not np.array_equal(first.counts, second.counts):
        raise ValueError("a paired comparison needs the same prompts on both sides")
    diff = Clustered(first.sums - second.sums, first.counts, first.strata)
    if diff.n_items == 0:
        return Comparison(name, "one-sided", *([float("nan")] * 4), "0")
    estimate = float(diff.estimate()[0])
    if crossed is not None and crossed.n_items > 1 and crossed.n_pairs > 1:
        var, df = crossed.variance()
        se = float(np.sqrt(var[0]))
        if se > 0:
            half = float(student.ppf(1 - alpha, df[0])) * se
            p = float(student.sf(estimate / se, df[0]))
            return Comparison(name, "one-sided", estimate, estimate - half, estimate + half, p,
                              str(diff.n_items))
    interval = bootstrap_interval(diff, seed=seed, key=(name, "one-sided"),
                                  resamples=resamples, confidence=1 - 2 * alpha)
    p = float("nan")  # one item: nothing to permute, not testable
    if diff.n_items > 1:
        p = paired_permutation_p(first.sums[:, 0], second.sums[:, 0], _item_weights(diff),
                                 rng=rng_for(seed, name, "one-sided p"),
                                 n_resamples=TEST_FACTOR * resamples,
                                 batch=max(1, CHUNK // diff.n_items), alternative="greater")
    return Comparison(name, "one-sided", estimate, float(interval.lo[0]),
                      float(interval.hi[0]), p, str(diff.n_items))


def beyond_every(tests: Mapping[str, Comparison], alpha: float = 1 - CONFIDENCE
                 ) -> tuple[float, list[str]]:
    """The intersection–union test of "the model is above every control": each of `tests`
    (control → model − control, `one_sided`) must reject on its own, so the row's p is the
    largest of theirs and no correction across the controls is due (Berger 1982: the
    intersection of the alternatives is rejected at alpha when every component test is at
    alpha; adjusting would only lose power). → (that p, the controls that stop the claim:
    those whose lower bound is not above 0 or whose p is not below alpha). No control, or a
    control with no matched prompt, gives NaN: nothing to read the row against is no claim."""
    if not tests:
        return float("nan"), []
    ps = [c.p for c in tests.values()]
    if any(not math.isfinite(p) for p in ps):
        return float("nan"), [n for n, c in tests.items() if not math.isfinite(c.p)]
    stopping = [n for n, c in tests.items() if not (c.lo > 0 and c.p < alpha)]
    return float(max(ps)), stopping


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment (NaN p-values stay NaN and do not count)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = (len(order) - np.arange(len(order))) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def adjust(comparisons: list[Comparison]) -> list[Comparison]:
    """Set every comparison's Holm-adjusted p (the family: one report's comparisons)."""
    for c, p in zip(comparisons, holm([c.p for c in comparisons])):
        c.p_holm = float(p)
    return comparisons
