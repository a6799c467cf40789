"""Uncertainty of a study's numbers: item-level bootstrap intervals.

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
vectorized; a jackknife over items for the acceleration); the same seed gives the same
interval, so a resumed run rebuilds identical intervals from the observations on disk.
`grouped_intervals` puts them on the headline numbers of the other studies' reports;
`studies/comparisons.py` tests differences between cells. scipy is imported inside the
functions that use it (this module is reachable from the command line).
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


CHUNK = 1_000_000  # resampled items held in memory at once (a full run has 10^5 items a rule)


def chunks(total: int, width: int):
    """Sizes of the batches of `total` resamples of `width` items that fit in CHUNK."""
    size = max(1, CHUNK // max(1, width))
    for start in range(0, total, size):
        yield min(size, total - start)


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
        for s in labels:
            m = self.strata == s
            total, count = parts[s]
            rest = sum(whole[t] for t in labels if t != s)
            left = count - self.counts[m]
            with np.errstate(divide="ignore", invalid="ignore"):
                part = (rest + (total - self.sums[m]) / left[:, None]) / len(labels)
            part[left <= 0] = np.nan
            out[m] = part
        return out

    def resampled(self, rng: np.random.Generator, resamples: int) -> np.ndarray:
        """(resamples, metrics) estimates, items resampled with replacement within strata."""
        total = 0.0
        labels = self.stratum_labels()
        for s in labels:
            sums, counts = self.sums[self.strata == s], self.counts[self.strata == s]
            parts = []
            for size in chunks(resamples, counts.size):
                idx = rng.integers(0, counts.size, size=(size, counts.size))
                parts.append(sums[idx].sum(1) / counts[idx].sum(1)[:, None])
            total = total + np.concatenate(parts)
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
