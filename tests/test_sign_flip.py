"""`studies/sign_flip.paired_permutation_p` gives scipy's paired permutation p-values exactly:
the comparisons' p (and so every claim and Holm row) did not move when it replaced scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import permutation_test

from kgprobe.studies.sign_flip import paired_permutation_p


def weighted(weights):
    def statistic(x, y, axis=-1):
        return ((x - y) * weights).sum(axis=axis)
    return statistic


def scipy_p(first, second, statistic, *, seed, n_resamples, batch, alternative):
    return float(permutation_test((first, second), statistic, vectorized=True,
                                  permutation_type="samples", n_resamples=n_resamples,
                                  batch=batch, alternative=alternative,
                                  random_state=np.random.default_rng(seed)).pvalue)


def sample(n, rng, kind):
    """Per-item sums as a study has them: continuous, at the ceiling (many ties), or equal."""
    if kind == "ties":
        first = rng.integers(0, 3, n).astype(float)
        second = np.where(rng.random(n) < 0.6, first, rng.integers(0, 3, n)).astype(float)
    elif kind == "equal":
        first = second = rng.random(n)
    else:
        first, second = rng.random(n) * 3, rng.random(n) * 3 - 0.2
    return first, second.copy()


@pytest.mark.parametrize("alternative", ["greater", "two-sided", "less"])
@pytest.mark.parametrize("kind", ["continuous", "ties", "equal"])
@pytest.mark.parametrize("n,n_resamples,batch", [
    (2, 20000, 1000), (9, 20000, 100), (14, 20000, 7000),   # exact: every swap pattern
    (15, 20000, 20000), (37, 20000, 333), (180, 20000, 5555), (60, 999, 1000)])  # sampled
def test_the_p_value_is_scipys_to_the_bit(alternative, kind, n, n_resamples, batch):
    rng = np.random.default_rng(n * 31 + len(kind))
    first, second = sample(n, rng, kind)
    weights = rng.random(n) / n
    for seed in (n % 5,):
        ours = paired_permutation_p(first, second, weights,
                                    rng=np.random.default_rng(seed), n_resamples=n_resamples,
                                    batch=batch, alternative=alternative)
        theirs = scipy_p(first, second, weighted(weights), seed=seed, n_resamples=n_resamples,
                         batch=batch, alternative=alternative)
        assert ours == theirs, (seed, ours, theirs)
    assert 0 < ours <= 1


def test_the_generator_is_left_where_scipy_leaves_it():
    """A study draws the next comparison's stream from fresh generators, but a caller that
    reuses one must see the same numbers after the test as after scipy's."""
    first, second = sample(50, np.random.default_rng(1), "continuous")
    ours, theirs = np.random.default_rng(3), np.random.default_rng(3)
    paired_permutation_p(first, second, np.ones(50), rng=ours, n_resamples=1234,
                         batch=500)
    permutation_test((first, second), weighted(np.ones(50)), vectorized=True,
                     permutation_type="samples", n_resamples=1234, batch=500, random_state=theirs)
    assert ours.bit_generator.state == theirs.bit_generator.state


def test_a_clear_difference_is_significant_and_bad_input_is_refused():
    first = np.linspace(1, 2, 40)
    p = paired_permutation_p(first, first - 0.5, np.ones(40),
                             rng=np.random.default_rng(0), n_resamples=2000, batch=2000,
                             alternative="greater")
    assert p == 1 / 2001  # no swap pattern reaches the observed sum
    with pytest.raises(ValueError, match="n >= 2"):
        paired_permutation_p(first[:1], first[:1], np.ones(1),
                             rng=np.random.default_rng(0), n_resamples=10, batch=10)
    with pytest.raises(ValueError, match="alternative"):
        paired_permutation_p(first, first, np.ones(40), rng=np.random.default_rng(0),
                             n_resamples=10, batch=10, alternative="sideways")
