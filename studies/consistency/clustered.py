"""Intervals and tests over clusters of derivations that share a statement.

Derivations are not independent: "Presenter implies participant" is a premise of every rdfs7
derivation through that subproperty, and a model that misreads it misreads all of them. So
the unit of resampling is a **cluster**: a connected component of the graph linking each
derivation to its statements (its premises, its conclusion and its matched control's
premises, `studies.consistency.controls`), built with networkx. Two derivations that share
no statement directly but each share one with a third are one cluster.

Every number here is a function of per-cluster column sums (numerators and denominators of
ratios), so a resample is a draw of clusters with replacement and its estimate is the
statistic of the summed columns; the interval is BCa (`studies.stats.bca`, its jackknife
leaving out one cluster). Tests are permutation tests that keep clusters whole:

* `sign_flip_p` (paired contrasts: the model against its prior on the same derivations, the
  entailing premises against the control premises of the same derivations): each cluster's
  two arms are swapped together or not, which is exact under the null that the arms are
  exchangeable;
* `within_p` (the unpaired contrast "both premises believed" against "not both"): the labels
  are permuted within each cluster (and rule), never across, so a cluster whose conclusions
  are easy cannot lend its ease to the other side.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

import numpy as np

from kgprobe.studies.stats import RESAMPLES, TEST_FACTOR, bca, chunks, rng_for

Statistic = Callable[[np.ndarray], np.ndarray]  # (draws, columns) sums → (draws,) estimates
NAN3 = (float("nan"), float("nan"), float("nan"))


def statement_clusters(statements: Sequence[Iterable[Hashable]]) -> list[int]:
    """Each derivation's cluster: the connected components of derivations linked by a shared
    statement (`statements[i]`: derivation i's statement keys), numbered in order of first
    appearance so the same derivations give the same numbers."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(("d", i) for i in range(len(statements)))
    for i, keys in enumerate(statements):
        graph.add_edges_from((("d", i), ("s", key)) for key in keys)
    of: dict[int, int] = {}
    components = sorted((sorted(i for kind, i in c if kind == "d")
                         for c in nx.connected_components(graph)), key=lambda c: c[0] if c else -1)
    for number, members in enumerate(m for m in components if m):
        for i in members:
            of[i] = number
    return [of[i] for i in range(len(statements))]


def cluster_sums(values: np.ndarray, clusters: Sequence[Hashable]) -> np.ndarray:
    """(clusters, columns): the column sums of each cluster's derivations."""
    values = np.asarray(values, dtype=np.float64).reshape(len(clusters), -1)
    order: dict[Hashable, int] = {}
    index = np.array([order.setdefault(c, len(order)) for c in clusters], dtype=np.int64)
    sums = np.zeros((len(order), values.shape[1]))
    np.add.at(sums, index, values)
    return sums


def ratio(num: int, den: int) -> Statistic:
    """The statistic sum(column num) / sum(column den)."""
    def statistic(total: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return total[:, num] / total[:, den]
    return statistic


def cluster_interval(sums: np.ndarray, statistic: Statistic, *, seed: int, key: Sequence = (),
                     resamples: int = RESAMPLES,
                     support: Sequence[int] = ()) -> tuple[float, float, float]:
    """(estimate, lo, hi): the 95 % BCa interval of `statistic`, clusters resampled.
    `support`: the denominator columns; where one of them comes from fewer than two clusters
    the estimate has no interval (one cluster has no spread to resample: every resample that
    holds it gives the same ratio, an interval of width 0 that would look sure)."""
    if len(sums) == 0:
        return NAN3
    total = sums.sum(0)
    estimate = float(statistic(total[None])[0])
    if not np.isfinite(estimate):
        return NAN3
    if any(np.count_nonzero(sums[:, c]) < 2 for c in support):
        return estimate, float("nan"), float("nan")
    rng = rng_for(seed, "clusters", *key)
    parts = []
    for size in chunks(resamples, len(sums) * sums.shape[1]):
        idx = rng.integers(0, len(sums), size=(size, len(sums)))
        parts.append(statistic(sums[idx].sum(1)))
    boot = np.concatenate(parts)
    boot = boot[np.isfinite(boot)]
    if boot.size < resamples // 2:  # most resamples leave the ratio undefined: no interval
        return estimate, float("nan"), float("nan")
    jackknife = statistic(total[None] - sums)
    lo, hi = bca(boot[:, None], np.array([estimate]), jackknife[:, None])
    return estimate, float(lo[0]), float(hi[0])


def _p(observed: float, draws: np.ndarray) -> float:
    draws = draws[np.isfinite(draws)]
    if not np.isfinite(observed) or draws.size == 0:
        return float("nan")
    extreme = np.count_nonzero(np.abs(draws) >= abs(observed) - 1e-12)
    return float((extreme + 1) / (draws.size + 1))


def sign_flip_p(first: np.ndarray, second: np.ndarray, statistic: Callable, *, seed: int,
                key: Sequence = (), draws: int = RESAMPLES * TEST_FACTOR) -> float:
    """Two-sided p of `statistic(first_sums, second_sums)` (a difference, 0 under the null)
    when each cluster's two arms (rows of `first`, `second`: the same clusters, the same
    columns) are swapped at random, clusters whole."""
    if len(first) == 0:
        return float("nan")
    observed = float(statistic(first.sum(0)[None], second.sum(0)[None])[0])
    rng = rng_for(seed, "sign-flip", *key)
    out = []
    for size in chunks(draws, len(first)):
        swap = rng.integers(0, 2, size=(size, len(first))).astype(np.float64)
        a = (1 - swap) @ first + swap @ second
        b = swap @ first + (1 - swap) @ second
        out.append(statistic(a, b))
    return _p(observed, np.concatenate(out))


def within_p(labels: np.ndarray, values: np.ndarray, groups: Sequence[Hashable],
             statistic: Callable, *, seed: int, key: Sequence = (),
             draws: int = RESAMPLES * TEST_FACTOR) -> float:
    """Two-sided p of `statistic(labels, values)` ((draws, n) 0/1 labels and the values →
    (draws,)) with the labels permuted within each group (a cluster × rule), never across."""
    labels = np.asarray(labels, dtype=np.float64)
    if labels.size == 0:
        return float("nan")
    observed = float(statistic(labels[None], values)[0])
    rng = rng_for(seed, "within", *key)
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    movable = [np.array(m) for m in members.values()
               if len(m) > 1 and 0 < labels[m].sum() < len(m)]
    out = []
    for size in chunks(draws, labels.size):
        shuffled = np.tile(labels, (size, 1))
        for m in movable:
            shuffled[:, m] = rng.permuted(shuffled[:, m], axis=1)
        out.append(statistic(shuffled, values))
    return _p(observed, np.concatenate(out))
