"""Comparisons between a study's cells, on the item-level resampling of `studies/stats.py`.

* **paired** (the same items under two settings): the per-item differences, bootstrapped as a
  cell is; p from ``scipy.stats.permutation_test`` swapping the two settings within items;
* **unpaired** (different items): each side bootstrapped on its own; p from a permutation
  test of the item labels — ``scipy.stats.permutation_test`` for one stratum, the same test
  with labels permuted within each stratum (which scipy cannot do) for a summary;
* **against a target** (both premises written vs a perfect 100): the bootstrap p-value of the
  target, the test the percentile interval inverts.

`holm` adjusts a report's p-values together; `Comparison.supported` is the report's rule for
stating a finding, `claimed` its rule for claiming one against the controls. scipy is
imported inside the functions that use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from kgprobe.studies.stats import (
    CHUNK,
    CONFIDENCE,
    RESAMPLES,
    TEST_FACTOR,
    Clustered,
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


def paired_difference(name: str, first: Clustered, second: Clustered, *, seed: int,
                      resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Comparison:
    """The same items (and prompts) under two settings: `first` and `second` hold, item by
    item in the same order, the sums over the *matched* prompts of one metric."""
    from scipy.stats import permutation_test

    if not np.array_equal(first.counts, second.counts):
        raise ValueError("a paired comparison needs the same prompts on both sides")
    diff = Clustered(first.sums - second.sums, first.counts, first.strata)
    if diff.n_items == 0:
        return Comparison(name, "paired", *([float("nan")] * 4), "0")
    interval = bootstrap_interval(diff, seed=seed, key=(name,), resamples=resamples,
                                  confidence=confidence)
    labels = diff.stratum_labels()
    totals = {s: diff.counts[diff.strata == s].sum() for s in labels}
    weights = np.array([1 / (len(labels) * totals[s]) for s in diff.strata])

    def statistic(x, y, axis=-1):
        return ((x - y) * weights).sum(axis=axis)

    p = float("nan")  # one item: nothing to permute, not testable
    if diff.n_items > 1:
        p = float(permutation_test((first.sums[:, 0], second.sums[:, 0]), statistic,
                                   vectorized=True, permutation_type="samples",
                                   n_resamples=TEST_FACTOR * resamples,
                                   batch=max(1, CHUNK // diff.n_items),
                                   random_state=rng_for(seed, name, "p"),
                                   ).pvalue)
    return Comparison(name, "paired", float(interval.estimate[0]), float(interval.lo[0]),
                      float(interval.hi[0]), p, str(diff.n_items))


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
    p = permutation_p(a, b, rng=rng_for(seed, name, "p"), resamples=TEST_FACTOR * resamples)
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


def claimed(comparison: Comparison, control_upper: Sequence[float], *,
            control_model: bool = False, with_prior: bool = False,
            alpha: float = 1 - CONFIDENCE) -> bool:
    """Whether a comparison is a claim: `supported` (interval off 0, Holm p below alpha) and
    its estimate above every control's upper bound on the same contrast. Never with no
    control to read it against, a control whose bound is unknown, or when the model is itself
    a control (`control_model`): a model that cannot reason shows no reasoning. An unpaired
    comparison (different items on each side) also needs the model's own content-free prior
    among the controls (`with_prior`): the model may simply prefer one side's answers, which
    only its prior reproduces."""
    if control_model or not len(control_upper) or not comparison.supported(alpha):
        return False
    if comparison.test == "unpaired" and not with_prior:
        return False
    return all(math.isfinite(hi) and comparison.estimate > hi for hi in control_upper)


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
