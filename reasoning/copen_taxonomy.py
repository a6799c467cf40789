"""The concept taxonomy COPEN's CSJ and CiC generators walk, and its train/test sides.

Concept chains follow the ontology's direct ``subClassOf`` edges, specific → general: a store
holding the RDFS closure (`kgprobe reason`) lists every ancestor of a class as a superclass and
every superclass of an instance's type as its type, so the taxonomy keeps only the edges no
other edge implies (`memorizing.direct_parents`) and an instance belongs to its most specific
types (`Taxonomy.direct_types`). The closure adds nothing the chains do not already walk, and a
reasoned store gives the same taxonomy and members as the unreasoned one. Like the
paper (§2.1: "following Schema.org, we set Person as a top-level concept"), the edges above
the classes in `TOP_LEVEL_CUTS` are dropped, so a person's chain ends at *person* instead of
climbing through *animal*, *eukaryote*, *species*. Top-level concepts are split between
train/dev and test (`top_level_sides`, by `copen_split.split_top_levels`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.ontology.model import Ontology
from kgprobe.ontology.verbalize import normalize_label
from kgprobe.reasoning.copen_split import split_top_levels
from kgprobe.reasoning.memorizing import ancestors, direct_parents

#: Classes made top-level concepts by cutting their superclass edges (the paper's §2.1).
TOP_LEVEL_CUTS = ("http://dbpedia.org/ontology/Person",)


@dataclass
class Taxonomy:
    """Concept labels and (cut) direct superclasses, with chain helpers."""

    labels: dict[str, str]
    parents: dict[str, list[str]]
    #: direct superclasses before the cuts: what decides an instance's most specific types
    uncut: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _anc: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _above: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, onto: Ontology, cuts: Iterable[str] = TOP_LEVEL_CUTS) -> "Taxonomy":
        cut = set(cuts)
        uncut = direct_parents({c: [p for p in v.parents if p in onto.classes]
                                for c, v in onto.classes.items()})
        parents = {c: ([] if c in cut else ps) for c, ps in uncut.items()}
        return cls({c: v.label for c, v in onto.classes.items()}, parents, uncut)

    def direct_types(self, types: Iterable[str]) -> list[str]:
        """The concepts among `types` that no other of them lies below (before the cuts, so
        an instance typed *person* and, by the closure, *agent* is a person only)."""
        ts = [t for t in dict.fromkeys(types) if t in self.labels]
        if len(ts) < 2:
            return ts
        above = {t: self._uncut_above(t) for t in ts}
        return [t for t in ts if not any(u != t and t in above[u] and u not in above[t]
                                         for u in ts)]

    def _uncut_above(self, c: str) -> frozenset[str]:
        hit = self._above.get(c)
        if hit is None:
            hit = self._above[c] = frozenset(ancestors(c, self.uncut or self.parents))
        return hit

    def ancestors(self, c: str) -> list[str]:
        hit = self._anc.get(c)
        if hit is None:
            hit = self._anc[c] = ancestors(c, self.parents)
        return hit

    def up(self, c: str) -> list[str]:
        """`c` and its ancestors, specific → general."""
        return [c, *self.ancestors(c)]

    def roots(self, c: str) -> list[str]:
        tops = [a for a in self.up(c) if not self.parents.get(a)]
        return sorted(tops) or [c]

    def chains(self, c: str, limit: int = 8) -> list[list[str]]:
        """Every path from `c` up to a top-level concept (at most `limit`)."""
        out: list[list[str]] = []
        stack = [[c]]
        while stack and len(out) < limit:
            path = stack.pop()
            ups = [p for p in self.parents.get(path[-1], []) if p not in path]
            if not ups:
                out.append(path)
            stack.extend(path + [p] for p in sorted(ups, reverse=True))
        return out

    def text(self, c: str) -> str:
        """A concept as a prompt word: normalized label, lower-cased except acronyms."""
        return concept_text(self.labels.get(c, c))


def concept_text(label: str) -> str:
    """``Supreme Court of the United States case`` → ``supreme court of the united states
    case``; acronyms (``COVID``) keep their case. COPEN lower-cases concepts in prompts."""
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower()
                    for w in normalize_label(label).split())


def instances_by_concept(onto: Ontology, tax: Taxonomy
                         ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(each concept's labelled instances: those whose most specific types include it, each
    instance's most specific types)."""
    members: dict[str, list[str]] = defaultdict(list)
    types = {iri: tax.direct_types(inst.types) for iri, inst in onto.instances.items()}
    for iri, inst in sorted(onto.instances.items()):
        if inst.label.strip():
            for t in types[iri]:
                members[t].append(iri)
    return members, types


def top_level_sides(onto: Ontology, tax: Taxonomy, seed: int) -> dict[str, str]:
    """train/test per top-level concept, weighted by the instances under it (each class counts
    at least once). CSJ and CiC share this split, as the paper's tasks share Table 16's."""
    weights: dict[str, int] = defaultdict(int)
    for c in tax.labels:
        for r in tax.roots(c):
            weights[r] += 1
    for inst in onto.instances.values():
        for t in tax.direct_types(inst.types):
            for r in tax.roots(t):
                weights[r] += 1
    names = {r: tax.labels.get(r, r) for r in weights}
    return split_top_levels(weights, seed=seed, names=names)


def side_of(tax: Taxonomy, sides: dict[str, str], concepts: Iterable[str]) -> str | None:
    found = {sides.get(r) for c in concepts for r in tax.roots(c)}
    return found.pop() if len(found) == 1 else None


def sides_note(tax: Taxonomy, sides: dict[str, str]) -> str:
    order = sorted(sides, key=lambda r: (sides[r], tax.labels.get(r, r).lower()))
    return "top-level concepts: " + ", ".join(f"{tax.labels.get(r, r)}={sides[r]}" for r in order)
