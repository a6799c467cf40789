"""The typed `Ontology` built from RDF triples (a parsed file, or the store's union graph)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import Iterable

from kgprobe.ontology.exclusions import (
    ANNOTATION,
    DEPRECATED,
    HEADER,
    KEEPABLE,
    WHY,
    Exclusions,
    deprecated_terms,
    header_nodes,
    load_exclusions,
)
from kgprobe.ontology.labels import (
    LABEL_PROPERTIES,
    common_case,
    lowered_words,
    pick_label,
)
from kgprobe.ontology.languages import (
    ENGLISH,
    MissingLabels,
    language_labels,
    localize_patterns,
    prompt_language,
)
from kgprobe.ontology.model import (
    CLASS_TYPES,
    KGP_PATTERN,
    META_TYPES,
    ONTOPROBE_NS,
    OWL,
    OWL_EQUIVALENT_PROPERTY,
    PROPERTY_TYPES,
    RDF,
    RDF_TYPE,
    RDFS,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    SKOS,
    Instance,
    OntClass,
    Ontology,
    OntProperty,
    Triple,
    is_iri,
    is_literal,
    parse_literal,
)
from kgprobe.ontology.owl_axioms import lower
from kgprobe.ontology.prune import RELATIONS, exclude_terms
from kgprobe.ontology.skos import SkosMapping, apply_mapping, singular_labels, skos_mapping
from kgprobe.ontology.wording import word_labels

#: Predicates whose triples describe the schema or labels, not facts about instances.
_SCHEMA_NAMESPACES = (RDF, RDFS, OWL, SKOS, KGP_PATTERN.rsplit("#", 1)[0])


@dataclass(frozen=True)
class BuildOptions:
    """How the model is read from triples (`--lang`, `--schema-includes`, `--exclusions`)."""

    langs: tuple[str, ...] = ("en",)
    schema_includes: bool | None = None  # None: on when the data uses schema.org
    exclusions: Exclusions | None = None  # None: the bundled list
    #: Split labels written as identifiers (``EUEnergyEfficiencyEnumeration``) into words.
    #: None: yes, except for the bundled OntoProbe data, whose labels are the paper's.
    split_identifier_labels: bool | None = None
    #: SKOS thesauri (`ontology/skos.py`): auto | classes | leaves | off
    skos: str = "auto"
    #: Keep annotation properties / deprecated terms (`--keep-annotations`,
    #: `--keep-deprecated`); by default they are left out and counted.
    keep_annotations: bool = False
    keep_deprecated: bool = False
    #: Keep upper-level roots as answers (`--keep-roots`; `exclusions.ROOT`).
    keep_roots: bool = False
    #: IRI prefixes the probes keep to (`--namespace`): the ontology's own terms, while the
    #: closure still reasons through what it imports (`Ontology.namespaces`).
    namespaces: tuple[str, ...] = ()

    @property
    def kept(self) -> frozenset[str]:
        """The exclusion reasons turned back on."""
        return frozenset(r for r, keep in zip(KEEPABLE, (
            self.keep_annotations, self.keep_deprecated, self.keep_roots)) if keep)


_LABEL_PROPERTIES = frozenset(LABEL_PROPERTIES)


@dataclass
class _Sorted:
    """The triples of a source, sorted by what the model builder does with them."""

    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    edges: dict[str, list[Triple]] = field(default_factory=lambda: defaultdict(list))
    labels: dict[str, dict[str, list]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    patterns: dict[str, str] = field(default_factory=dict)
    other: list[Triple] = field(default_factory=list)

    def label(self, iri: str, langs: tuple[str, ...], split: bool, names: bool) -> str | None:
        return pick_label(self.labels.get(iri, {}), iri, langs, split, names)


def _sort(triples: Iterable[Triple]) -> _Sorted:
    out = _Sorted()
    for t in triples:
        s, p, o = t
        if p == RDF_TYPE:
            out.types[s].add(o)
        elif p in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF, RDFS_DOMAIN, RDFS_RANGE,
                   OWL_EQUIVALENT_PROPERTY):
            out.edges[p].append(t)
        elif p in _LABEL_PROPERTIES and is_literal(o):
            out.labels[s][p].append(parse_literal(o))
        elif p == KGP_PATTERN and is_literal(o):
            out.patterns[s] = parse_literal(o)[0]
        else:
            out.other.append(t)
    return out


def _is_meta_type(t: str) -> bool:
    """An rdf:type object saying what a term is in the schema (owl:IrreflexiveProperty,
    owl:DeprecatedClass …), not a class its subject is an instance of; owl:Thing and
    rdfs:Resource are classes (of everything), left to the `top` exclusion."""
    return t in META_TYPES or (t.startswith((OWL, RDF, RDFS))
                               and t not in (OWL + "Thing", RDFS + "Resource"))


def _schema_terms(src: _Sorted) -> tuple[set[str], set[str]]:
    """(class IRIs, property IRIs) from types and schema edges (OWL expressions are counted
    by `owl_axioms.lower`)."""
    class_iris = {s for s, ts in src.types.items() if ts & CLASS_TYPES and is_iri(s)}
    prop_iris = {s for s, ts in src.types.items() if ts & PROPERTY_TYPES and is_iri(s)}
    for s, _, o in src.edges[RDFS_SUBCLASSOF]:
        if is_iri(s) and is_iri(o):
            class_iris.update((s, o))
    for pred in (RDFS_DOMAIN, RDFS_RANGE):
        for s, _, o in src.edges[pred]:
            if is_iri(s):
                prop_iris.add(s)
            if is_iri(o):
                class_iris.add(o)
    for s, _, o in src.edges[RDFS_SUBPROPERTYOF]:
        prop_iris.update(x for x in (s, o) if is_iri(x))
    return class_iris, prop_iris


def _facts(src: _Sorted, class_iris: set[str], prop_iris: set[str],
           instance_iris: set[str], annotations: set[str]) -> list[Triple]:
    """Non-schema triples about instances, or using a declared property between terms that
    are not themselves classes or properties. Their IRI ends join `instance_iris`. A value of
    an `annotations` property is no fact (BFO's axiom IDs, an editor's ORCID)."""
    schema_terms = class_iris | prop_iris
    facts = [
        t for t in src.other
        if not t[1].startswith(_SCHEMA_NAMESPACES) and t[0] not in schema_terms
        and (t[0] in instance_iris or t[1] in prop_iris) and t[1] not in annotations
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


def build_ontology(name: str, triples: Iterable[Triple],
                   options: BuildOptions | None = None) -> Ontology:
    """Build the typed model from RDF triples (a parsed file, or the store's union graph).

    Classes come from ``rdfs:Class``/``owl:Class``, named ``rdfs:subClassOf`` ends,
    domain/range objects and instance types; properties from the RDF/OWL property types
    and domain/range/subPropertyOf; instances are subjects of ``rdf:type`` with a
    non-schema type; facts are other triples about instances. OWL class expressions keep
    what RDFS can say of them (`owl_axioms.lower`); the rest is counted in a warning.
    Terms without a label usable as words, datatypes and top/meta classes are taken out
    (`prune.exclude_terms`) and listed in `Ontology.excluded`.
    """
    options = options or BuildOptions()
    triples = triples if isinstance(triples, list) else list(triples)
    header = header_nodes(triples)
    n_all = len(triples)
    if header:
        triples = [t for t in triples if t[0] not in header]
    lowering = lower(triples, options.schema_includes)
    src = _sort(triples)
    skos = skos_mapping(triples, options.skos)
    if skos and not skos.topical:  # a thesaurus: skos:broader read as the taxonomy, skos:Concept types dropped
        apply_mapping(skos, src.types, src.edges)
    for t in lowering.model_triples():
        src.edges[t[1]].append(t)
    class_iris, prop_iris = _schema_terms(src)
    instance_iris = _instances(src, class_iris)
    exclusions = options.exclusions or load_exclusions()
    annotations = (set() if ANNOTATION in options.kept
                   else _annotation_properties(src, prop_iris, exclusions))
    facts = _facts(src, class_iris, prop_iris, instance_iris, annotations)
    split = options.split_identifier_labels
    if split is None:
        split = not any(i.startswith(ONTOPROBE_NS) for i in instance_iris)
    lang = prompt_language(options.langs, False)  # labels in the prompts' language only
    labels, no_label = _labels(src, options.langs, lang, split, class_iris | prop_iris,
                               instance_iris, skos)
    onto = _populate(Ontology(name=name, namespaces=tuple(options.namespaces)), src, labels,
                     class_iris, prop_iris, instance_iris)
    if lang == ENGLISH:  # labels as an English prompt writes them (ontology/wording.py)
        word_labels(onto)
    onto.facts.extend(facts)
    onto.warnings.extend(lowering.warnings())
    onto.closure_edges = lowering.closure_triples()
    if skos:
        onto.warnings.append(skos.warning())
        onto.closure_edges += skos.triples
        onto.skos_triples = skos.triples
        onto.skos = skos
    if header:
        _record_header(onto, header, n_all - len(triples))
    deprecated = (set() if DEPRECATED in options.kept
                  else deprecated_terms(src.other, src.labels, src.types))
    if no_label:  # terms without a label in the prompts' language are skipped and counted too
        exclusions = MissingLabels(exclusions, no_label, lang)
    exclude_terms(onto, src.types, exclusions, deprecated, options.kept, split)
    localize_patterns(onto, lang, triples)
    check_cycles(onto)
    return onto


def _instances(src: _Sorted, class_iris: set[str]) -> set[str]:
    """Subjects typed with a class (not only a schema type such as owl:Class); their types
    join `class_iris`."""
    types = src.types
    instance_iris = {s for s, ts in types.items()
                     if is_iri(s) and any(not _is_meta_type(t) for t in ts)}
    for s in instance_iris:
        class_iris.update(t for t in types[s] if is_iri(t) and not _is_meta_type(t))
    return instance_iris


def _annotation_properties(src: _Sorted, prop_iris: set[str], exclusions: Exclusions) -> set[str]:
    """Predicates the exclusion list calls annotations, unless also declared relations."""
    types = src.types
    return {p for p in {t[1] for t in src.other} | prop_iris
            if exclusions.reason(p, types.get(p, set())) == ANNOTATION
            and not types.get(p, set()) & RELATIONS}


def _labels(src: _Sorted, langs: tuple[str, ...], lang: str, split: bool, schema: set[str],
            instance_iris: set[str], skos: SkosMapping | None
            ) -> tuple[dict[str, str | None], set[str]]:
    """Every term's label in the prompts' language, and the terms that have none there."""
    labels = {iri: src.label(iri, langs, split, iri not in schema)
              for iri in schema | instance_iris}
    labels, no_label = language_labels(labels, src.labels, lang)
    if skos and not skos.topical and lang == ENGLISH:
        labels = singular_labels(labels, skos.concepts)
    if split and lang == ENGLISH:  # a word written in lower case somewhere is a common noun
        lowercase = lowered_words(labels[i] for i in schema)
        labels.update({i: common_case(labels[i], lowercase) for i in schema if labels[i]})
    return labels, no_label


def _populate(onto: Ontology, src: _Sorted, labels: dict[str, str | None], class_iris: set[str],
              prop_iris: set[str], instance_iris: set[str]) -> Ontology:
    """The model's classes, properties and instances, linked (`_link`)."""
    # An OWL file may type a term both as class and as individual (punning); keep both.
    for iri in sorted(class_iris):
        onto.classes[iri] = OntClass(iri, labels[iri] or "")
    for iri in sorted(prop_iris):
        onto.properties[iri] = OntProperty(iri, labels[iri] or "", pattern=src.patterns.get(iri))
    for iri in sorted(instance_iris):
        onto.instances[iri] = Instance(
            iri, labels[iri] or "",
            sorted(t for t in src.types[iri] if is_iri(t) and not _is_meta_type(t)))
    _link(onto, src)
    return onto


def _record_header(onto: Ontology, header: set[str], n_header: int) -> None:
    """The ontology header's nodes, kept out of the model and counted."""
    onto.header = frozenset(header)
    onto.excluded.update({h: HEADER for h in header if is_iri(h)})
    onto.excluded_counts[HEADER] = {"triple": n_header}
    onto.warnings.append(f"skipped {n_header} triple{'s' * (n_header > 1)}: {WHY[HEADER]}")


def check_cycles(onto: Ontology) -> None:
    """Cyclic hierarchies load (RDFS allows them) but each cycle is named in a warning.

    The standard library's topological sort tells an acyclic hierarchy (nearly every one)
    apart first; networkx, which names the cycles, is imported only when there are some (its
    import is a sixth of a short `kgprobe kg` command's time)."""
    for kind, table in (("subclass", onto.classes), ("subproperty", onto.properties)):
        try:
            TopologicalSorter({iri: node.parents for iri, node in table.items()}).prepare()
            continue
        except CycleError:
            import networkx as nx
        graph = nx.DiGraph((iri, parent) for iri, node in table.items() for parent in node.parents)
        for component in nx.strongly_connected_components(graph):
            if len(component) > 1 or any(graph.has_edge(n, n) for n in component):
                names = " → ".join(sorted(onto.label(n) for n in component))
                onto.warnings.append(f"cyclic {kind} hierarchy: {names}")
