"""How often `kgprobe compare`'s paired 95 % interval contains the true difference.

    python bench/compare_coverage.py [--reps 2000] [--resamples 1000]

Seeded synthetic comparisons of two models on the same items, each item's difficulty shared
by both (so the two are correlated, as real models are), with the population difference known
exactly. Prints ONE JSON line: per design, the items and the share of data sets whose interval
(`studies.compare.paired_interval`, the one the table reports) contains the true difference.

* ``accuracy``: right or wrong per item; P(right) from 0.2 to 0.8 for the first model, 0.1
  less for the second;
* ``mrr``: reciprocal ranks among 20 candidates, each distractor beating the gold with
  probability 0.02 to 0.3 (0.05 more for the second model);
* ``mrr_skewed``: the same with 0.1 to 0.8 (0.1 more): a few easy items carry most of the
  difference, the skew that makes item-bootstrap intervals too narrow with few items.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy.stats import binom

from kgprobe.studies.compare import paired_interval


def mrr_design(lo: float, hi: float, shift: float):
    beaten = np.linspace(lo, hi, 8)
    k = np.arange(20)
    true = float(np.mean([(binom.pmf(k, 19, p) / (1 + k)).sum()
                          - (binom.pmf(k, 19, p + shift) / (1 + k)).sum() for p in beaten]))

    def draw(rng, n):
        p = rng.choice(beaten, size=n)
        return 1 / (1 + rng.binomial(19, p)), 1 / (1 + rng.binomial(19, p + shift))
    return draw, true


def accuracy_design():
    chance = np.linspace(0.2, 0.8, 7)

    def draw(rng, n):
        q = rng.choice(chance, size=n)
        return (rng.random(n) < q).astype(float), (rng.random(n) < q - 0.1).astype(float)
    return draw, 0.1


def coverage(draw, true: float, items: int, reps: int, resamples: int, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        first, second = draw(rng, items)
        interval = paired_interval(first, second, seed=rep, resamples=resamples)
        hits += bool(interval.lo[0] <= true <= interval.hi[0])
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per design and size")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    args = parser.parse_args()
    designs = {"accuracy": accuracy_design(), "mrr": mrr_design(0.02, 0.3, 0.05),
               "mrr_skewed": mrr_design(0.1, 0.8, 0.1)}
    out = {"bench": "compare_coverage", "reps": args.reps, "resamples": args.resamples}
    for name, (draw, true) in designs.items():
        out[name] = {str(n): round(coverage(draw, true, n, args.reps, args.resamples), 3)
                     for n in (50, 200)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
