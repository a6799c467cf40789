"""Terms that are never answers, candidates or words of a probe: datatypes, top classes,
OWL/RDF vocabulary (the documented list `excluded_terms.toml`, replaceable by a file).

A datatype is not a class of things ("X is an integer" probes nothing an ontology says about
X), and a top class is the answer to every question ("thing" was a third of schema.org's and
DBpedia's reasoning answers), so items whose only answer is one of them measure nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgprobe.errors import OntologyError
from kgprobe.ontology.data_files import bundled_data_file, read_toml

#: Why a term is excluded, besides the list's own reasons: no label usable as words.
ID_LIKE = "id-like"
#: ... a deprecated term (owl:deprecated true, oboInOwl:is_obsolete true, "obsolete …").
DEPRECATED = "deprecated"
#: ... an annotation property (the list's `annotation` table, every owl:AnnotationProperty).
ANNOTATION = "annotation"
#: ... a class labelled by an adjective or participle ("viscous"): no "[X] is a ___".
ADJECTIVE = "adjective"
#: ... the ontology document's own header (owl:Ontology subjects, every triple about them).
HEADER = "ontology header"
#: Reasons the user can turn back on (`--keep-annotations`, `--keep-deprecated`).
KEEPABLE = (ANNOTATION, DEPRECATED)
#: Why each reason leaves a term out, as the warning says it.
WHY = {ID_LIKE: "no label usable as words (an ID-like name)",
       "datatype": "datatypes are not classes of things",
       "top": "top classes answer every question",
       "meta": "RDF/OWL/SKOS vocabulary says what a term is, not what it is about",
       ANNOTATION: "annotation properties describe terms, not things (--keep-annotations "
                   "keeps them)",
       DEPRECATED: "deprecated or obsolete terms (--keep-deprecated keeps them)",
       ADJECTIVE: "adjective labels do not fit '[X] is a ___'",
       HEADER: "the ontology document's own header (owl:Ontology), about the file, not "
               "the world"}

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


def header_nodes(triples) -> set[str]:
    """The ontology document's own header: every ``owl:Ontology`` subject and the blank nodes
    hanging from it (a creator, a license). What is said about them (versions, imports, what
    the file was derived from) is about the file, never knowledge to probe."""
    triples = triples if isinstance(triples, list) else list(triples)
    heads = {s for s, p, o in triples if p == _RDF_TYPE and o == _OWL + "Ontology"}
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
