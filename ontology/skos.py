"""SKOS thesauri read as a taxonomy: `skos:broader` as `rdfs:subClassOf`.

A thesaurus (UNESCO, AGROVOC, EuroVoc, STW) says what it knows in `skos:broader` and its
relatives, never in `rdfs:subClassOf`, and types every term `skos:Concept`. Read as plain RDF
it gives one memorizing record per concept, "X is a concept", and no hierarchy at all. This
module is the **modelling choice** that turns it into what a user would probe:

* every `skos:Concept` is a class, and `A skos:broader B` (or `B skos:narrower A`, inverted;
  `skos:broaderTransitive`/`narrowerTransitive` likewise) is `A rdfs:subClassOf B`. The
  union is transitively reduced (a `broaderTransitive` shortcut is implied by the chain it
  summarises), so the memorizing answers stay ordered nearest first;
* `skos:Concept`, concept schemes and collections are vocabulary, not classes of things:
  their `rdf:type` statements are dropped (no "X is a concept" record);
* mode ``leaves``: a concept with no narrower concept is an individual of its broader
  concepts instead of a class, so the thesaurus also yields type (TP) records and rdfs9 items.

SKOS itself says less: `broader` is not transitive and mixes generic, partitive and instance
relations ("Paris" broader "France"). The mapping is documented in docs/skos-and-languages.md,
announced in a warning, and switched by `--skos auto|classes|leaves|off`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.ontology.model import OWL_CLASS, RDF_TYPE, RDFS_SUBCLASSOF, SKOS, Triple, is_iri

SKOS_CONCEPT = SKOS + "Concept"
#: predicate → whether it points up (narrower → broader) as written
_HIERARCHY = {SKOS + "broader": True, SKOS + "broaderTransitive": True,
              SKOS + "narrower": False, SKOS + "narrowerTransitive": False}
#: Types that say what a term is in the thesaurus, not what it is about.
VOCABULARY_TYPES = frozenset({
    SKOS_CONCEPT, SKOS + "ConceptScheme", SKOS + "Collection", SKOS + "OrderedCollection",
    "http://purl.org/iso25964/skos-thes#ConceptGroup",
    "http://purl.org/iso25964/skos-thes#ThesaurusArray"})
MODES = ("auto", "classes", "leaves", "off")


@dataclass
class SkosMapping:
    """What the mapping reads into the model: subclass edges, and in ``leaves`` mode types."""

    mode: str
    concepts: set[str] = field(default_factory=set)
    #: (narrower, rdfs:subClassOf, broader) between classes; (leaf, rdf:type, broader) leaves
    triples: list[Triple] = field(default_factory=list)
    dropped_types: int = 0  # rdf:type statements of vocabulary terms taken out

    def warning(self) -> str:
        edges = sum(t[1] == RDFS_SUBCLASSOF for t in self.triples)
        typed = len(self.triples) - edges
        what = f"{edges} skos:broader/narrower edges read as rdfs:subClassOf"
        if typed:
            what += f", {typed} leaf concepts as individuals of their broader concepts"
        return (f"SKOS thesaurus ({len(self.concepts)} concepts): {what}; no 'is a concept' "
                "records (--skos off reads it as plain RDF)")


def skos_mapping(triples: Iterable[Triple], mode: str = "auto") -> SkosMapping | None:
    """The mapping for `mode`, or None when it does not apply.

    ``auto`` maps a concept scheme that has no `rdfs:subClassOf` of its own (an ontology
    that uses SKOS for a few labels keeps its real taxonomy); ``classes``/``leaves`` force it.
    """
    if mode == "off":
        return None
    concepts: set[str] = set()
    up: set[tuple[str, str]] = set()
    has_subclass = False
    for s, p, o in triples:
        if p == RDF_TYPE and o == SKOS_CONCEPT and is_iri(s):
            concepts.add(s)
        elif p in _HIERARCHY and is_iri(s) and is_iri(o) and s != o:
            up.add((s, o) if _HIERARCHY[p] else (o, s))
        elif p == RDFS_SUBCLASSOF:
            has_subclass = True
    if not up or (mode == "auto" and has_subclass):
        return None
    for pair in up:
        concepts.update(pair)
    mapping = SkosMapping("leaves" if mode == "leaves" else "classes", concepts)
    edges = _reduce(up)
    if mapping.mode == "leaves":
        inner = {b for _, b in edges}
        mapping.triples = sorted((a, RDFS_SUBCLASSOF if a in inner else RDF_TYPE, b)
                                 for a, b in edges)
    else:
        mapping.triples = sorted((a, RDFS_SUBCLASSOF, b) for a, b in edges)
    return mapping


def _reduce(up: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The transitive reduction of the broader graph (kept whole where it has a cycle)."""
    import networkx as nx

    graph = nx.DiGraph(list(up))
    if not nx.is_directed_acyclic_graph(graph):
        return up  # the model's cycle check names the cycle
    return set(nx.transitive_reduction(graph).edges())


def apply_mapping(mapping: SkosMapping, types: dict[str, set[str]],
                  edges: dict[str, list[Triple]]) -> None:
    """Put the mapping into the sorted triples the model builder reads (`_Sorted.types` and
    `.edges`): vocabulary types out, concepts typed as classes or as their broader concepts."""
    for iri in list(types):
        vocab = types[iri] & VOCABULARY_TYPES
        if vocab:
            mapping.dropped_types += len(vocab)
            types[iri] -= vocab
            if not types[iri]:
                del types[iri]
            if any(t != SKOS_CONCEPT for t in vocab):
                types.pop(iri, None)  # a scheme's or collection's own types go with it
    leaves = {s for s, p, _ in mapping.triples if p == RDF_TYPE}
    for iri in mapping.concepts - leaves:
        types.setdefault(iri, set()).add(OWL_CLASS)
    for t in mapping.triples:
        if t[1] == RDF_TYPE:
            types.setdefault(t[0], set()).add(t[2])
        else:
            edges[RDFS_SUBCLASSOF].append(t)


# --------------------------------------------------------------------------- plural labels

#: Last words inflect would wrongly singularize ("Mathematics" → "Mathematic").
_KEEP = re.compile(r"(ics|ss|us|is|series|species|news|data|media|lens)$", re.I)


def singular_label(label: str) -> str:
    """A thesaurus's English plural label as a singular noun phrase for "is a" templates
    (UNESCO's "Public libraries" → "Public library"); labels that are not plural, coordinated
    plurals ("Arts and crafts") and words ending like mass nouns ("Mathematics") stay."""
    head = label.split(" of ", 1)[0].split()  # "Sciences of education": the head noun
    if not head or " and " in f" {label.lower()} " or _KEEP.search(head[-1]):
        return label
    from kgprobe.ontology.labels import inflect_engine

    singular = inflect_engine().singular_noun(label)
    return singular if isinstance(singular, str) and singular else label


def singular_labels(labels: dict[str, str | None], concepts: set[str]) -> dict[str, str | None]:
    """`labels` with every concept's label singular (English thesauri label concepts in the
    plural, the guidelines' convention for countable terms)."""
    return {iri: singular_label(text) if text and iri in concepts else text
            for iri, text in labels.items()}
