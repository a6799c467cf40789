"""How often the premise-ablation intervals contain the true mean when pseudoword pairs matter.

    python bench/two_way_coverage.py [--reps 1000] [--items 40] [--pairs 5] [--resamples 1000]

Seeded synthetic cells y_ijk = mu + a_i + b_j + e_ij + d_ijk: item effect a, pair effect b
(one global pseudoword pair j for every item, as the study draws them), their interaction e,
1–3 prompts (templates) per item and pair with noise d; with ``missing`` a share of the
(item, pair) cells is empty (an item's premise known under one pair, not another). Prints ONE
JSON line: per variance mix, the share of data sets whose 95 % interval contains mu, for

* ``two_way``: `studies.stats.two_way_interval` (crossed items × pairs, t with Satterthwaite
  degrees of freedom), what the study reports with ``--pairs`` > 1;
* ``one_way``: `studies.stats.bootstrap_interval` over items (pairs kept inside their item),
  what it reports with one pair: conditional on the draw of pairs;
* ``pigeonhole``: `studies.stats.pigeonhole_interval` (items and pairs resampled
  independently, percentile; Owen 2007).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from kgprobe.studies import stats

MU = 0.3
#: name → (item sd, pair sd, interaction sd, share of empty cells)
MIXES = {"items": (1.0, 0.0, 0.5, 0.0), "pairs": (0.5, 1.0, 0.5, 0.0),
         "interaction": (0.3, 0.3, 1.0, 0.0), "pairs_missing": (0.5, 1.0, 0.5, 0.3),
         "mixed_missing": (1.0, 0.5, 1.0, 0.2)}


def draw(rng: np.random.Generator, items: int, pairs: int, mix: tuple) -> stats.Crossed:
    """One simulated cell: an items × pairs table of prompt sums and counts."""
    sa, sb, se, missing = mix
    y = MU + rng.normal(0, sa, (items, 1)) + rng.normal(0, sb, (1, pairs)) + rng.normal(0, se, (items, pairs))
    counts = rng.integers(1, 4, (items, pairs)).astype(np.float64)
    if missing:
        counts[rng.random((items, pairs)) < missing] = 0
        counts[counts.sum(1) == 0, 0] = 1  # every item is in the cell under some pair
    sums = y * counts + rng.normal(0, 0.3, (items, pairs)) * np.sqrt(counts)
    return stats.Crossed(sums[..., None], counts, np.zeros(items, dtype=object))


def coverage(method: str, mix: tuple, items: int, pairs: int, reps: int, resamples: int,
             seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        sample = draw(rng, items, pairs, mix)
        if method == "two_way":
            interval = stats.two_way_interval(sample)
        elif method == "one_way":
            interval = stats.bootstrap_interval(sample.clustered(), seed=rep, resamples=resamples)
        else:
            interval = stats.pigeonhole_interval(sample, seed=rep, resamples=resamples)
        hits += bool(interval.lo[0] <= MU <= interval.hi[0])
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="data sets per mix and method")
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    args = parser.parse_args()
    out = {"bench": "two_way_coverage", "reps": args.reps, "items": args.items,
           "pairs": args.pairs, "resamples": args.resamples}
    for method in ("two_way", "one_way", "pigeonhole"):
        out[method] = {name: round(coverage(method, mix, args.items, args.pairs, args.reps,
                                            args.resamples), 3) for name, mix in MIXES.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
