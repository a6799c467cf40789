"""``--memorized-sample N``: the known/not-known split estimated from a seeded sample.

Deciding the split exactly ranks every premise of a relation's whole population (hundreds of
memorizing probes before the first item), so that the split does not depend on ``--limit``.
A trial run instead classifies N premises per (role, relation) stratum, drawn with a seed
that depends only on the run's ``--seed`` and the stratum (never on ``--limit``), takes the
sample's top-`fraction` cut as the stratum's threshold, and classifies only the premises its
evaluated items need against it. The threshold is a point in the same order the exact rule
sorts by (reciprocal rank, best first; the premise's seed string among equal ranks), so a
sample that covers the stratum gives the exact split. Its precision is reported as a
bootstrap interval of the cut's reciprocal rank.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from kgprobe.seeds import seed_key
from kgprobe.studies.stats import rng_for


class Premise(Protocol):
    """What the estimate needs of a premise (`study.PremiseKey`): its stratum and seed string."""

    @property
    def stratum(self) -> tuple[str, str]: ...

    @property
    def seed(self) -> str: ...


P = TypeVar("P", bound=Premise)
Order = Callable[[Premise], tuple]


def sampled_premises(population: list[P], size: int, seed: int) -> list[P]:
    """`size` premises of each stratum (all of a smaller one), seeded by the run's seed and
    the stratum alone: the same sample whatever items the run evaluates."""
    strata: dict[tuple[str, str], list[P]] = {}
    for key in population:
        strata.setdefault(key.stratum, []).append(key)
    out = []
    for stratum, keys in sorted(strata.items()):
        ordered = sorted(keys, key=lambda k: k.seed)
        rng = random.Random(seed_key(seed, "memorized-sample", *stratum))
        out += rng.sample(ordered, min(size, len(ordered)))
    return out


def _cut(rrs: np.ndarray, cut: int) -> float:
    """The reciprocal rank at position `cut` of `rrs` sorted best first (0 when all known)."""
    return float(np.sort(rrs)[::-1][cut]) if cut < len(rrs) else 0.0


def estimate_split(rr: dict[P, float], sample: list[P], classified: Iterable[P],
                   fraction: float, seed: int, resamples: int) -> tuple[dict, list[dict]]:
    """Known or not for every premise of `classified`, by its stratum's threshold estimated
    from `sample`; and per stratum the threshold with its 95 % bootstrap interval."""
    order: Order = lambda k: (-rr[k], k.seed)  # the exact rule's order
    strata: dict[tuple[str, str], list[P]] = {}
    for key in sample:
        strata.setdefault(key.stratum, []).append(key)
    bounds, summary = {}, []
    for stratum, keys in sorted(strata.items()):
        ranked = sorted(keys, key=order)
        cut = round(len(ranked) * fraction)
        bounds[stratum] = order(ranked[cut]) if cut < len(ranked) else None
        values = np.array([rr[k] for k in keys])
        boot = rng_for(seed, "memorized-sample", *stratum).choice(
            values, size=(resamples, len(values)), replace=True)
        cuts = [_cut(row, cut) for row in boot]
        lo, hi = np.percentile(cuts, [2.5, 97.5])
        summary.append({"role": stratum[0], "relation": stratum[1], "sampled": len(keys),
                        "threshold": _cut(values, cut), "lo": float(lo), "hi": float(hi)})
    known = {k: bounds[k.stratum] is None or order(k) < bounds[k.stratum] for k in classified}
    return known, summary


def _rank(rr: float) -> str:
    return "any rank" if rr <= 0 else f"rank {1 / rr:.3g}"


def sample_lines(cached: dict) -> list[str]:
    """The report's account of an estimated split (memorized.json's ``sample`` section): how
    many premises per relation it rests on and how precisely each threshold is known."""
    sample = cached.get("sample")
    if not isinstance(sample, dict):
        return []
    lines = [(f"The split is **estimated** (`--memorized-sample {sample['size']}`): each relation's "
             f"threshold is the top-{100 * cached.get('fraction', 0.5):.0f}% cut of a seeded sample "
             f"of {sample['size']} of its premises (seed {sample['seed']}, the same whatever "
             "`--limit`), and only the evaluated items' premises are classified against it. "
             "Threshold as the gold's rank (a premise counts as known when ranked above it), with the "
             "95% bootstrap interval of the cut:"), ""]
    for s in sample["strata"]:
        lines.append(f"- {s['role']} {s['relation']}: {_rank(s['threshold'])} from {s['sampled']} "
                     f"premises (95% interval {_rank(s['hi'])} to {_rank(s['lo'])})")
    return lines + [""]


def read_sample_lines(out: Path) -> list[str]:
    """`sample_lines` of OUT/memorized.json; nothing for an exact split or no file."""
    import json

    try:
        cached = json.loads((Path(out) / "memorized.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sample_lines(cached) if isinstance(cached, dict) else []
