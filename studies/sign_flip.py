"""The paired permutation test of `comparisons`, vectorized: scipy's p-values, bit for bit.

A claim rests on paired sign-flip tests (model − control, the two sides swapped within items,
``scipy.stats.permutation_test(permutation_type="samples")``). scipy draws its swaps as one
vectorized array but then gathers each item's permuted pair in a Python loop over the items
and restacks them, and shuffles each pair with its own call into the generator: 0.07–0.4 s a
test of 20,000 resamples, most of a weightless run's report. `paired_permutation_p` does the
same arithmetic on one (items × resamples) array of signed terms per batch, 4–11× faster
(`python bench/sign_flip.py`):

* the same swaps from the same generator: where scipy samples (``n_resamples`` below
  ``2**n``), ``Generator.permuted`` over length-2 rows draws one 32-bit word per row and swaps
  the pair when its lowest bit is 0 (numpy's Fisher–Yates with ``random_interval(1)``), so
  ``rng.integers(0, 2**32, uint32)`` over the same ``(batch, n)`` shape gives the same swaps
  and leaves the generator in the same state; where scipy enumerates all ``2**n`` swaps
  (exact test), every pattern, in its order;
* the same batches (a full batch drawn, the last one cut) and the same sum over the items,
  so every null value is the same float;
* the same comparison with scipy's relative tolerance, the same +1 for sampled nulls.

`tests/test_sign_flip.py` checks the p-values equal scipy's exactly over sizes, ties, batch
sizes and each alternative; a scipy upgrade that changes its sampling fails it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["paired_permutation_p"]


def paired_permutation_p(first: np.ndarray, second: np.ndarray, weights: np.ndarray, *,
                         rng: np.random.Generator, n_resamples: int, batch: int,
                         alternative: str = "two-sided") -> float:
    """``scipy.stats.permutation_test((first, second), statistic, vectorized=True,
    permutation_type="samples", n_resamples=n_resamples, batch=batch,
    alternative=alternative, random_state=rng).pvalue`` for two 1-D samples of n ≥ 2 items
    and the weighted difference ``statistic(x, y) = ((x − y) · weights).sum()``.

    A swap negates an item's term exactly (``y − x = −(x − y)`` in floating point), and scipy's
    statistic sums the terms item by item over a strided axis (a sequential sum per resample,
    not numpy's pairwise one), so summing the signed terms over the items' axis of a
    (items, resamples) array gives each null value as the same float."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    weights = np.asarray(weights, dtype=float)
    n = first.size
    if n < 2 or second.size != n or weights.size != n:
        raise ValueError("a paired permutation test needs two samples (and weights) of the "
                         "same n >= 2 items")
    terms = (first - second) * weights
    observed = terms.sum(axis=-1)
    column = terms[:, None]
    exact = n_resamples >= 2 ** n
    null = np.concatenate([np.where(swaps.T, -column, column).sum(axis=0)
                           for swaps in (_every_swap(n, batch) if exact
                                         else _drawn_swaps(rng, n, n_resamples, batch))])
    adjustment = 0 if exact else 1
    gamma = np.abs(np.finfo(observed.dtype).eps * 100 * observed)

    def share(hits: np.ndarray) -> float:
        return (np.count_nonzero(hits) + adjustment) / (null.size + adjustment)

    if alternative == "greater":
        p = share(null >= observed - gamma)
    elif alternative == "less":
        p = share(null <= observed + gamma)
    elif alternative == "two-sided":
        p = min(share(null <= observed + gamma), share(null >= observed - gamma)) * 2
    else:
        raise ValueError(f"alternative {alternative!r}: give two-sided, greater or less")
    return float(np.clip(p, 0.0, 1.0))


def _drawn_swaps(rng: np.random.Generator, n: int, n_resamples: int, batch: int):
    """scipy's sampled swaps, batch by batch: (resamples, n), True where item i is swapped."""
    batch = min(batch, n_resamples)
    for start in range(0, n_resamples, batch):
        words = rng.integers(0, 2 ** 32, size=(batch, n), dtype=np.uint32)
        yield (words[: min(batch, n_resamples - start)] & 1) == 0


def _every_swap(n: int, batch: int):
    """All 2**n swap patterns in itertools.product's order (the first item varies slowest)."""
    codes = np.arange(2 ** n)
    shifts = np.arange(n - 1, -1, -1)
    for start in range(0, codes.size, batch):
        yield ((codes[start:start + batch, None] >> shifts) & 1).astype(bool)
