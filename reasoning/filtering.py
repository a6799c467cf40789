"""Filtered ranking: the other true answers of a probe never count against its gold.

A reasoning item asks for one conclusion of one derivation ("[X] is a particular [MASK]",
gold "agent"), but its premises entail more than that one answer: if [X] is a person and a
person is an agent, "person" and every superclass of "agent" are true too. Ranked raw, a
model that answers "person" is scored as if it were wrong. Knowledge-graph completion has
the same problem and the same fix (Bordes et al. 2013, "filtered" setting): when one true
answer is ranked, the *other* true answers are taken out of its candidate list.

`TrueAnswers` says, from the RDFS closure's schema (subclass and subproperty chains, domains
and ranges, superproperties' domains and ranges included), what a probe's premise entails
about its subject:

* a type or subclass premise ``[X] ⊑ C``: C and every superclass of C;
* a subproperty premise ``[X] ⊑ P``: P and every superproperty of P;
* a fact ``[X] p [Y]``: every domain (for [X]) or range (for [Y]) class of p and of its
  superproperties, with their superclasses; for rdfs7, p's and every superproperty's wording;
* a schema premise (P1, a named subject S): every superclass or superproperty of S; a domain
  or range premise has one answer (the paper's DM/RG: a wider class is not a sound domain).

Only what the item's own premises entail is used (not other facts about the entity behind a
pseudoword), so one item — which stands for every derivation that reads like it — has one
set of true answers. Answers are candidate strings (labels, or property wordings for rdfs7),
as `reasoning.memorizing.candidate_sets` writes them.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Literal, Sequence, cast

from kgprobe.errors import KgprobeError
from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
)
from kgprobe.ontology.verbalize import pattern_middle
from kgprobe.reasoning.items import SLOT_X, SLOT_Y, PremiseText, ReasoningItem, Verbalizer

__all__ = ["RANKINGS", "Ranking", "parse_ranking", "TrueAnswers", "others"]

#: ``filtered`` (default): other true answers are left out; ``raw``: every candidate counts.
RANKINGS = ("filtered", "raw")
#: `--ranking`'s value once `parse_ranking` has checked it.
Ranking = Literal["filtered", "raw"]


def parse_ranking(text: str | None) -> Ranking:
    """``filtered`` (or None) or ``raw``, as given to ``--ranking``."""
    value = (text or "filtered").strip().lower()
    if value not in RANKINGS:
        raise KgprobeError(f"--ranking {text}: use filtered (the other true answers of an item "
                           "are left out of its candidates) or raw (every candidate counts)")
    return cast(Ranking, value)


def others(true: Iterable[str], golds: Sequence[str]) -> frozenset[str]:
    """The true answers that are not this probe's gold: what filtered ranking leaves out."""
    return frozenset(true) - set(golds)


class TrueAnswers:
    """What a reasoning item's or premise probe's premises entail about its subject."""

    def __init__(self, verbalizer: Verbalizer, triples: Iterable[tuple[str, str, str]]):
        self.verb = verbalizer
        self.sco: dict[str, set[str]] = {}
        self.spo: dict[str, set[str]] = {}
        self.domain: dict[str, set[str]] = {}
        self.range: dict[str, set[str]] = {}
        table = {RDFS_SUBCLASSOF: self.sco, RDFS_SUBPROPERTYOF: self.spo,
                 RDFS_DOMAIN: self.domain, RDFS_RANGE: self.range}
        for s, p, o in triples:
            if p in table and s != o:
                table[p].setdefault(s, set()).add(o)
        self._above: dict[tuple[int, str], frozenset[str]] = {}

    @classmethod
    def of(cls, verbalizer: Verbalizer, closure) -> "TrueAnswers":
        """From a `reasoning.rdfs.Closure` (its asserted and inferred triples)."""
        return cls(verbalizer, [*closure.asserted, *closure.inferred])

    # -- the schema, transitively ----------------------------------------------------
    def _up(self, edges: dict[str, set[str]], start: str) -> frozenset[str]:
        """`start` and everything above it along `edges` (cycles terminate)."""
        key = (id(edges), start)
        if key not in self._above:
            seen = {start}
            queue = deque([start])
            while queue:
                for parent in edges.get(queue.popleft(), ()):
                    if parent not in seen:
                        seen.add(parent)
                        queue.append(parent)
            self._above[key] = frozenset(seen)
        return self._above[key]

    def classes_from(self, cls_iri: str) -> frozenset[str]:
        """The class and its superclasses."""
        return self._up(self.sco, cls_iri)

    def properties_from(self, prop: str) -> frozenset[str]:
        """The property and its superproperties."""
        return self._up(self.spo, prop)

    def types_by(self, prop: str, end: str) -> frozenset[str]:
        """The classes ``x prop y`` entails for x (`end` "subject") or y ("object")."""
        table = self.domain if end == "subject" else self.range
        out: set[str] = set()
        for q in self.properties_from(prop):
            for c in table.get(q, ()):
                out |= self.classes_from(c)
        return frozenset(out)

    # -- as candidate strings ---------------------------------------------------------
    def _labels(self, iris: Iterable[str]) -> frozenset[str]:
        return frozenset(self.verb.label(i) for i in iris)

    def _wordings(self, props: Iterable[str]) -> frozenset[str]:
        return frozenset(pattern_middle(self.verb.pattern(p)) for p in props)

    def item(self, item: ReasoningItem) -> frozenset[str]:
        """Every answer the item's premises entail for its hypothesis (its gold included)."""
        # the premise about the pseudoword (a chained item's schema premises precede it)
        p2 = next(p for p in item.premises if p.role == "P2")
        s, p, o = p2.triple
        if item.rule in ("rdfs2", "rdfs3"):
            end = "subject" if item.rule == "rdfs2" else "object"
            found = self._labels(self.types_by(p, end))
        elif item.rule == "rdfs7":
            found = self._wordings(self.properties_from(p))
        elif item.rule == "rdfs5":
            found = self._labels(self.properties_from(o))
        else:  # rdfs9 ([X] type C), rdfs11 ([X] subClassOf C)
            found = self._labels(self.classes_from(o))
        return found | frozenset(item.answers)

    def premise(self, premise: PremiseText) -> frozenset[str]:
        """Every answer true for a premise's memorizing probe (its own answer included)."""
        s, p, o = premise.triple
        slot = premise.subject in (SLOT_X, SLOT_Y)
        if premise.relation == "property":
            found = self._wordings(self.properties_from(p))
        elif premise.relation in ("type", "subClassOf"):
            found = self._labels(self.classes_from(o) if slot or p == RDF_TYPE
                                 else self.classes_from(s) - {s})
        elif premise.relation == "subPropertyOf":
            found = self._labels(self.properties_from(o) if slot
                                 else self.properties_from(s) - {s})
        else:  # domain, range: one answer
            found = frozenset()
        return found | {premise.answer}
