"""The typed `Ontology` built from RDF triples (a parsed file, or the store's union graph)."""

from __future__ import annotations

from collections import defaultdict
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


def build_ontology(name: str, triples: Iterable[Triple]) -> Ontology:
    """Build the typed model from RDF triples (a parsed file, or the store's union graph).

    Classes come from ``rdfs:Class``/``owl:Class``, named ``rdfs:subClassOf`` ends,
    domain/range objects and instance types; properties from the RDF/OWL property types
    and domain/range/subPropertyOf; instances are subjects of ``rdf:type`` with a
    non-schema type; facts are other triples about instances. Superclasses that are blank
    nodes (OWL restrictions, unions) are ignored and counted in a warning.
    """
    types: dict[str, set[str]] = defaultdict(set)
    edges: dict[str, list[Triple]] = defaultdict(list)
    rdfs_labels: dict[str, list] = defaultdict(list)
    skos_labels: dict[str, list] = defaultdict(list)
    patterns: dict[str, str] = {}
    other: list[Triple] = []
    for t in triples:
        s, p, o = t
        if p == RDF_TYPE:
            types[s].add(o)
        elif p in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF, RDFS_DOMAIN, RDFS_RANGE,
                   OWL_EQUIVALENT_PROPERTY):
            edges[p].append(t)
        elif p == RDFS_LABEL and is_literal(o):
            rdfs_labels[s].append(parse_literal(o))
        elif p == SKOS_PREFLABEL and is_literal(o):
            skos_labels[s].append(parse_literal(o))
        elif p == KGP_PATTERN and is_literal(o):
            patterns[s] = parse_literal(o)[0]
        else:
            other.append(t)

    def label(iri: str) -> str:
        return pick_label(rdfs_labels.get(iri, []), skos_labels.get(iri, []), iri)

    onto = Ontology(name=name)
    class_iris = {s for s, ts in types.items() if ts & CLASS_TYPES and is_iri(s)}
    prop_iris = {s for s, ts in types.items() if ts & PROPERTY_TYPES and is_iri(s)}
    anonymous = 0
    for s, _, o in edges[RDFS_SUBCLASSOF]:
        if is_iri(s) and is_iri(o):
            class_iris.update((s, o))
        else:
            anonymous += 1
    for pred in (RDFS_DOMAIN, RDFS_RANGE):
        for s, _, o in edges[pred]:
            if is_iri(s):
                prop_iris.add(s)
            if is_iri(o):
                class_iris.add(o)
            else:
                anonymous += 1
    for s, _, o in edges[RDFS_SUBPROPERTYOF]:
        prop_iris.update(x for x in (s, o) if is_iri(x))
    instance_iris = {s for s, ts in types.items() if is_iri(s) and ts - META_TYPES}
    for s in instance_iris:
        class_iris.update(t for t in types[s] - META_TYPES if is_iri(t))
    # Facts: non-schema triples about instances, or using a declared property between
    # terms that are not themselves classes or properties. Their IRI ends are instances.
    schema_terms = class_iris | prop_iris
    facts = [
        t for t in other
        if not t[1].startswith(_SCHEMA_NAMESPACES) and t[0] not in schema_terms
        and (t[0] in instance_iris or t[1] in prop_iris)
    ]
    for s, _, o in facts:
        instance_iris.add(s)
        if is_iri(o) and not is_literal(o) and o not in schema_terms:
            instance_iris.add(o)
    # An OWL file may type a term both as class and as individual (punning); keep both.
    for iri in sorted(class_iris):
        onto.classes[iri] = OntClass(iri, label(iri))
    for iri in sorted(prop_iris):
        onto.properties[iri] = OntProperty(iri, label(iri), pattern=patterns.get(iri))
    for iri in sorted(instance_iris):
        onto.instances[iri] = Instance(
            iri, label(iri), sorted(t for t in types[iri] - META_TYPES if is_iri(t)))
    for s, _, o in edges[RDFS_SUBCLASSOF]:
        if is_iri(s) and is_iri(o) and o not in onto.classes[s].parents:
            onto.classes[s].parents.append(o)
    for pred, attr in ((RDFS_DOMAIN, "domain"), (RDFS_RANGE, "range"),
                       (RDFS_SUBPROPERTYOF, "parents"), (OWL_EQUIVALENT_PROPERTY, "same_as")):
        for s, _, o in edges[pred]:
            if s in onto.properties and is_iri(o):
                getattr(onto.properties[s], attr).append(o)
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
