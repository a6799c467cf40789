"""The STA study's one request stream: its configuration → the prompts each unit asks.

`retrieval_units` gives, per (condition, number of properties), the retrieval prompts of the
chosen targets; `elicitation_units`, per (relation, context), the elicitation prompts of the
sampled concepts. The run (`plan.StaPlan.units`) scores exactly these and ``--dry-run``
(`plan.StaPlan.prompts`) writes exactly these, in the same order; only the targets differ where the
model's vocabulary drops some (a dry run has no model to ask).
"""

from __future__ import annotations

from typing import Sequence

from kgprobe.ontology.norms import Concept
from kgprobe.studies.sta import elicitation as eli
from kgprobe.studies.sta import retrieval as ret

from .config import StaConfig


def retrieval_units(config: StaConfig, targets: Sequence[Concept], conditions: Sequence,
                    template: str) -> list[tuple[object, int, list]]:
    """(condition, number of properties, its prompts) for every unit with prompts."""
    random_kw = {"random_sets": config.random_sets,
                 "random_permutations": config.random_permutations}
    units = []
    for cond in conditions:
        for n in range(1, ret.MAX_PROPERTIES + 1):
            prompts = ret.build_prompts(targets, cond, n, determiner=config.determiner,
                                        template=template, seed=config.seed, **random_kw)
            if prompts:
                units.append((cond, n, prompts))
    return units


def elicitation_units(concepts: Sequence[Concept]) -> list[tuple[str, str, list]]:
    """(relation, context, its prompts) for every unit with prompts."""
    units = []
    for relation in eli.RELATIONS:
        for context in eli.CONTEXTS:
            prompts = eli.build_prompts(concepts, relation, context)
            if prompts:
                units.append((relation, context, prompts))
    return units
