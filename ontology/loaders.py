"""Loaders: the OntoProbe JSON pair and any RDF file rdflib parses.

Both produce a `Source`: the typed `Ontology` plus the exact triples the store should
hold for it. RDF files keep every parsed triple (nothing is lost by going through the
model); the JSON pair is turned into triples through the model.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

import networkx as nx
from kgprobe.errors import OntologyError
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

#: Where IRIs are minted for OntoProbe terms the data gives only by label.
ONTOPROBE_NS = "https://w3id.org/kgprobe/ontoprobe/"

#: Predicates whose triples describe the schema or labels, not facts about instances.
_SCHEMA_NAMESPACES = (RDF, RDFS, OWL, SKOS, KGP_PATTERN.rsplit("#", 1)[0])

#: File suffix → (pyoxigraph format name or None, rdflib format name).
RDF_SUFFIXES = {
    ".ttl": ("TURTLE", "turtle"), ".turtle": ("TURTLE", "turtle"), ".nt": ("N_TRIPLES", "nt"),
    ".ntriples": ("N_TRIPLES", "nt"), ".n3": ("N3", "n3"), ".owl": ("RDF_XML", "xml"),
    ".rdf": ("RDF_XML", "xml"), ".xml": ("RDF_XML", "xml"), ".jsonld": ("JSON_LD", "json-ld"),
    ".json-ld": ("JSON_LD", "json-ld"), ".trig": ("TRIG", "trig"), ".nq": ("N_QUADS", "nquads"),
    ".trix": (None, "trix"), ".hext": (None, "hext"),
}


@dataclass
class Source:
    """One loadable source: its model and the triples that represent it in the store."""

    name: str
    path: str
    ontology: Ontology
    triples: list[Triple]


def bundled_ontology_dir() -> Path:
    """The OntoProbe ontology shipped with kgprobe (see ontology/data/README.md)."""
    return Path(str(resources.files("kgprobe.ontology") / "data"))


def bundled_source() -> Source:
    """The default ontology, loaded into the graph named 'ontoprobe'."""
    return load_ontoprobe(bundled_ontology_dir(), name="ontoprobe")


def load_source(path: str | Path) -> Source:
    """Load a directory with class.json + property.json, or an RDF file."""
    p = Path(path)
    if p.is_dir():
        return load_ontoprobe(p)
    if not p.exists():
        raise OntologyError(f"{p}: no such file or directory; give an RDF file or a directory "
                            "holding class.json and property.json")
    return load_rdf(p)


# --------------------------------------------------------------------------- OntoProbe JSON


def _mint(kind: str, label: str) -> str:
    return f"{ONTOPROBE_NS}{kind}/{quote(label.strip().replace(' ', '_'), safe='')}"


def _read_json(path: Path) -> list[dict]:
    if not path.is_file():
        raise OntologyError(f"{path}: missing; an OntoProbe ontology directory needs both "
                            "class.json and property.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise OntologyError(f"{path}: not valid JSON ({err}); fix or re-export the file") from None
    if not isinstance(data, list):
        raise OntologyError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def load_ontoprobe(directory: str | Path, name: str | None = None) -> Source:
    """Load the OntoProbe pair (`class.json`, `property.json`).

    `class.json` lists each class's whole superclass chain, specific → general. Only the
    direct edge (the first element) is stored: the rest must follow from the parents'
    own chains, and every chain that does not is reported in `Ontology.warnings`.
    """
    directory = Path(directory)
    classes_raw = _read_json(directory / "class.json")
    props_raw = _read_json(directory / "property.json")
    onto = Ontology(name=name or directory.name)
    try:
        class_by_label = _ontoprobe_classes(onto, classes_raw)
        _ontoprobe_properties(onto, props_raw, class_by_label)
    except (KeyError, TypeError, AttributeError) as err:
        raise OntologyError(f"{directory}: unexpected record layout ({err!r}); expected the "
                            "OntoProbe class.json/property.json schema") from None
    _check_cycles(onto)
    return Source(onto.name, str(directory), onto, list(onto.triples()))


def _ontoprobe_classes(onto: Ontology, records: list[dict]) -> dict[str, str]:
    """Add the classes and typed instances; return the label → class IRI index."""
    by_label: dict[str, str] = {}
    for rec in records:
        iri, label = rec["rdfs:Class"], rec["rdfs:label"]
        onto.classes[iri] = OntClass(iri, label)
        by_label[label] = iri
    chains: dict[str, list[str]] = {r["rdfs:label"]: list(r["rdfs:subClassOf"] or []) for r in records}
    minted: set[str] = set()

    def class_iri(label: str) -> str:
        if label not in by_label:
            by_label[label] = _mint("class", label)
            onto.classes[by_label[label]] = OntClass(by_label[label], label)
            minted.add(label)
        return by_label[label]

    for rec in records:
        chain = chains[rec["rdfs:label"]]
        cls = onto.classes[rec["rdfs:Class"]]
        if chain:
            cls.parents.append(class_iri(chain[0]))
        # A class known only from chains gets its direct superclass from the chain too.
        for here, above in zip(chain, chain[1:]):
            if here in minted and not onto.classes[class_iri(here)].parents:
                onto.classes[class_iri(here)].parents.append(class_iri(above))
        for inst_label in rec["is rdf:type of"] or []:
            iri = _mint("instance", inst_label)
            inst = onto.instances.setdefault(iri, Instance(iri, inst_label))
            if cls.iri not in inst.types:
                inst.types.append(cls.iri)
    if minted:
        onto.warnings.append(f"{len(minted)} superclass label(s) name no class in class.json, "
                             f"minted: {', '.join(sorted(minted))}")
    # The chain the direct edges imply, compared with the one the data lists.
    for label, chain in chains.items():
        implied = _first_parent_chain(onto.classes, by_label[label])
        if implied != chain:
            onto.warnings.append(f"class '{label}': listed chain {chain} does not follow from "
                                 f"its direct superclass, which implies {implied}")
    return by_label


def _ontoprobe_properties(onto: Ontology, records: list[dict], by_label: dict[str, str]) -> None:
    prop_by_label: dict[str, OntProperty] = {}
    for rec in records:
        iris = _as_list(rec["rdf:Property"])
        # Prefer the DBpedia IRI the data carries; the others are kept as equivalents.
        iris.sort(key=lambda i: "dbpedia.org" not in i)
        prop = OntProperty(iris[0], rec["rdfs:label"], pattern=rec.get("pattern"),
                           same_as=iris[1:])
        prop_by_label[prop.label] = prop
        onto.properties[prop.iri] = prop
    minted_classes: list[str] = []
    for rec in records:
        prop = prop_by_label[rec["rdfs:label"]]
        for key, target in (("rdfs:domain", prop.domain), ("rdf:range", prop.range)):
            for label in _as_list(rec.get(key)):
                if label not in by_label:
                    by_label[label] = _mint("class", label)
                    onto.classes[by_label[label]] = OntClass(by_label[label], label)
                    minted_classes.append(label)
                target.append(by_label[label])
        # property.json gives each property the flat set of its superproperties (not a
        # chain: 'part of' follows 'affiliation' in one and precedes it in another).
        for sup_label, pattern in (rec.get("rdfs:subPropertyOf") or {}).items():
            if sup_label not in prop_by_label:
                sup = OntProperty(_mint("property", sup_label), sup_label, pattern=pattern)
                prop_by_label[sup_label] = sup
                onto.properties[sup.iri] = sup
            prop.parents.append(prop_by_label[sup_label].iri)
        for subj, obj in rec.get("example") or []:
            s, o = _mint("instance", subj), _mint("instance", obj)
            onto.instances.setdefault(s, Instance(s, subj))
            onto.instances.setdefault(o, Instance(o, obj))
            onto.facts.append((s, prop.iri, o))
    if minted_classes:
        onto.warnings.append(f"domain/range label(s) name no class in class.json, minted: "
                             f"{', '.join(sorted(set(minted_classes)))}")


def _first_parent_chain(table: dict, iri: str) -> list[str]:
    """Labels along first parents: the chain a direct edge implies."""
    implied, seen = [], set()
    while table[iri].parents and iri not in seen:
        seen.add(iri)
        iri = table[iri].parents[0]
        implied.append(table[iri].label)
    return implied


# --------------------------------------------------------------------------- RDF files


def rdf_format(path: Path) -> tuple[str | None, str]:
    fmt = RDF_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise OntologyError(f"{path}: unknown RDF file type '{path.suffix}'; use one of "
                            f"{', '.join(sorted(RDF_SUFFIXES))}")
    return fmt


def _rdflib_term(node) -> str:
    from rdflib import BNode, Literal

    if isinstance(node, BNode):
        return f"_:{node}"
    if isinstance(node, Literal):
        return node.n3()
    return str(node)


def _rdflib_triples(path: Path, fmt: str) -> list[Triple]:
    import rdflib

    graph = rdflib.Dataset(default_union=True)  # quad formats (TriX) fill named graphs
    try:
        graph.parse(str(path), format=fmt)
    except Exception as err:  # rdflib raises many unrelated types for bad syntax
        text = " ".join(str(err).split())
        line = re.search(r"line (\d+)", text)
        line = line.group(1) if line else getattr(err, "getLineNumber", lambda: None)()
        raise _malformed(path, line, text) from None
    return sorted({(_rdflib_term(s), _rdflib_term(p), _rdflib_term(o))
                   for s, p, o, _ in graph.quads((None, None, None, None))})


def _malformed(path: Path, line, text: str) -> OntologyError:
    where = f" line {line}:" if line else ":"
    text = text if len(text) <= 200 else text[:200] + "…"
    return OntologyError(f"{path}:{where} malformed RDF ({text}); fix the file and load it again")


def parse_rdf(path: Path) -> list[Triple]:
    """Every distinct triple of an RDF file (named graphs of TriG/N-Quads are merged).

    pyoxigraph parses, rdflib only reads what pyoxigraph cannot: pyoxigraph read
    dbpedia-ontology.ttl (34,680 triples) in 0.06 s against rdflib's 1.31 s here, and
    reports line and column of syntax errors where rdflib often reports neither.
    """
    import pyoxigraph as ox

    ox_format, rdflib_format = rdf_format(path)
    if ox_format is None:
        return _rdflib_triples(path, rdflib_format)
    try:
        triples = {
            (ox_term(q.subject), q.predicate.value, ox_term(q.object))
            for q in ox.parse(path=str(path), format=getattr(ox.RdfFormat, ox_format))
        }
    except SyntaxError as err:
        if err.lineno is None:  # RDF/XML errors carry no position: ask rdflib where
            _rdflib_triples(path, rdflib_format)
        raise _malformed(path, err.lineno, str(err.msg)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise OntologyError(f"{path}: cannot read ({err}); check the path and encoding") from None
    return sorted(triples)


def ox_term(term) -> str:
    """A pyoxigraph term in the model's str convention (IRI bare, ``_:b``, N-Triples literal)."""
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term)


def load_rdf(path: str | Path, name: str | None = None) -> Source:
    """Load any RDF file and build the model from its triples."""
    path = Path(path)
    triples = parse_rdf(path)
    onto = build_ontology(name or path.stem, triples)
    return Source(onto.name, str(path), onto, triples)


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
    _check_cycles(onto)
    return onto


def _check_cycles(onto: Ontology) -> None:
    """Cyclic hierarchies load (RDFS allows them) but each cycle is named in a warning."""
    for kind, table in (("subclass", onto.classes), ("subproperty", onto.properties)):
        graph = nx.DiGraph((iri, parent) for iri, node in table.items() for parent in node.parents)
        for component in nx.strongly_connected_components(graph):
            if len(component) > 1 or any(graph.has_edge(n, n) for n in component):
                names = " → ".join(sorted(onto.label(n) for n in component))
                onto.warnings.append(f"cyclic {kind} hierarchy: {names}")
