"""The typed `Ontology` built from RDF triples (a parsed file, or the store's union graph)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

import networkx as nx
from kgprobe.ontology.labels import pick_label
from kgprobe.ontology.model import (
    CLASS_TYPES,
    KGP_PATTERN,
    META_TYPES,
    OWL,
    OWL_EQUIVALENT_PROPERTY,
    PROPERTY_TYPES,
    RDF,
    RDF_TYPE,
    RDFS,
    RDFS_DOMAIN,
    RDFS_LABEL,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    SKOS,
    SKOS_PREFLABEL,
    Instance,
    OntClass,
    Ontology,
    OntProperty,
    Triple,
    is_iri,
    is_literal,
    parse_literal,
)

#: Predicates whose triples describe the schema or labels, not facts about instances.
_SCHEMA_NAMESPACES = (RDF, RDFS, OWL, SKOS, KGP_PATTERN.rsplit("#", 1)[0])


@dataclass
class _Sorted:
    """The triples of a source, sorted by what the model builder does with them."""

    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    edges: dict[str, list[Triple]] = field(default_factory=lambda: defaultdict(list))
    rdfs_labels: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    skos_labels: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    patterns: dict[str, str] = field(default_factory=dict)
    other: list[Triple] = field(default_factory=list)

    def label(self, iri: str) -> str:
        return pick_label(self.rdfs_labels.get(iri, []), self.skos_labels.get(iri, []), iri)


def _sort(triples: Iterable[Triple]) -> _Sorted:
    out = _Sorted()
    for t in triples:
        s, p, o = t
        if p == RDF_TYPE:
            out.types[s].add(o)
        elif p in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF, RDFS_DOMAIN, RDFS_RANGE,
                   OWL_EQUIVALENT_PROPERTY):
            out.edges[p].append(t)
        elif p == RDFS_LABEL and is_literal(o):
            out.rdfs_labels[s].append(parse_literal(o))
        elif p == SKOS_PREFLABEL and is_literal(o):
            out.skos_labels[s].append(parse_literal(o))
        elif p == KGP_PATTERN and is_literal(o):
            out.patterns[s] = parse_literal(o)[0]
        else:
            out.other.append(t)
    return out


def _schema_terms(src: _Sorted) -> tuple[set[str], set[str], int]:
    """(class IRIs, property IRIs, blank-node axioms ignored) from types and schema edges."""
    class_iris = {s for s, ts in src.types.items() if ts & CLASS_TYPES and is_iri(s)}
    prop_iris = {s for s, ts in src.types.items() if ts & PROPERTY_TYPES and is_iri(s)}
    anonymous = 0
    for s, _, o in src.edges[RDFS_SUBCLASSOF]:
        if is_iri(s) and is_iri(o):
            class_iris.update((s, o))
        else:
            anonymous += 1
    for pred in (RDFS_DOMAIN, RDFS_RANGE):
        for s, _, o in src.edges[pred]:
            if is_iri(s):
                prop_iris.add(s)
            if is_iri(o):
                class_iris.add(o)
            else:
                anonymous += 1
    for s, _, o in src.edges[RDFS_SUBPROPERTYOF]:
        prop_iris.update(x for x in (s, o) if is_iri(x))
    return class_iris, prop_iris, anonymous


def _facts(src: _Sorted, class_iris: set[str], prop_iris: set[str],
           instance_iris: set[str]) -> list[Triple]:
    """Non-schema triples about instances, or using a declared property between terms that
    are not themselves classes or properties. Their IRI ends join `instance_iris`."""
    schema_terms = class_iris | prop_iris
    facts = [
        t for t in src.other
        if not t[1].startswith(_SCHEMA_NAMESPACES) and t[0] not in schema_terms
        and (t[0] in instance_iris or t[1] in prop_iris)
    ]
    for s, _, o in facts:
        instance_iris.add(s)
        if is_iri(o) and not is_literal(o) and o not in schema_terms:
            instance_iris.add(o)
    return facts


def _link(onto: Ontology, src: _Sorted) -> None:
    """Superclasses, domains, ranges, superproperties and equivalences of named terms."""
    for s, _, o in src.edges[RDFS_SUBCLASSOF]:
        if is_iri(s) and is_iri(o) and o not in onto.classes[s].parents:
            onto.classes[s].parents.append(o)
    for pred, attr in ((RDFS_DOMAIN, "domain"), (RDFS_RANGE, "range"),
                       (RDFS_SUBPROPERTYOF, "parents"), (OWL_EQUIVALENT_PROPERTY, "same_as")):
        for s, _, o in src.edges[pred]:
            if s in onto.properties and is_iri(o):
                getattr(onto.properties[s], attr).append(o)


def build_ontology(name: str, triples: Iterable[Triple]) -> Ontology:
    """Build the typed model from RDF triples (a parsed file, or the store's union graph).

    Classes come from ``rdfs:Class``/``owl:Class``, named ``rdfs:subClassOf`` ends,
    domain/range objects and instance types; properties from the RDF/OWL property types
    and domain/range/subPropertyOf; instances are subjects of ``rdf:type`` with a
    non-schema type; facts are other triples about instances. Superclasses that are blank
    nodes (OWL restrictions, unions) are ignored and counted in a warning.
    """
    src = _sort(triples)
    class_iris, prop_iris, anonymous = _schema_terms(src)
    types = src.types
    instance_iris = {s for s, ts in types.items() if is_iri(s) and ts - META_TYPES}
    for s in instance_iris:
        class_iris.update(t for t in types[s] - META_TYPES if is_iri(t))
    facts = _facts(src, class_iris, prop_iris, instance_iris)
    onto = Ontology(name=name)
    # An OWL file may type a term both as class and as individual (punning); keep both.
    for iri in sorted(class_iris):
        onto.classes[iri] = OntClass(iri, src.label(iri))
    for iri in sorted(prop_iris):
        onto.properties[iri] = OntProperty(iri, src.label(iri), pattern=src.patterns.get(iri))
    for iri in sorted(instance_iris):
        onto.instances[iri] = Instance(
            iri, src.label(iri), sorted(t for t in types[iri] - META_TYPES if is_iri(t)))
    _link(onto, src)
    onto.facts.extend(facts)
    if anonymous:
        onto.warnings.append(f"{anonymous} subClassOf/domain/range axiom(s) with a blank node "
                             "(OWL restriction or class expression) ignored")
    check_cycles(onto)
    return onto


def check_cycles(onto: Ontology) -> None:
    """Cyclic hierarchies load (RDFS allows them) but each cycle is named in a warning."""
    for kind, table in (("subclass", onto.classes), ("subproperty", onto.properties)):
        graph = nx.DiGraph((iri, parent) for iri, node in table.items() for parent in node.parents)
        for component in nx.strongly_connected_components(graph):
            if len(component) > 1 or any(graph.has_edge(n, n) for n in component):
                names = " → ".join(sorted(onto.label(n) for n in component))
                onto.warnings.append(f"cyclic {kind} hierarchy: {names}")
