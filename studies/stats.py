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


# ------------------------------------------------------------------ items × pseudoword pairs


@dataclass
class Crossed:
    """Prompt values in an items × pairs table: two crossed random factors.

    The premise-ablation study draws one global set of pseudoword pairs and gives pair j to
    every item, so a cell's prompts share their *pair* as well as their item: a pair that happens
    to be easy lifts every item at once. Resampling items alone treats the draw of pairs as fixed
    and under-covers (see `two_way_interval`). `sums[i, j]` is the sum of item i's prompt values
    under pair j (one column per metric), `counts[i, j]` their number (0: the item is not in the
    cell under that pair — a known premise can depend on the pair).
    """

    sums: np.ndarray  # (items, pairs, metrics)
    counts: np.ndarray  # (items, pairs)
    strata: np.ndarray  # (items,) stratum labels

    @classmethod
    def from_prompts(cls, items: Sequence[Hashable], pairs: Sequence[Hashable], values,
                     strata: Sequence[Hashable] | None = None) -> "Crossed":
        """One row of `values` per prompt; `items[k]`, `pairs[k]` name prompt k's item and pair."""
        values = np.asarray(values, dtype=np.float64).reshape(len(items), -1)
        rows: dict[Hashable, int] = {}
        cols: dict[Hashable, int] = {}
        i = np.array([rows.setdefault(item, len(rows)) for item in items], dtype=np.int64)
        j = np.array([cols.setdefault(pair, len(cols)) for pair in pairs], dtype=np.int64)
        sums = np.zeros((len(rows), len(cols), values.shape[1]))
        np.add.at(sums, (i, j), values)
        counts = np.zeros((len(rows), len(cols)))
        np.add.at(counts, (i, j), 1.0)
        labels = np.zeros(len(rows), dtype=object)
        for k in range(len(items)):
            labels[i[k]] = "" if strata is None else strata[k]
        return cls(sums, counts, labels)

    @property
    def n_items(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_pairs(self) -> int:
        return int(self.counts.shape[1])

    def clustered(self) -> Clustered:
        """The same prompts clustered by item only (the one-way bootstrap's view)."""
        return Clustered(self.sums.sum(1), self.counts.sum(1), self.strata)

    def variance(self) -> tuple[np.ndarray, np.ndarray]:
        """The estimate's variance under crossed item and pair effects, and its degrees of freedom.

        The two-way ANOVA estimator (generalizability theory's, Brennan 2001) applied to the
        estimate's linearization u (each cell's share of the deviation of the prompt-weighted
        mean; missing cells are 0): V = A + B − C, where A is the variance of resampling items
        (within strata), B of resampling pairs, C of the item × pair interaction, each made
        unbiased by its n/(n − 1) factors. A and B are exactly what resampling items alone or
        pairs alone would measure; resampling both at once (Owen's pigeonhole bootstrap)
        measures about A + B + C, counting the interaction twice (conservative in variance).
        V is floored at max(A, B), each of which estimates less than the
        whole; Satterthwaite's formula gives its degrees of freedom.
        """
        labels = sorted(set(self.strata.tolist()), key=str)
        pairs = self.n_pairs
        u = np.zeros_like(self.sums)
        for s in labels:
            m = self.strata == s
            total, count = self.sums[m].sum((0, 1)), self.counts[m].sum()
            u[m] = (self.sums[m] - total / count * self.counts[m][..., None]) / (len(labels) * count)
        columns = u.sum(0)
        b = pairs / (pairs - 1) * ((columns - columns.mean(0)) ** 2).sum(0)
        a = np.zeros(u.shape[2])
        c = np.zeros(u.shape[2])
        df_items = 0
        for s in labels:
            block = u[self.strata == s]
            n = block.shape[0]
            if n < 2:
                continue
            rows = block.sum(1)
            a += n / (n - 1) * ((rows - rows.mean(0)) ** 2).sum(0)
            inter = block - block.mean(0) - block.mean(1, keepdims=True) + block.mean((0, 1))
            c += n / (n - 1) * pairs / (pairs - 1) * (inter ** 2).sum((0, 1))
            df_items += n - 1
        var = np.maximum(a + b - c, np.maximum(a, b))
        parts = (a ** 2 / max(df_items, 1) + b ** 2 / (pairs - 1)
                 + c ** 2 / max(df_items * (pairs - 1), 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(parts > 0, var ** 2 / parts, np.inf)
        return var, np.clip(df, 1, max(df_items, 1) * pairs)


def two_way_interval(sample: Crossed, confidence: float = CONFIDENCE) -> Interval:
    """The estimate ± Student's t × the crossed-effects standard error (`Crossed.variance`).

    Chosen over resampling because its coverage holds where bootstraps' cannot: with 5 pairs
    the pair variance has 4 degrees of freedom, and any percentile interval (one-way, pigeonhole
    or product) uses the normal's 1.96 where t(4)'s 2.78 is due. Simulated coverage of 95 %
    intervals, 40 items × 5 pairs (bench/two_way_coverage.py, docs/premise-ablation.md): 93.6–95.1 %
    across item-, pair- and interaction-dominated mixes with empty cells, where the one-way item
    bootstrap gives 29–79 % once pairs matter and the pigeonhole bootstrap 85 % with a strong
    pair effect. Needs two items and two pairs; with one pair the
    draw cannot be resampled (the caller falls back to the one-way interval, conditional on it).
    """
    from scipy.stats import t

    flat = sample.clustered()
    if sample.n_items == 0:
        nan = np.full(sample.sums.shape[2], np.nan)
        return Interval(nan, nan, nan, 0, 0)
    estimate = flat.estimate()
    var, df = sample.variance()
    half = t.ppf(0.5 + confidence / 2, df) * np.sqrt(var)
    return Interval(estimate, estimate - half, estimate + half, flat.n_items, flat.n_prompts)


def pigeonhole_interval(sample: Crossed, *, seed: int, key: Sequence = (),
                        resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Interval:
    """Owen's (2007) pigeonhole bootstrap: items (within strata) and pairs resampled
    independently, percentile interval. Kept to measure against (bench/two_way_coverage.py):
    it counts the interaction twice and still uses normal quantiles."""
    rng = rng_for(seed, *key)
    flat = sample.clustered()
    labels = flat.stratum_labels()
    pair_w = rng.multinomial(sample.n_pairs, np.full(sample.n_pairs, 1 / sample.n_pairs),
                             size=resamples).astype(np.float64)
    total = 0.0
    for s in labels:
        m = sample.strata == s
        n = int(m.sum())
        item_w = rng.multinomial(n, np.full(n, 1 / n), size=resamples).astype(np.float64)
        num = np.einsum("bi,ijk,bj->bk", item_w, sample.sums[m], pair_w)
        den = np.einsum("bi,ij,bj->b", item_w, sample.counts[m], pair_w)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = total + num / den[:, None]
    boot = total / len(labels)
    boot = boot[np.isfinite(boot).all(1)]
    lo, hi = percentile(boot, confidence)
    return Interval(flat.estimate(), lo, hi, flat.n_items, flat.n_prompts)
