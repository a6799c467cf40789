"""The paired permutation test a claim rests on: kgprobe's vectorized one against scipy's.

    python bench/sign_flip.py [--items 30,90,180] [--resamples 20000] [--repeat 5]

`studies/sign_flip.paired_permutation_p` against ``scipy.stats.permutation_test`` (the anchor,
``permutation_type="samples"``, ``vectorized=True``) on the same data, statistic, generator
seed, resample count and batch as `studies/comparisons.one_sided` uses: per-item sums of a
model and a control at the ceiling (half the items tied), 20,000 resamples (the comparisons'
``TEST_FACTOR × RESAMPLES``). Prints ONE JSON line: per item count, the best-of-`repeat`
seconds of each, the speed-up, and whether every p-value was the same float.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.stats import permutation_test

from kgprobe.studies.sign_flip import paired_permutation_p
from kgprobe.studies.stats import CHUNK


def best(fn, repeat: int) -> tuple[float, float]:
    """(the fastest of `repeat` calls in seconds, the value it returned)."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def case(items: int, resamples: int, repeat: int) -> dict:
    rng = np.random.default_rng(items)
    model = rng.integers(0, 3, items).astype(float)
    control = np.where(rng.random(items) < 0.5, model, rng.integers(0, 3, items)).astype(float)
    weights = np.full(items, 1 / items)

    def statistic(x, y, axis=-1):
        return ((x - y) * weights).sum(axis=axis)

    batch = max(1, CHUNK // items)
    scipy_s, theirs = best(lambda: float(permutation_test(
        (model, control), statistic, vectorized=True, permutation_type="samples",
        alternative="greater", n_resamples=resamples, batch=batch,
        random_state=np.random.default_rng(0)).pvalue), repeat)
    ours_s, ours = best(lambda: paired_permutation_p(
        model, control, weights, rng=np.random.default_rng(0), n_resamples=resamples,
        batch=batch, alternative="greater"), repeat)
    return {"items": items, "scipy_s": round(scipy_s, 4), "kgprobe_s": round(ours_s, 4),
            "speedup": round(scipy_s / ours_s, 1), "same_p": ours == theirs, "p": ours}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="30,90,180", help="item counts, comma-separated")
    parser.add_argument("--resamples", type=int, default=20000, help="permutations per test")
    parser.add_argument("--repeat", type=int, default=5, help="calls per side; the fastest counts")
    args = parser.parse_args()
    cases = [case(int(n), args.resamples, args.repeat) for n in args.items.split(",")]
    print(json.dumps({"bench": "sign_flip", "resamples": args.resamples, "cases": cases,
                      "same_p": all(c["same_p"] for c in cases)}))


if __name__ == "__main__":
    main()
