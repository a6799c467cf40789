"""A one-sided test and an interval that stay honest with few clusters: the wild cluster bootstrap.

The consistency study's confirmatory contrast is a sum of per-cluster contributions ``a_g``
(`subject_matched`): its estimate is ``D = Σ_g a_g``. A percentile or BCa bootstrap that
resamples clusters is too narrow when there are few of them (with 6 clusters, one of which
holds most of the data, most resamples repeat it), and a cluster-robust standard error read
against a normal distribution over-rejects. So:

* **p** (one-sided, H1: D > 0) is the *restricted* wild cluster bootstrap-t (Cameron, Gelbach
  and Miller 2008; MacKinnon and Webb 2017): under H0 the fitted mean is 0, so the restricted
  residuals are the contributions themselves; each draw multiplies every cluster's
  contribution by one weight and studentizes, ``t* = Σ v_g a_g / se*``. The weights are
  Webb's six-point distribution (±√½, ±1, ±√(3/2), each 1/6): with G clusters Rademacher
  signs give only 2^G distinct draws (32 for G = 5, so p could never fall below 1/32), Webb's
  give 6^G;
* **the interval** (95 %, two-sided) is the *unrestricted* wild bootstrap-t: the centred
  contributions ``a_g − D/G`` reweighted, ``[D − q*_.975 se, D − q*_.025 se]``;
* **G** (clusters with a nonzero contribution) is reported with every result, and below
  `MIN_CLUSTERS` the contrast is **not testable**: p and the interval are left undefined
  rather than printed as if they meant something.

Written out with numpy rather than taken from a library: scipy has no wild cluster
bootstrap, and the statistic here is a ratio already linearized into cluster contributions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgprobe.studies.stats import RESAMPLES, TEST_FACTOR, chunks, rng_for

#: Fewer clusters than this: the contrast is "not testable" (no p, no interval).
MIN_CLUSTERS = 5
#: Webb's six-point weights (mean 0, variance 1).
WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])


@dataclass(frozen=True)
class WildResult:
    """A contrast's estimate with its clusters, 95 % interval and one-sided p (NaN: not
    testable, fewer than `MIN_CLUSTERS` clusters)."""

    estimate: float
    G: int
    lo: float = float("nan")
    hi: float = float("nan")
    p: float = float("nan")

    @property
    def testable(self) -> bool:
        return self.G >= MIN_CLUSTERS


def _se(scores: np.ndarray) -> np.ndarray:
    """(draws, G) contributions → their cluster-robust standard error (CR1: G / (G − 1))."""
    g = scores.shape[1]
    centred = scores - scores.mean(1, keepdims=True)
    return np.sqrt(g / (g - 1) * (centred ** 2).sum(1))


def wild_cluster_test(contributions: Sequence[float], *, seed: int, key: Sequence = (),
                      draws: int = RESAMPLES * TEST_FACTOR) -> WildResult:
    """The estimate ``Σ a_g``, its 95 % interval and the one-sided p of H1: > 0, over the
    clusters in `contributions` (one value each; clusters that contribute nothing are left
    out by the caller, since they carry no information and would inflate G)."""
    a = np.asarray(contributions, dtype=np.float64)
    estimate = float(a.sum())
    G = len(a)
    if G < MIN_CLUSTERS:
        return WildResult(estimate, G)
    se = float(_se(a[None])[0])
    if se == 0.0:  # every cluster contributes alike (0 for a model equal to its control)
        p = 1.0 if estimate <= 0 else 0.0
        return WildResult(estimate, G, estimate, estimate, p)
    t = estimate / se
    centred = a - estimate / G
    rng = rng_for(seed, "wild", *key)
    restricted, unrestricted = [], []
    for size in chunks(draws, G):
        v = WEBB[rng.integers(0, len(WEBB), size=(size, G))]
        star = v * a
        with np.errstate(divide="ignore", invalid="ignore"):
            restricted.append(star.sum(1) / _se(star))
            star = v * centred
            unrestricted.append(star.sum(1) / _se(star))
    t_null = np.concatenate(restricted)
    t_null = t_null[np.isfinite(t_null)]
    p = float((np.count_nonzero(t_null >= t - 1e-12) + 1) / (t_null.size + 1))
    t_u = np.concatenate(unrestricted)
    t_u = t_u[np.isfinite(t_u)]
    q_lo, q_hi = np.quantile(t_u, [0.025, 0.975])
    return WildResult(estimate, G, float(estimate - q_hi * se), float(estimate - q_lo * se), p)
