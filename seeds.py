"""The strings seeded draws are keyed by: one spelling for every study.

A draw that must come out the same wherever it is made (an item's distractors in the run, its
dry run and its lm-eval export; a rule's item sample) seeds `random.Random` with a string
naming the run's seed and what the draw is for: ``seed_key(0, "rdfs9-12")`` is ``"0:rdfs9-12"``.
Spelling it once keeps the places that must agree from drifting apart, and keeps the strings
(and so every published number) exactly what they were.
"""

from __future__ import annotations


def seed_key(seed: object, *parts: object) -> str:
    """``seed`` and `parts` joined by colons: ``seed_key(0, "paper", "type", 3)`` is
    ``"0:paper:type:3"``."""
    return ":".join(str(p) for p in (seed, *parts))
