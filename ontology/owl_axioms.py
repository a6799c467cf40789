"""What the RDFS model keeps of OWL class expressions (without `reason --owl`), and the
schema.org `domainIncludes`/`rangeIncludes` statements.

Kept, because they are sound as RDFS edges:

* ``A ≡ B ⊓ R`` or ``A ⊑ B ⊓ R``: every named conjunct B is a superclass of A;
* ``A ≡ B ⊔ C``: every named member is a subclass of A;
* the same written OWL 1 style, ``owl:intersectionOf``/``owl:unionOf`` directly on the named
  class (the W3C wine ontology's ``WhiteWine``): the class is equivalent to the expression.

Kept in the model only (memorizing DM/RG answers), never fed to the RDFS closure, because
``P domain B ⊔ C`` does not entail ``P domain B``: the members of a union domain/range.

Kept under `--schema-includes` (a weaker statement, "one of the expected types", said in a
warning): schema.org's ``domainIncludes``/``rangeIncludes`` as domain/range.

Everything else (equivalences between named classes, which would only make cycles with
other vocabularies' IRIs, restrictions, complements, enumerations, disjointness, property
characteristics) is dropped and counted by axiom kind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.ontology.model import (
    OWL,
    RDF,
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    Triple,
    is_iri,
)

OWL_EQUIVALENT_CLASS = OWL + "equivalentClass"
OWL_INTERSECTION = OWL + "intersectionOf"
OWL_UNION = OWL + "unionOf"
SCHEMA_NAMESPACES = ("http://schema.org/", "https://schema.org/")
_INCLUDES = {ns + "domainIncludes": RDFS_DOMAIN for ns in SCHEMA_NAMESPACES} | {
    ns + "rangeIncludes": RDFS_RANGE for ns in SCHEMA_NAMESPACES}
#: OWL predicates the RDFS model has no use for; each use is counted as a dropped axiom.
_IGNORED = ("disjointWith", "inverseOf", "propertyChainAxiom", "hasKey", "disjointUnionOf",
            "propertyDisjointWith", "sameAs", "differentFrom", "complementOf", "oneOf")
_CHARACTERISTICS = ("TransitiveProperty", "SymmetricProperty", "FunctionalProperty",
                    "InverseFunctionalProperty", "AsymmetricProperty", "ReflexiveProperty",
                    "IrreflexiveProperty", "AllDisjointClasses", "AllDifferent")


@dataclass
class Lowering:
    """Edges kept from OWL and schema.org statements, and what was dropped."""

    subclass: list[Triple] = field(default_factory=list)  # sound: fed to the RDFS closure
    unions: list[Triple] = field(default_factory=list)  # domain/range members: model only
    includes: list[Triple] = field(default_factory=list)  # schema.org, under the option
    kept: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    schema_includes: bool = False

    def closure_triples(self) -> list[Triple]:
        """What the RDFS closure may reason with: sound edges, and the schema.org ones only
        when asked for."""
        return self.subclass + (self.includes if self.schema_includes else [])

    def model_triples(self) -> list[Triple]:
        return self.closure_triples() + self.unions

    def warnings(self) -> list[str]:
        out = []
        if self.kept:
            out.append("kept from OWL/schema.org: " + _counts(self.kept))
        if self.includes and self.schema_includes:
            out.append(f"{len(self.includes)} schema:domainIncludes/rangeIncludes statement(s) "
                       "read as rdfs:domain/range: a weaker statement (one of the expected "
                       "types), turn off with --no-schema-includes")
        elif self.includes:
            out.append(f"{len(self.includes)} schema:domainIncludes/rangeIncludes statement(s) "
                       "ignored (--no-schema-includes)")
        if self.dropped:
            out.append("OWL axioms dropped (not expressible in RDFS; `reason --owl` reasons "
                       "with them): " + _counts(self.dropped))
        return out


def _counts(counter: Counter) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counter.items()))


class _Graph:
    """Blank-node structure: RDF lists and the class expression of each node."""

    def __init__(self, triples: Iterable[Triple]):
        self.out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for s, p, o in triples:
            if s.startswith("_:") or p in (OWL_EQUIVALENT_CLASS, RDFS_SUBCLASSOF, RDFS_DOMAIN,
                                           RDFS_RANGE) or p in _INCLUDES:
                self.out[s][p].append(o)

    def first(self, node: str, pred: str) -> str | None:
        values = self.out.get(node, {}).get(pred)
        return values[0] if values else None

    def members(self, head: str) -> list[str]:
        items, seen = [], set()
        while head and head != RDF + "nil" and head not in seen:
            seen.add(head)
            first = self.first(head, RDF + "first")
            if first is not None:
                items.append(first)
            head = self.first(head, RDF + "rest")
        return items

    def kind(self, node: str) -> tuple[str, list[str]]:
        """("named" | "intersection" | "union" | "restriction" | other, members)."""
        if is_iri(node):
            return "named", [node]
        for pred, kind in ((OWL_INTERSECTION, "intersection"), (OWL_UNION, "union")):
            head = self.first(node, pred)
            if head is not None:
                return kind, self.members(head)
        if self.first(node, OWL + "onProperty") is not None:
            return "restriction", []
        for pred in ("complementOf", "oneOf"):
            if self.first(node, OWL + pred) is not None:
                return pred, []
        return "class expression", []


#: Predicates `lower` reads besides the OWL vocabulary's own
_AXIOMS = frozenset({RDFS_SUBCLASSOF, OWL_EQUIVALENT_CLASS, RDFS_DOMAIN, RDFS_RANGE, *_INCLUDES})


def lower(triples: Iterable[Triple], schema_includes: bool | None = None) -> Lowering:
    """The edges kept from OWL expressions and schema.org includes; `schema_includes=None`
    turns the includes on when the data uses the schema.org namespace."""
    triples = triples if isinstance(triples, list) else list(triples)
    graph = _Graph(triples)
    out = Lowering()
    uses_schema = False
    for s, p, o in triples:
        # the predicate first: of 1M instance triples almost none is an axiom
        if not (p in _AXIOMS or p.startswith(OWL) or (p == RDF_TYPE and o.startswith(OWL))):
            continue
        if p in _INCLUDES:
            uses_schema = True
            if is_iri(s) and is_iri(o):
                out.includes.append((s, _INCLUDES[p], o))
        elif is_iri(s):
            _lower_axiom(graph, out, s, p, o)
    out.schema_includes = uses_schema if schema_includes is None else schema_includes
    return out


def _lower_axiom(graph: _Graph, out: Lowering, s: str, p: str, o: str) -> None:
    """One OWL statement about the named term `s`: its sound RDFS edges kept, or counted
    as dropped (what RDFS cannot say)."""
    if p in (RDFS_SUBCLASSOF, OWL_EQUIVALENT_CLASS) and is_iri(o) is False:
        _class_axiom(graph, out, s, p, o)
    elif p in (OWL_INTERSECTION, OWL_UNION):
        # OWL 1: `WhiteWine owl:intersectionOf (Wine …)` on the named class itself
        kind = "intersection" if p == OWL_INTERSECTION else "union"
        _lower_expression(graph, out, s, "equivalentClass", kind, graph.members(o))
    elif p == OWL_EQUIVALENT_CLASS:
        # Mutual subclasses say nothing a probe can ask ("a person is a person") and
        # mostly point to other vocabularies (DBpedia: wikidata Q5, schema:Person).
        out.dropped["owl:equivalentClass between named classes"] += 1
    elif p in (RDFS_DOMAIN, RDFS_RANGE) and not is_iri(o):
        _domain_range(graph, out, s, p, o)
    elif p.startswith(OWL) and p[len(OWL):] in _IGNORED:
        out.dropped[f"owl:{p[len(OWL):]}"] += 1
    elif p == RDF_TYPE and o.startswith(OWL) and o[len(OWL):] in _CHARACTERISTICS:
        out.dropped[f"owl:{o[len(OWL):]}"] += 1


def _domain_range(graph: _Graph, out: Lowering, prop: str, pred: str, expr: str) -> None:
    """A domain or range that is a class expression: a union's named members become the
    model's domains (ranges), never the closure's (`Lowering.unions`: not sound); any other
    expression is counted as dropped."""
    kind, members = graph.kind(expr)
    named = [m for m in members if is_iri(m)]
    if kind == "union" and named:
        out.unions += [(prop, pred, m) for m in named]
        out.kept[f"union {pred.rsplit('#', 1)[1]} expanded to members"] += 1
    else:
        out.dropped[f"{kind} {pred.rsplit('#', 1)[1]}"] += 1


def _class_axiom(graph: _Graph, out: Lowering, cls: str, pred: str, expr: str) -> None:
    """``cls ⊑ expr`` or ``cls ≡ expr`` with `expr` a blank node."""
    axiom = "equivalentClass" if pred == OWL_EQUIVALENT_CLASS else "subClassOf"
    _lower_expression(graph, out, cls, axiom, *graph.kind(expr))


def _lower_expression(graph: _Graph, out: Lowering, cls: str, axiom: str, kind: str,
                      members: list[str]) -> None:
    """Keep the sound edges of ``cls ⊑ expr`` / ``cls ≡ expr`` (`axiom`), count the rest."""
    named = [m for m in members if is_iri(m)]
    if kind == "intersection":
        out.subclass += [(cls, RDFS_SUBCLASSOF, m) for m in named if m != cls]
        if named:
            out.kept[f"named conjunct(s) of {axiom} intersections"] += len(named)
        for m in members:
            if not is_iri(m):
                out.dropped[f"{graph.kind(m)[0]} conjunct of {axiom} intersection"] += 1
    elif kind == "union" and axiom == "equivalentClass" and named:
        out.subclass += [(m, RDFS_SUBCLASSOF, cls) for m in named if m != cls]
        out.kept["named member(s) of equivalentClass unions"] += len(named)
        out.dropped["unnamed member of equivalentClass union"] += len(members) - len(named)
        if len(members) == len(named):
            del out.dropped["unnamed member of equivalentClass union"]
    else:
        out.dropped[f"{axiom} {kind}"] += 1
