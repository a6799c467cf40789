"""Counterfactual premises: an item whose schema premise P1 names a false term.

A reasoning item's P1 names the superclass (rdfs9, rdfs11), superproperty (rdfs5, rdfs7),
domain (rdfs2) or range (rdfs3) its conclusion carries over. Its counterfactual twin writes
the same P1 about a *false* term F — a seeded candidate of the item's own candidate list that
is no true answer of the item in the ontology — and asks the same hypothesis. The gold is
what the written premises entail ("Dog is a vehicle . [X] is a dog ." ⊢ [X] is a vehicle):
a model that reasons with what it reads follows the premise and answers F; one that recalls
what it knows of the real ontology answers the real gold (mammal), which stays among the
candidates because F is drawn from the item's own list.

**The counterfactual world** (filtered ranking). True in it is what the RDFS engine derives
from the written statements (the counterfactual P1 and the unchanged P2) together with the
ontology's schema above F (F's superclasses or superproperties: the counterfactual changes
what P1's subject is, not what F is). The ontology's schema above P1's subject is *not* part
of it, so the real gold and its superclasses are not true there. F is drawn only where the
real gold stays false in that world (F is not below it), so the recalled answer always counts
as wrong. F is never P1's own subject or below it (no cycle "dog ⊑ F ⊑ dog").

No models here: the study (`studies/premise_ablation/counterfactual.py`) turns these items
into requests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Sequence

from kgprobe.ontology.model import RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from kgprobe.ontology.verbalize import pattern_middle
from kgprobe.reasoning.filtering import TrueAnswers
from kgprobe.reasoning.items import (
    PremiseText,
    ReasoningItem,
    Verbalizer,
    named_by_property,
    restates_premise,
    unworded,
)
from kgprobe.reasoning.rdfs import closure as rdfs_closure
from kgprobe.seeds import seed_key

#: ``--premises``: the true premises (the study's grid) and their counterfactual twins
PREMISES = ("true", "counterfactual")
#: the hypothesis predicate of each rule whose object is the answer (rdfs7: the predicate is)
HYPOTHESIS = {"rdfs2": RDF_TYPE, "rdfs3": RDF_TYPE, "rdfs9": RDF_TYPE,
              "rdfs11": RDFS_SUBCLASSOF, "rdfs5": RDFS_SUBPROPERTYOF}


@dataclass(frozen=True)
class Counterfactual:
    """An item's counterfactual twin: `item` (same id, P1 about `false_term`, gold what the
    written premises entail), the `original`, and `true`: every answer true in the
    counterfactual world (see the module), the gold included."""

    item: ReasoningItem
    original: ReasoningItem
    false_term: str
    true: frozenset[str]


def candidate_terms(verb: Verbalizer, kind: str) -> dict[str, str]:
    """Candidate string → the one term it writes, for a candidate kind (``class``,
    ``property``, ``property_pattern``); a string two terms share, or an excluded term, is
    left out (which of them the false premise names would be a guess)."""
    onto = verb.onto
    terms = onto.classes if kind == "class" else onto.properties
    found: dict[str, list[str]] = {}
    for iri in sorted(terms):
        if onto.excluded.get(iri) or iri.startswith(('"', "_:")):
            continue
        text = pattern_middle(verb.pattern(iri)) if kind == "property_pattern" else verb.label(iri)
        found.setdefault(text, []).append(iri)
    return {text: iris[0] for text, iris in found.items() if len(iris) == 1}


def _above(truth: TrueAnswers, term: str, kind: str) -> frozenset[str]:
    """`term` and its superclasses (`kind` "class") or superproperties."""
    return truth.classes_from(term) if kind == "class" else truth.properties_from(term)


def rewrite(verb: Verbalizer, item: ReasoningItem, false_term: str) -> ReasoningItem:
    """`item` with P1 naming `false_term` in place of its object, the conclusion and gold
    moved to it; the same id, P2 and hypotheses."""
    p1, p2 = item.premises
    subject, predicate, _ = p1.triple
    triple = (subject, predicate, false_term)
    if p1.relation in ("domain", "range"):
        text = verb.statement(p1.relation, verb.label(subject), verb.label(false_term), subject)
    else:
        text = verb.statement(p1.relation, p1.subject, verb.label(false_term))
    first = PremiseText("P1", triple, text, p1.relation, p1.subject, verb.label(false_term), False)
    cs, cp, co = item.conclusion["triple"]
    if item.rule == "rdfs7":
        answer, conclusion = pattern_middle(verb.pattern(false_term)), [cs, false_term, co]
    else:
        answer, conclusion = verb.label(false_term), [cs, cp, false_term]
    return replace(item, premises=[first, p2], answers=[answer],
                   conclusion={**item.conclusion, "triple": conclusion})


def world_answers(verb: Verbalizer, truth: TrueAnswers, item: ReasoningItem,
                  false_term: str, kind: str) -> frozenset[str]:
    """What the counterfactual `item`'s written statements entail for its hypothesis, with
    the ontology's schema above `false_term` (the RDFS engine on those triples alone)."""
    edge = RDFS_SUBCLASSOF if kind == "class" else RDFS_SUBPROPERTYOF
    schema = [(false_term, edge, up) for up in _above(truth, false_term, kind) if up != false_term]
    world = rdfs_closure([tuple(p.triple) for p in item.premises] + schema)
    triples = world.asserted | world.inferred
    s, _, o = item.premises[1].triple
    if item.rule == "rdfs7":
        return frozenset(pattern_middle(verb.pattern(p)) for a, p, b in triples
                         if a == s and b == o and p not in (RDF_TYPE, RDFS_SUBPROPERTYOF,
                                                            RDFS_SUBCLASSOF))
    subject = o if item.rule == "rdfs3" else s
    predicate = HYPOTHESIS[item.rule]
    return frozenset(verb.label(c) for a, p, c in triples
                     if a == subject and p == predicate and not c.startswith(('"', "_:")))


def counterfactual(verb: Verbalizer, truth: TrueAnswers, item: ReasoningItem,
                   candidates: Sequence[str], terms: dict[str, str],
                   seed: int) -> Counterfactual | None:
    """The item's counterfactual twin, its false term drawn (seeded by the run's seed and the
    item) from `candidates` (the item's own candidate list): the first in a seeded order
    that is no true answer of the item (`TrueAnswers.item`), no cycle, writable, not read off
    P2 or the property's wording, and leaves the real gold false. None when none is."""
    kind = "class" if item.candidates_key == "class" else "property"
    real = truth.item(item)
    subject = item.premises[0].triple[0]
    options = [c for c in candidates if c in terms and c not in real]
    random.Random(seed_key(seed, f"{item.id}:counterfactual")).shuffle(options)
    for text in options:
        term = terms[text]
        if subject in _above(truth, term, kind):
            continue  # P1's subject above the term it would be put under: a cycle
        twin = rewrite(verb, item, term)
        if restates_premise(twin) or named_by_property(twin) or unworded(twin):
            continue
        true = world_answers(verb, truth, twin, term, kind)
        if twin.answers[0] not in true or set(item.answers) & true:
            continue
        return Counterfactual(twin, item, term, true)
    return None
