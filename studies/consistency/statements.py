"""Derivations among real entities, each statement written as the memorization probe that asks it.

The RDFS engine's provenance (`reasoning.rdfs.Closure.derivations`) gives every one-step
derivation of the loaded ontology's closure: two premises and a conclusion, all true. The
consistency study asks whether a model's beliefs about these statements respect the step, so
each of the three statements becomes the memorization probe that asks for its object:

* ``x rdf:type C`` → TP ("Lionel Messi is a [MASK] .", gold C's label);
* ``A rdfs:subClassOf B`` → SCO, ``p rdfs:subPropertyOf q`` → SPO;
* ``p rdfs:domain C`` / ``p rdfs:range C`` → DM / RG (the property written through its pattern);
* a fact ``x p y`` → the ``property`` template ("[x] [MASK] [y] .", gold p's wording), the
  probe the premise-ablation study asks of a fact premise.

A derivation is kept only if every statement can be asked in words: no literal or blank node,
no excluded term (`Ontology.excluded`), no IRI or underscore in a text, no answer that is its
own subject, and no two of its statements the same question with the same answer (rdfs7 with a
subproperty worded like its superproperty would test nothing). Derivations that read the same
(two instances sharing a label) are one. Entities are written by their labels, as the
memorization study writes them, so the same statement is the same prompt in both studies.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    Ontology,
    Triple,
)
from kgprobe.ontology.verbalize import normalize_label, pattern_middle
from kgprobe.reasoning.items import Verbalizer
from kgprobe.reasoning.rdfs import RULES, Closure, Derivation
from kgprobe.seeds import seed_key

#: The schema predicates and the memorization relation that asks each.
SCHEMA = {RDF_TYPE: "type", RDFS_SUBCLASSOF: "subClassOf", RDFS_SUBPROPERTYOF: "subPropertyOf",
          RDFS_DOMAIN: "domain", RDFS_RANGE: "range"}


@dataclass(frozen=True)
class Statement:
    """One statement as a probe: the relation's template with `subject` (and `other`, a fact's
    object) written in, `answer` the gold candidate; `prop` names the property whose wording a
    domain or range template uses."""

    relation: str  # type | subClassOf | subPropertyOf | domain | range | property
    subject: str
    answer: str
    other: str = ""
    prop: str = ""

    @property
    def key(self) -> str:
        """The statement's id in unit files and predictions."""
        return "|".join((self.relation, self.subject, self.other, self.answer))

    @property
    def question(self) -> tuple[str, str, str]:
        """What the probe asks, whatever its answer: statements sharing it share a prompt."""
        return self.relation, self.subject, self.other


@dataclass(frozen=True)
class BeliefDerivation:
    """A derivation among real entities: P1 (the schema premise), P2, and the conclusion."""

    id: str
    rule: str
    premises: tuple[Statement, Statement]
    conclusion: Statement
    triples: tuple[Triple, Triple, Triple]  # P1, P2, conclusion as the engine gives them

    @property
    def statements(self) -> tuple[Statement, Statement, Statement]:
        return (*self.premises, self.conclusion)


class Writer:
    """Turns triples of one ontology into statements (None where one cannot be asked)."""

    def __init__(self, onto: Ontology, verbalizer: Verbalizer):
        self.onto, self.verb = onto, verbalizer
        self._made: dict[Triple, Statement | None] = {}

    def speakable(self, term: str) -> bool:
        return not term.startswith(('"', "_:")) and term not in self.onto.excluded

    def statement(self, triple: Triple) -> Statement | None:
        """The triple as a statement, written once: derivations share their premises (one
        subclass edge is a premise of every derivation through it)."""
        if triple not in self._made:
            self._made[triple] = self._write(triple)
        return self._made[triple]

    def _write(self, triple: Triple) -> Statement | None:
        s, p, o = triple
        if s == o or not all(self.speakable(t) for t in triple):
            return None
        relation = SCHEMA.get(p)
        if relation is None:  # a fact between two entities
            made = Statement("property", self.onto.label(s),
                             pattern_middle(self.verb.pattern(p)), self.onto.label(o), p)
        else:
            made = Statement(relation, self.onto.label(s), self.verb.label(o),
                             prop=s if relation in ("domain", "range") else "")
        texts = (made.subject, made.answer, made.other)
        if any("://" in t or "_" in t for t in texts) or not made.answer.strip():
            return None
        if relation in ("subClassOf", "subPropertyOf") and \
                normalize_label(made.subject) == made.answer:
            return None
        return made


def belief_derivation(writer: Writer, d: Derivation) -> tuple[tuple[Statement, ...] | None, str]:
    """The derivation's three statements, or (None, why it cannot be asked)."""
    made = [writer.statement(t) for t in (*d.premises, d.conclusion)]
    if any(m is None for m in made):
        return None, "a statement not askable in words"
    if len({(m.key) for m in made}) < 3:
        return None, "two statements are one question and answer"
    return tuple(made), ""


def rule_derivations(writer: Writer, closure: Closure, rule: str,
                     skipped: Counter) -> list[BeliefDerivation]:
    """Every askable derivation of `rule`, those that read the same once, in engine order."""
    seen: set[tuple[str, ...]] = set()
    out: list[BeliefDerivation] = []
    for d in closure.derivations(rule):
        made, why = belief_derivation(writer, d)
        if made is None:
            skipped[f"{rule}: {why}"] += 1
            continue
        reading = tuple(m.key for m in made)
        if reading in seen:
            skipped[f"{rule}: reads as another derivation"] += 1
            continue
        seen.add(reading)
        out.append(BeliefDerivation("", rule, (made[0], made[1]), made[2],
                                    (d.premises[0], d.premises[1], d.conclusion)))
    return out


def sample_derivations(found: Sequence[BeliefDerivation], rule: str, limit: int | None,
                       seed: int) -> list[BeliefDerivation]:
    """A seeded sample of `limit` derivations of a rule (all if fewer), in engine order, each
    named ``rule-00000`` by its place in the sample (stable for a seed, limit and ontology, so
    runs of two models name the same derivations alike)."""
    keep = list(range(len(found)))
    if limit is not None and len(found) > limit:
        keep = sorted(random.Random(seed_key(seed, rule)).sample(keep, limit))
    return [BeliefDerivation(f"{rule}-{n:05d}", found[i].rule, found[i].premises,
                             found[i].conclusion, found[i].triples) for n, i in enumerate(keep)]


def study_derivations(writer: Writer, closure: Closure, rules: Iterable[str] | None,
                      limit: int | None, seed: int, skipped: Counter | None = None,
                      found_counts: dict | None = None) -> dict[str, list[BeliefDerivation]]:
    """rule → its sampled derivations; `rules` None: every rule that has any (in `RULES`
    order), so a run names only rules it can measure. `found_counts` gets each rule's number
    of askable derivations before sampling."""
    skipped = Counter() if skipped is None else skipped
    out = {}
    for rule in (rules or RULES):
        found = rule_derivations(writer, closure, rule, skipped)
        if found_counts is not None:
            found_counts[rule] = len(found)
        if found or rules:
            out[rule] = sample_derivations(found, rule, limit, seed)
    return out


def true_answers(writer: Writer, triples: Iterable[Triple]) -> dict[tuple[str, str, str], set[str]]:
    """question → every answer true of it in the closure: what filtered ranking leaves out of
    a gold's rank (an instance's other types, a class's other superclasses, …). Keyed by the
    question as written, so two entities sharing a label pool their answers."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for triple in triples:
        made = writer.statement(triple)
        if made is not None:
            out.setdefault(made.question, set()).add(made.answer)
    return out
