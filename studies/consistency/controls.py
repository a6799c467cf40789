"""The consistency study's controls: matched control derivations and the control models.

**Matched control premises.** In every RDFS rule the conclusion's gold is a premise's gold
(x type A, A ⊑ B ⊢ x type B), so a model, or a prior, that simply likes the answer B believes
the premise "A ⊑ B" and the conclusion "x type B" together without any entailment between
them. Each derivation d therefore gets a control: the premises of another sampled derivation
d′ of the same rule whose conclusion has **the same answer** but is another statement (Bolt is
a sprinter, sprinter ⊑ athlete, against Messi is an athlete), drawn with the run's seed. Those
premises do not entail d's conclusion: its statement is not among them, and no derivation the
engine found concludes it from them (a one-step RDFS rule concludes only about its premises'
own terms, so with another subject it cannot). A derivation with no such d′ has no control
and stays out of the matched contrast. The matched contrast is then

    P(conclusion believed | its own premises believed) − P(conclusion believed | the control
    premises believed), over the derivations that have a control,

which a liking for the answer moves on both sides alike.

**Control models**, run through the same requests in the same run (`CONTROLS`, no network):
``frequency``, ``copy``, ``random``; and the **reference** whose consistency is subtracted
(``--reference``; default ``prior``: ``prior:MODEL``, the model asked the content-free
prompts, `models.prior`). A control's own reference is itself. What a control is, and which
model a control name loads, is `studies.controls`' one definition, shared with every study.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgprobe.seeds import seed_key
from kgprobe.studies.controls import FREE, control_model

from .statements import BeliefDerivation

#: The weightless controls every run also scores (cheap: no network): `studies.controls.FREE`.
CONTROLS = FREE
#: What ``--reference`` accepts: the model's content-free prior, or a weightless control.
REFERENCES = ("prior", *CONTROLS)


def reference_model(model: str, reference: str) -> str:
    """The model whose consistency a run subtracts: ``prior:MODEL`` for ``prior`` (a control's
    prior is the control itself), else the named control (`studies.controls.control_model`)."""
    return control_model(reference, model)


def matched_controls(derivations: Sequence[BeliefDerivation],
                     seed: int) -> dict[str, BeliefDerivation | None]:
    """derivation id → the derivation whose premises are its control (None: none fits)."""
    entailed = {(frozenset(d.triples[:2]), d.triples[2]) for d in derivations}
    by_answer: dict[tuple[str, str, str], list[BeliefDerivation]] = {}
    for d in derivations:
        by_answer.setdefault((d.rule, d.conclusion.relation, d.conclusion.answer), []).append(d)
    out: dict[str, BeliefDerivation | None] = {}
    for d in derivations:
        fits = [o for o in by_answer[(d.rule, d.conclusion.relation, d.conclusion.answer)]
                if o.conclusion.key != d.conclusion.key
                and d.conclusion.key not in {p.key for p in o.premises}
                and (frozenset(o.triples[:2]), d.triples[2]) not in entailed]
        out[d.id] = random.Random(seed_key(seed, "control", d.id)).choice(fits) if fits else None
    return out
