"""The typed ontology model shared by every layer.

Terms follow one convention across kgprobe (the store adapter, the RDFS engine and the
probe generator all speak it), because plain strings hash and compare fastest:
an IRI is the bare IRI, a blank node is ``_:`` + its id, a literal is in N-Triples
syntax (it starts with ``"``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

from kgprobe.ontology.labels import local_name_label

Triple = tuple[str, str, str]

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
XSD = "http://www.w3.org/2001/XMLSchema#"
#: kgprobe's own vocabulary (verbalization patterns) and minted IRIs live here.
KGP = "https://w3id.org/kgprobe/vocab#"
#: Where IRIs are minted for OntoProbe terms the data gives only by label.
ONTOPROBE_NS = "https://w3id.org/kgprobe/ontoprobe/"

RDF_TYPE = RDF + "type"
RDF_PROPERTY = RDF + "Property"
RDFS_CLASS = RDFS + "Class"
RDFS_SUBCLASSOF = RDFS + "subClassOf"
RDFS_SUBPROPERTYOF = RDFS + "subPropertyOf"
RDFS_DOMAIN = RDFS + "domain"
RDFS_RANGE = RDFS + "range"
RDFS_LABEL = RDFS + "label"
SKOS_PREFLABEL = SKOS + "prefLabel"
OWL_CLASS = OWL + "Class"
OWL_THING = OWL + "Thing"
OWL_OBJECT_PROPERTY = OWL + "ObjectProperty"
OWL_DATATYPE_PROPERTY = OWL + "DatatypeProperty"
OWL_EQUIVALENT_PROPERTY = OWL + "equivalentProperty"
KGP_PATTERN = KGP + "pattern"

CLASS_TYPES = frozenset({RDFS_CLASS, OWL_CLASS})
PROPERTY_TYPES = frozenset(
    {RDF_PROPERTY, OWL_OBJECT_PROPERTY, OWL_DATATYPE_PROPERTY, OWL + "AnnotationProperty",
     OWL + "FunctionalProperty", OWL + "TransitiveProperty", OWL + "SymmetricProperty",
     OWL + "InverseFunctionalProperty", OWL + "AsymmetricProperty", OWL + "ReflexiveProperty",
     OWL + "IrreflexiveProperty", OWL + "OntologyProperty", OWL + "DeprecatedProperty"}
)
#: rdf:type objects that say what a term *is* in the schema, not which class an instance belongs to.
META_TYPES = CLASS_TYPES | PROPERTY_TYPES | frozenset(
    {OWL + "Ontology", OWL + "Restriction", RDFS + "Datatype", OWL + "NamedIndividual",
     OWL + "AllDisjointClasses", OWL + "AllDifferent", OWL + "Axiom"}
)


def is_iri(term: str) -> bool:
    return not term.startswith(("_:", '"'))


def is_literal(term: str) -> bool:
    return term.startswith('"')


def nt_term(term: str) -> str:
    """A term as N-Triples (and SPARQL) write it: IRIs in angle brackets, the rest as is."""
    return term if term.startswith(('"', "_:")) else f"<{term}>"


def literal(text: str, lang: str | None = "en") -> str:
    """Encode a plain or language-tagged literal in N-Triples syntax."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"@{lang}' if lang else f'"{escaped}"'


_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'",
          "\\": "\\"}


def _unescape(m: re.Match) -> str:
    short, long, char = m.groups()
    if short or long:
        return chr(int(short or long, 16))
    return _ECHAR.get(char, m.group(0))


def parse_literal(term: str) -> tuple[str, str | None]:
    """Decode an N-Triples literal into (lexical form, language tag or None).

    Every N-Triples escape is undone (``\\t``, ``\\uXXXX`` …: pyoxigraph writes a tab or a
    control character that way), in one pass so an escaped backslash stays one."""
    end = term.rfind('"')
    body, tail = term[1:end], term[end + 1:]
    text = _ESCAPE.sub(_unescape, body) if "\\" in body else body
    return text, (tail[1:].lower() if tail.startswith("@") else None)


@dataclass
class OntClass:
    iri: str
    label: str
    parents: list[str] = field(default_factory=list)  # direct named superclasses
    #: A label's trailing parenthetical ("unit of temporal duration" of "Week (unit of
    #: temporal duration)"): it tells homonyms apart but is no part of a sentence.
    disambiguator: str | None = None


@dataclass
class OntProperty:
    iri: str
    label: str
    domain: list[str] = field(default_factory=list)
    range: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)  # direct superproperties
    #: Verbalization between a subject and an object, e.g. ``[X] is a player at [Y] .``
    pattern: str | None = None
    same_as: list[str] = field(default_factory=list)  # other IRIs of the same property


@dataclass
class Instance:
    iri: str
    label: str
    types: list[str] = field(default_factory=list)  # asserted (direct) classes
    #: a trailing parenthetical of the label, kept apart from it (`wording.word_labels`)
    disambiguator: str | None = None


@dataclass
class Ontology:
    """Classes, properties, instances and facts of one source, keyed by IRI.

    `warnings` collects what a loader noticed but kept (cycles, inconsistent chains,
    ignored restrictions) so the caller can report it instead of it vanishing.
    """

    name: str
    classes: dict[str, OntClass] = field(default_factory=dict)
    properties: dict[str, OntProperty] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    facts: list[Triple] = field(default_factory=list)  # instance-level (s, p, o), objects may be literals
    warnings: list[str] = field(default_factory=list)
    #: Terms taken out of the model (iri → reason: id-like, datatype, top, meta), and their
    #: counts per reason and kind (class/property/instance), for summaries.
    excluded: dict[str, str] = field(default_factory=dict)
    excluded_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: iri → (kind, label) of each excluded term, as it was before it was taken out: the
    #: rows of `excluded.tsv` (`exclusions.excluded_rows`).
    excluded_terms: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: relation → subjects whose every answer was excluded (an instance typed only
    #: owl:Thing, a property whose only range is xsd:integer): no record is made for them.
    emptied: Counter = field(default_factory=Counter)
    #: Sound RDFS edges the builder kept from OWL expressions (named conjuncts, union
    #: members) and schema.org includes when on: the RDFS closure reasons with them too.
    closure_edges: list[Triple] = field(default_factory=list)
    #: The thesaurus statements `ontology/skos.py` read as taxonomy (skos:broader as
    #: rdfs:subClassOf): asserted by the source, though not in these words.
    skos_triples: list[Triple] = field(default_factory=list)
    #: How a SKOS thesaurus was read (`ontology.skos.SkosMapping`): its mode, and in ``auto``
    #: the evidence that the scheme is taxonomic or topical; None for no thesaurus.
    skos: Any = None
    #: The ontology header's nodes (owl:Ontology subjects, their blank nodes): their triples
    #: are no knowledge, and the closure items are drawn from never sees them.
    header: frozenset[str] = frozenset()
    #: IRI prefixes probes keep to (`--namespace`; empty: every term). The model and the
    #: closure keep the imported terms; only subjects and answers are held to these.
    namespaces: tuple[str, ...] = ()

    def in_namespace(self, iri: str) -> bool:
        """Whether a probe may ask about or answer with `iri` (`namespaces`)."""
        return not self.namespaces or iri.startswith(self.namespaces)

    def label(self, iri: str) -> str:
        for table in (self.classes, self.properties, self.instances):
            if iri in table:
                return table[iri].label
        return local_name_label(iri)

    def triples(self) -> Iterator[Triple]:
        """The RDF triples that represent this model (what the store holds for it)."""
        for c in self.classes.values():
            yield c.iri, RDF_TYPE, OWL_CLASS
            yield c.iri, RDFS_LABEL, literal(c.label)
            for parent in c.parents:
                yield c.iri, RDFS_SUBCLASSOF, parent
        for p in self.properties.values():
            yield p.iri, RDF_TYPE, RDF_PROPERTY
            yield p.iri, RDFS_LABEL, literal(p.label)
            for d in p.domain:
                yield p.iri, RDFS_DOMAIN, d
            for r in p.range:
                yield p.iri, RDFS_RANGE, r
            for parent in p.parents:
                yield p.iri, RDFS_SUBPROPERTYOF, parent
            if p.pattern:
                yield p.iri, KGP_PATTERN, literal(p.pattern)
            for other in p.same_as:
                yield p.iri, OWL_EQUIVALENT_PROPERTY, other
        for i in self.instances.values():
            yield i.iri, RDFS_LABEL, literal(i.label)
            for t in i.types:
                yield i.iri, RDF_TYPE, t
        yield from self.facts
