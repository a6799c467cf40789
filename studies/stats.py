"""Uncertainty of a study's numbers: item-level bootstrap intervals, comparisons, Holm.

A study's cell averages *prompts*, but prompts are not independent: the prompts of one item
(its pseudoword pairs, its templates) share the item. So every interval here resamples
**items** and keeps each item's prompts together (a cluster bootstrap): an item enters a
resample with the sum of its prompt values and its prompt count, and a resample's estimate is
sum / count — the same prompt-weighted mean the cell reports, so the interval brackets exactly
the number in the table.

A summary over strata (the premise-ablation study's rule-averaged cell) is the plain mean of
the strata's estimates; its bootstrap resamples items *within* each stratum, so every
resample keeps each rule's weight.

Intervals are BCa intervals from ``RESAMPLES`` seeded resamples (plain numpy resampling,
vectorized; a jackknife over items for the acceleration); the same seed gives the same interval, so a resumed run rebuilds
identical intervals from the observations on disk. Comparisons:

* **paired** (the same items under two settings): the per-item differences, bootstrapped as
  above; p from ``scipy.stats.permutation_test`` swapping the two settings within items;
* **unpaired** (different items): each side bootstrapped on its own; p from a permutation
  test of the item labels — ``scipy.stats.permutation_test`` for one stratum, the same test
  with labels permuted within each stratum (which scipy cannot do) for a summary;
* **against a target** (both premises written vs a perfect 100): the bootstrap p-value of the
  target, the test the percentile interval inverts.

`holm` adjusts a report's p-values together. scipy is imported inside the functions that use
it (this module is reachable from the command line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Iterable, Sequence

import numpy as np
from kgprobe.studies.metrics import stable_seed

RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_ITEMS = 10  # cells with fewer items are shown but flagged
#: Tests draw this many times more permutations than an interval draws resamples: a p-value
#: cannot go below 1 / draws, and Holm multiplies the smallest by the number of comparisons
#: (about 70 in a premise-ablation report), so 2,000 draws could never reach 0.05.
TEST_FACTOR = 10


@dataclass
class Clustered:
    """Prompt-level values grouped by item; items grouped by stratum (one stratum by default).

    `sums[i]` is the sum of item i's prompt values (one column per metric), `counts[i]` its
    number of prompts, `strata[i]` the stratum it belongs to.
    """

    sums: np.ndarray  # (items, metrics)
    counts: np.ndarray  # (items,)
    strata: np.ndarray  # (items,) stratum labels

    @classmethod
    def from_prompts(cls, items: Sequence[Hashable], values, strata: Sequence[Hashable] | None = None,
                     ) -> "Clustered":
        """One row of `values` (a metric per column) per prompt; `items[k]` names prompt k's item."""
        values = np.asarray(values, dtype=np.float64)
        if not len(items):
            width = values.shape[1] if values.ndim == 2 else 1
            return cls(np.zeros((0, width)), np.zeros(0), np.zeros(0, dtype=object))
        values = values.reshape(len(items), -1)
        order: dict[Hashable, int] = {}
        index = np.array([order.setdefault(item, len(order)) for item in items], dtype=np.int64)
        sums = np.zeros((len(order), values.shape[1]))
        np.add.at(sums, index, values)
        counts = np.bincount(index, minlength=len(order)).astype(np.float64)
        labels = np.zeros(len(order), dtype=object)
        for k, item in enumerate(items):
            labels[index[k]] = "" if strata is None else strata[k]
        return cls(sums, counts, labels)

    @property
    def n_items(self) -> int:
        return int(self.counts.size)

    @property
    def n_prompts(self) -> int:
        return int(self.counts.sum())

    def stratum_labels(self) -> list:
        return sorted(set(self.strata.tolist()), key=str)

    def only(self, labels: Sequence) -> "Clustered":
        keep = np.isin(self.strata, list(labels))
        return Clustered(self.sums[keep], self.counts[keep], self.strata[keep])

    def estimate(self) -> np.ndarray:
        """Mean over strata of each stratum's prompt-weighted mean."""
        parts = [self.sums[self.strata == s].sum(0) / self.counts[self.strata == s].sum()
                 for s in self.stratum_labels()]
        return np.mean(parts, axis=0)

    def jackknife(self) -> np.ndarray:
        """(items, metrics) estimates with one item left out (NaN where that empties a stratum)."""
        labels = self.stratum_labels()
        parts = {s: (self.sums[self.strata == s].sum(0), self.counts[self.strata == s].sum())
                 for s in labels}
        whole = {s: total / count for s, (total, count) in parts.items()}
        out = np.full(self.sums.shape, np.nan)
        for i, s in enumerate(self.strata):
            total, count = parts[s]
            if count - self.counts[i] > 0:
                rest = sum(whole[t] for t in labels if t != s)
                out[i] = (rest + (total - self.sums[i]) / (count - self.counts[i])) / len(labels)
        return out

    def resampled(self, rng: np.random.Generator, resamples: int) -> np.ndarray:
        """(resamples, metrics) estimates, items resampled with replacement within strata."""
        total = 0.0
        labels = self.stratum_labels()
        for s in labels:
            sums, counts = self.sums[self.strata == s], self.counts[self.strata == s]
            idx = rng.integers(0, counts.size, size=(resamples, counts.size))
            total = total + sums[idx].sum(1) / counts[idx].sum(1)[:, None]
        return total / len(labels)


@dataclass
class Interval:
    """A cell's estimate with its bootstrap interval (one entry per metric)."""

    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_items: int
    n_prompts: int


def rng_for(seed: int, *key: object) -> np.random.Generator:
    """A generator that depends only on (seed, key), not on what else was computed first."""
    return np.random.default_rng(stable_seed("stats", seed, *key))


def percentile(boot: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(boot, [tail, 100 - tail], axis=0)
    return lo, hi


def bca(boot: np.ndarray, estimate: np.ndarray, jackknife: np.ndarray,
        confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected and accelerated percentiles (Efron 1987, as scipy.stats.bootstrap's
    default method, which cannot keep resamples within strata): the plain percentile interval
    under-covers with few, skewed items (92–93 % at 50 items); BCa corrects for the
    bootstrap distribution's median bias and skew. Falls back to plain percentiles where a
    metric's bootstrap distribution is degenerate."""
    from scipy.special import ndtr, ndtri

    lo, hi = percentile(boot, confidence)
    tail = (1 - confidence) / 2
    for k in range(boot.shape[1]):
        column, jk = boot[:, k], jackknife[:, k][np.isfinite(jackknife[:, k])]
        if jk.size < 2:
            continue
        share = (np.count_nonzero(column < estimate[k])
                 + np.count_nonzero(column <= estimate[k])) / (2 * column.size)
        spread = jk.mean() - jk
        denominator = 6 * (spread ** 2).sum() ** 1.5
        if not 0 < share < 1 or denominator == 0:
            continue
        z0, accel = ndtri(share), (spread ** 3).sum() / denominator
        levels = []
        for z in (ndtri(tail), ndtri(1 - tail)):
            levels.append(ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z))))
        lo[k], hi[k] = np.percentile(column, [100 * levels[0], 100 * levels[1]])
    return lo, hi


def bootstrap_interval(sample: Clustered, *, seed: int, key: Sequence = (),
                       resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Interval:
    """The item-level (stratified, if `sample` has strata) BCa bootstrap interval."""
    if sample.n_items == 0:
        nan = np.full(sample.sums.shape[1], np.nan)
        return Interval(nan, nan, nan, 0, 0)
    boot = sample.resampled(rng_for(seed, *key), resamples)
    estimate = sample.estimate()
    lo, hi = bca(boot, estimate, sample.jackknife(), confidence)
    return Interval(estimate, lo, hi, sample.n_items, sample.n_prompts)


def mean_interval(values: Sequence[float], *, seed: int, key: Sequence = (),
                  resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Interval:
    """One value per item (accuracy, reciprocal rank, average precision): its mean's interval."""
    values = list(values)
    return bootstrap_interval(Clustered.from_prompts(range(len(values)), values), seed=seed,
                              key=key, resamples=resamples, confidence=confidence)


def format_interval(estimate: float, lo: float, hi: float, scale: float = 100.0,
                    digits: int = 1) -> str:
    """``63.0 [51.2, 74.4]``; empty estimates read "empty"."""
    if estimate is None or not np.isfinite(estimate):
        return "empty"
    return f"{scale * estimate:.{digits}f} [{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]"


def read_predictions(out: Path) -> list[dict]:
    """``OUT/predictions.jsonl`` (every study writes one line per scored item), or nothing."""
    path = Path(out) / "predictions.jsonl"
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def grouped_intervals(records: Iterable[dict], group: Callable[[dict], Hashable | None],
                      value: Callable[[dict], float | None], *, seed: int = 0,
                      resamples: int = RESAMPLES) -> dict[Hashable, Interval]:
    """The interval of each group's mean, one observation per record (an item): how the
    memorization, multiple-choice, COPEN and STA reports put intervals on their headline
    numbers. Records whose group or value is None are left out."""
    values: dict[Hashable, list[float]] = {}
    for record in records:
        key, v = group(record), value(record)
        if key is not None and v is not None:
            values.setdefault(key, []).append(float(v))
    return {key: mean_interval(vs, seed=seed, key=(str(key),), resamples=resamples)
            for key, vs in values.items()}


def interval_text(interval: Interval | None, scale: float = 100.0, digits: int = 1) -> str:
    """``[51.2, 74.4]`` (n = items) for a report cell; empty when there is no interval."""
    if interval is None or interval.n_items == 0:
        return ""
    return (f"[{scale * interval.lo[0]:.{digits}f}, {scale * interval.hi[0]:.{digits}f}]")


# ------------------------------------------------------------------ comparisons


@dataclass
class Comparison:
    """A difference (first − second, or value − target) with its interval and p-value."""

    name: str
    kind: str  # "paired" | "unpaired" | "target"
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
        perms = rng.permuted(np.tile(is_first, (resamples, 1)), axis=1)
        null += _split_diff(x, c, perms)
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
