"""``--memorized-sample N``: classify a seeded sample of premises, not the whole population.

A premise is known or not by its own probe alone (`study.is_known`), so a run needs only its
evaluated items' premises classified; the whole population is classified by default so that
the report can say how many premises of each relation the model knows. A trial run instead
classifies N premises per (role, relation) stratum, drawn with a seed that depends only on the
run's ``--seed`` and the stratum (never on ``--limit``), plus the premises its evaluated items
need: every one of those is decided exactly as in a full run, and the sample estimates each
relation's known share, reported with a 95 % Wilson interval over the sampled premises.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Protocol, TypeVar

from kgprobe.seeds import seed_key


class Premise(Protocol):
    """What the estimate needs of a premise (`study.PremiseKey`): its stratum and seed string."""

    @property
    def stratum(self) -> tuple[str, str]: ...

    @property
    def seed(self) -> str: ...


P = TypeVar("P", bound=Premise)


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


def sample_summary(premises: dict, sample: list[P]) -> list[dict]:
    """Per stratum of `sample`: how many sampled premises are known (`premises`: key →
    `MemorizedPremise`), and the known share's 95 % Wilson interval over those premises (the
    share of the whole relation the sample estimates)."""
    from scipy.stats import binomtest

    strata: dict[tuple[str, str], list[P]] = {}
    for key in sample:
        strata.setdefault(key.stratum, []).append(key)
    out = []
    for stratum, keys in sorted(strata.items()):
        known = sum(premises[k].known for k in keys)
        ci = binomtest(known, len(keys)).proportion_ci(method="wilson")
        out.append({"role": stratum[0], "relation": stratum[1], "sampled": len(keys),
                    "known": known, "lo": float(ci.low), "hi": float(ci.high)})
    return out


def sample_lines(cached: dict) -> list[str]:
    """The report's account of a sampled classification (memorized.json's ``sample``
    section): per relation, how many sampled premises are known, with the share's interval."""
    sample = cached.get("sample")
    if not isinstance(sample, dict) or not all("known" in s for s in sample.get("strata", [])):
        return []
    lines = [(f"Only a **sample** of premises was classified (`--memorized-sample {sample['size']}`"
              f": a seeded sample of {sample['size']} premises per relation, seed {sample['seed']}, "
              "the same whatever `--limit`, and the evaluated items' own premises, each decided "
              "by the same rule). The share of each relation's premises that is known, estimated "
              "from the sample, with its 95% Wilson interval over the sampled premises:"), ""]
    for s in sample["strata"]:
        lines.append(f"- {s['role']} {s['relation']}: {s['known']} of {s['sampled']} sampled known "
                     f"({100 * s['known'] / s['sampled']:.0f}%, 95% interval "
                     f"{100 * s['lo']:.0f}% to {100 * s['hi']:.0f}%)")
    return lines + [""]


def read_sample_lines(out: Path) -> list[str]:
    """`sample_lines` of OUT/memorized.json; nothing for a whole-population split or no file."""
    import json

    try:
        cached = json.loads((Path(out) / "memorized.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sample_lines(cached) if isinstance(cached, dict) else []
