"""Terms that are never answers, candidates or words of a probe: datatypes, top classes,
OWL/RDF vocabulary (the documented list `excluded_terms.toml`, replaceable by a file).

A datatype is not a class of things ("X is an integer" probes nothing an ontology says about
X), and a top class is the answer to every question ("thing" was a third of schema.org's and
DBpedia's reasoning answers), so items whose only answer is one of them measure nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from kgprobe.errors import OntologyError
from kgprobe.ontology.data_files import bundled_data_file, read_toml
from kgprobe.ontology.labels import MAX_LABEL_CHARS

#: Why a term is excluded, besides the list's own reasons: no label usable as words.
ID_LIKE = "id-like"
#: ... a deprecated term (owl:deprecated true, oboInOwl:is_obsolete true, "obsolete …").
DEPRECATED = "deprecated"
#: ... an annotation property (the list's `annotation` table, every owl:AnnotationProperty).
ANNOTATION = "annotation"
#: ... a class labelled by an adjective or participle ("viscous"): no "[X] is a ___".
ADJECTIVE = "adjective"
#: ... a grouping class, a noun sorted "by" something ("food material by organism"): no kind of
#: thing, so no answer to "[X] is a ___" (its subclasses are reconnected to its parents).
GROUPING = "grouping class"
#: ... the ontology document's own header (owl:Ontology subjects, every triple about them).
HEADER = "ontology header"
#: ... an upper-level root: the list's `root` table (BFO's entity, continuant, occurrent …,
#: DOLCE's particular, CIDOC-CRM's E1), or a class with no kept superclass above
#: `ROOT_SHARE` of a `ROOT_MIN_CLASSES`-class ontology (`share_roots`).
ROOT = "root"
#: ... a class declared a subclass of a vocabulary type (skos:Concept): its members are the
#: terms of a code list or thesaurus, not things (GeoNames' feature codes, "Palm grove is a
#: code"), as the vocabulary type itself is (`meta`).
VOCABULARY_CLASS = "vocabulary class"
#: ... a label over `labels.MAX_LABEL_CHARS` characters: a text, not a name.
LONG_LABEL = "long label"
#: ... a term a reviewer marked in a review sheet (`kgprobe review read` writes it into the
#: probe folder's exclusion list, table `reviewed`).
REVIEWED = "reviewed"
#: Reasons the user can turn back on (`--keep-annotations`, `--keep-deprecated`,
#: `--keep-roots`).
KEEPABLE = (ANNOTATION, DEPRECATED, ROOT)
#: A root class with at least this share of the ontology's classes below it answers nearly
#: every type and superclass question ("Paint thinner is an entity"): it is excluded like a
#: top class. 0.9 takes PATO's "quality" (99 % of PATO) and BFO's "entity", not GO's three
#: aspects (≤ 40 %) nor "potable liquid" (83 % of the wine ontology), answers that say
#: something.
ROOT_SHARE = 0.9
#: ... in an ontology of at least this many classes: a toy taxonomy's single root ("animal"
#: above dog and cat) is its subject, not an upper level.
ROOT_MIN_CLASSES = 20
#: Head nouns of upper-level categories: a class with no kept superclass named by one ("plant
#: anatomical entity", "spatial thing", SEM's "core") is a root whatever its share and the
#: ontology's size, since it names no kind of thing a question could be about.
ROOT_HEADS = frozenset({"entity", "thing", "core", "continuant", "occurrent", "endurant",
                        "perdurant", "particular", "resource"})
#: ... but "entity" after other words is a root only above this share of the kept classes:
#: GoodRelations' "business entity" (a person or an organization) is a kind of thing.
ROOT_ENTITY_SHARE = 0.5
#: Why each reason leaves a term out, as the warning says it.
WHY = {ID_LIKE: "no label usable as words (an ID-like name)",
       "datatype": "datatypes are not classes of things",
       "top": "top classes answer every question",
       ROOT: "upper-level roots answer nearly every question (--keep-roots keeps them)",
       "meta": "RDF/OWL/SKOS vocabulary says what a term is, not what it is about",
       ANNOTATION: "annotation properties describe terms, not things (--keep-annotations "
                   "keeps them)",
       DEPRECATED: "deprecated or obsolete terms (--keep-deprecated keeps them)",
       ADJECTIVE: "adjective labels do not fit '[X] is a ___'",
       GROUPING: "grouping classes ('food material by organism') are no kind of thing",
       HEADER: "the ontology document's own header (owl:Ontology), about the file, not "
               "the world",
       VOCABULARY_CLASS: "subclasses of skos:Concept hold vocabulary terms (codes), not things",
       REVIEWED: "marked to exclude in a review sheet (kgprobe review read)",
       LONG_LABEL: f"labels over {MAX_LABEL_CHARS:,} characters are texts, not names"}

_OWL = "http://www.w3.org/2002/07/owl#"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
#: Predicates whose literal ``true`` marks a term deprecated.
DEPRECATION_PREDICATES = frozenset({
    _OWL + "deprecated", "http://www.geneontology.org/formats/oboInOwl#is_obsolete"})
_DEPRECATED_TYPES = frozenset({_OWL + "DeprecatedClass", _OWL + "DeprecatedProperty"})
#: Predicates that mark their subject deprecated whatever the value: schema.org's
#: ``supersededBy`` (schema:Code → schema:SoftwareSourceCode) carries no owl:deprecated.
SUPERSEDED_PREDICATES = frozenset({"http://schema.org/supersededBy",
                                   "https://schema.org/supersededBy"})
#: The W3C vocabulary-status term FOAF uses: ``vs:term_status "archaic"`` is a retired term
#: (foaf:holdsAccount, a second "account").
TERM_STATUS = "http://www.w3.org/2003/06/sw-vocab-status/ns#term_status"


def deprecated_terms(triples, labels: dict[str, dict[str, list]],
                     types: dict[str, set[str]]) -> set[str]:
    """Terms the data marks deprecated: ``owl:deprecated true``, ``oboInOwl:is_obsolete
    true``, typed owl:DeprecatedClass/Property, ``schema:supersededBy``, ``vs:term_status
    "archaic"``, or any label beginning "obsolete" (OBO's
    convention, also on terms that carry no flag: IAO's "obsolete2_digital document")."""
    out = {s for s, ts in types.items() if ts & _DEPRECATED_TYPES}
    for s, p, o in triples:
        if (p in DEPRECATION_PREDICATES and o.startswith('"true"')) or p in SUPERSEDED_PREDICATES \
                or (p == TERM_STATUS and o.startswith('"archaic"')):
            out.add(s)
    for iri, by_prop in labels.items():
        if any(text.strip().lower().startswith("obsolete")
               for values in by_prop.values() for text, _ in values):
            out.add(iri)
    return out


_VAEM = "http://www.linkedmodel.org/schema/vaem#"
#: Types whose instances describe the ontology document, as an owl:Ontology does: QUDT's
#: ``vaem:GMD_QUDT-SCHEMA`` ("QUDT Schema Metadata Version $$QUDT_VERSION$$"), a
#: vaem:GraphMetaData its header points to, was a TP record.
HEADER_TYPES = frozenset({_OWL + "Ontology", _VAEM + "GraphMetaData", _VAEM + "CatalogEntry"})
#: Links between an ontology and the node holding its metadata (either direction).
HEADER_LINKS = frozenset({_VAEM + "hasGraphMetadata", _VAEM + "isMetadataFor"})


def header_nodes(triples) -> set[str]:
    """The ontology document's own header: every ``owl:Ontology`` subject, every node typed
    or linked as its metadata (`HEADER_TYPES`, `HEADER_LINKS`), and the blank nodes hanging
    from them (a creator, a license). What is said about them (versions, imports, what the
    file was derived from) is about the file, never knowledge to probe."""
    triples = triples if isinstance(triples, list) else list(triples)
    heads = {s for s, p, o in triples if p == _RDF_TYPE and o in HEADER_TYPES}
    heads |= {x for s, p, o in triples if p in HEADER_LINKS for x in (s, o)
              if not x.startswith('"')}
    if not heads:
        return heads
    children: dict[str, list[str]] = {}
    for s, _, o in triples:
        if o.startswith("_:"):
            children.setdefault(s, []).append(o)
    out, stack = set(), list(heads)
    while stack:
        node = stack.pop()
        if node not in out:
            out.add(node)
            stack.extend(children.get(node, ()))
    return out


def share_roots(parents: dict[str, list[str]], excluded: Iterable[str],
                labels: dict[str, str] | None = None,
                listed: Iterable[str] = ()) -> set[str]:
    """The classes of `parents` (class → its named superclasses) that no kept class lies
    above and that have at least `ROOT_SHARE` of the kept classes below them, in an ontology
    of at least `ROOT_MIN_CLASSES` kept classes, or (any size) two kept classes below them, a
    label (`labels`: class → label) whose last word is one of `ROOT_HEADS` and no parent
    among the `listed` roots (BFO's "material entity", right below its listed roots, is the
    middle of an upper ontology, not an ontology's own top). An excluded class in between
    (an ID-like BFO term, owl:Thing) is looked through: its kept ancestors are the class's."""
    from kgprobe.ontology.hierarchy import nearest_kept

    gone, listed = set(excluded), set(listed)
    kept = [c for c in parents if c not in gone]
    above = nearest_kept(parents, gone)
    tops = [c for c in kept if not any(
        p != c and (p not in gone and p in parents or above.get(p)) for p in parents[c])]
    if not tops:
        return set()
    import networkx as nx

    graph = nx.DiGraph((p, c) for c, ps in parents.items() for p in ps)
    out = set()
    for c in tops:
        below = sum(d not in gone for d in nx.descendants(graph, c)) if c in graph else 0
        words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", (labels or {}).get(c, "")).lower().split()
        generic = bool(words) and words[-1] in ROOT_HEADS and (
            # "business entity", "legal entity" are kinds; an "entity" above half the ontology
            # (PO's "plant anatomical entity") or the bare word is its top
            words[-1] != "entity" or len(words) == 1 or below >= ROOT_ENTITY_SHARE * len(kept))
        if (len(kept) >= ROOT_MIN_CLASSES and below >= ROOT_SHARE * len(kept)) or (
                below >= 2 and generic and not set(parents[c]) & listed):
            out.add(c)
    return out


def vocabulary_classes(parents: dict[str, list[str]], vocabulary: Iterable[str]) -> set[str]:
    """The classes of `parents` that lie below one of `vocabulary` (skos:Concept and its
    kin): their members are terms of a code list, so "X is a code" states no kind of X.
    Most ontologies name none of them: then no graph is built (nor networkx imported)."""
    named = {p for ps in parents.values() for p in ps}
    vocabulary = [v for v in vocabulary if v in parents or v in named]
    if not vocabulary:
        return set()
    import networkx as nx

    graph = nx.DiGraph((p, c) for c, ps in parents.items() for p in ps)
    below = set().union(*(nx.descendants(graph, v) for v in vocabulary if v in graph))
    return below & set(parents)


@dataclass(frozen=True)
class Exclusions:
    """reason → IRIs, namespace prefixes and classes whose instances are excluded."""

    iris: dict[str, frozenset[str]] = field(default_factory=dict)
    prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    types: dict[str, frozenset[str]] = field(default_factory=dict)
    path: str = ""

    def reason(self, iri: str, types: set[str] | frozenset[str] = frozenset()) -> str | None:
        """Why `iri` (with its rdf:types) is excluded, or None."""
        for reason, iris in self.iris.items():
            if iri in iris:
                return reason
        for reason, prefixes in self.prefixes.items():
            if iri.startswith(prefixes):
                return reason
        for reason, classes in self.types.items():
            if types & classes:
                return reason
        return None


def default_exclusions_path() -> Path:
    return bundled_data_file("excluded_terms.toml")


def load_exclusions(path: str | Path | None = None) -> Exclusions:
    """Read an exclusion list (the bundled one by default)."""
    path = Path(path) if path is not None else default_exclusions_path()
    data = read_toml(path, OntologyError, "exclusion list", default_exclusions_path().name)
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    return Exclusions(
        iris={r: frozenset(t.get("iris", ())) for r, t in tables.items()},
        prefixes={r: tuple(t.get("prefixes", ())) for r, t in tables.items()},
        types={r: frozenset(t.get("types", ())) for r, t in tables.items()},
        path=str(path))


#: The columns of `excluded.tsv`, the list of every excluded term `generate` writes.
EXCLUDED_COLUMNS = ("iri", "kind", "label", "reason", "why")


def excluded_rows(excluded: dict[str, str], terms: dict[str, tuple[str, str]]
                  ) -> list[tuple[str, ...]]:
    """One row per excluded term (`EXCLUDED_COLUMNS`), sorted by reason then IRI: the counts
    in `summary.json` say how many went, these rows which ones, so a noun the adjective test
    dropped ("carotenoid") can be seen and kept (`--exclusions`). `excluded` is
    `Ontology.excluded` (iri → reason), `terms` `Ontology.excluded_terms` (iri → kind, label);
    the label is the one the term had when it was taken out ("" for none)."""
    rows = []
    for iri, reason in excluded.items():
        kind, label = terms.get(iri, (reason if reason == HEADER else "", ""))
        rows.append((iri, kind, label or "", reason, WHY.get(reason, reason)))
    return sorted(rows, key=lambda r: (r[3], r[0]))


def excluded_tsv(rows: list[tuple[str, ...]]) -> str:
    """`excluded_rows` as tab-separated text with a header line (tabs and newlines in a
    label become spaces, so every row is one line of five fields)."""
    clean = (("\t".join(" ".join(str(f).split()) for f in row)) for row in rows)
    return "\n".join(["\t".join(EXCLUDED_COLUMNS), *clean]) + "\n"
