"""The Oxigraph knowledge graph: one named graph per loaded source, SPARQL over their union."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pyoxigraph as ox
from kgprobe.errors import QueryError, StoreError
from kgprobe.ontology.loaders import Source, build_ontology
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import (
    KGP,
    OWL,
    RDF,
    RDFS,
    SKOS,
    XSD,
    Ontology,
    Triple,
    parse_literal,
)

GRAPH_NS = "urn:kgprobe:source:"
INFERRED_GRAPH = "urn:kgprobe:inferred"

#: Prefixes every query may use without declaring them.
PREFIXES = {
    "rdf": RDF, "rdfs": RDFS, "owl": OWL, "skos": SKOS, "xsd": XSD, "kgp": KGP,
    "dbo": "http://dbpedia.org/ontology/", "dbr": "http://dbpedia.org/resource/",
    "op": "https://w3id.org/kgprobe/ontoprobe/",
}


def default_store_path() -> Path:
    """``$KGPROBE_STORE`` if set, else ``.kgprobe/store`` in the working directory."""
    return Path(os.environ.get("KGPROBE_STORE") or Path(".kgprobe") / "store")


def graph_iri(name: str) -> str:
    return GRAPH_NS + "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def to_ox(term: str) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    """Convert kgprobe's string term convention into a pyoxigraph term."""
    if term.startswith("_:"):
        return ox.BlankNode(term[2:])
    if term.startswith('"'):
        text, lang = parse_literal(term)
        tail = term[term.rfind('"') + 1:]
        if tail.startswith("^^<"):
            return ox.Literal(text, datatype=ox.NamedNode(tail[3:-1]))
        return ox.Literal(text, language=lang) if lang else ox.Literal(text)
    return ox.NamedNode(term)


def _nt(term: str) -> str:
    return term if term.startswith(('"', "_:")) else f"<{term}>"


@dataclass
class QueryResult:
    """A SPARQL answer: `rows` for SELECT, `boolean` for ASK, `triples` for CONSTRUCT."""

    kind: str  # "select" | "ask" | "construct"
    variables: list[str]
    rows: list[list[str | None]]
    boolean: bool | None = None
    triples: list[Triple] | None = None


@dataclass
class GraphStats:
    graph: str
    triples: int
    classes: int
    properties: int
    instances: int


class KnowledgeGraph:
    """An Oxigraph store, on disk (``path``) or in memory (``path=None``).

    Each source lives in its own named graph so it can be replaced or removed on its own;
    queries see the union of all graphs as their default graph.
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True):
        self.path = Path(path) if path is not None else None
        try:
            if self.path is None:
                self._store = ox.Store()
            else:
                if not create and not self.path.exists():
                    raise StoreError(f"{self.path}: no store here; run `kgprobe kg load` first "
                                     "or pass --store")
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._store = ox.Store(str(self.path))
        except OSError as err:
            if "lock" in str(err).lower():
                raise StoreError(f"{self.path}: the store is in use by another process; wait for "
                                 "it or pass another --store") from None
            raise StoreError(f"{self.path}: cannot open the store ({_first_line(err)}); pass a "
                             "writable --store directory") from None

    def __enter__(self) -> "KnowledgeGraph":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.path is not None and hasattr(self, "_store"):
            self._store.flush()
        self._store = None  # releases the on-disk lock

    # ------------------------------------------------------------------ writing

    def add_sources(self, sources: Iterable[Source]) -> list[str]:
        """Load sources, each into its own named graph (replacing an earlier load of it).

        All sources are written in one transaction: a failure leaves the store as it was.
        """
        graphs = {graph_iri(src.name): src.triples for src in sources}
        self.replace_graphs(graphs)
        return list(graphs)

    def replace_graphs(self, graphs: dict[str, Iterable[Triple]]) -> None:
        """Make each named graph hold exactly its triples, in one transaction (all or nothing)."""
        ops = []
        for graph, triples in graphs.items():
            body = "\n".join(f"{_nt(s)} {_nt(p)} {_nt(o)} ." for s, p, o in triples)
            ops.append(f"DROP SILENT GRAPH <{graph}> ;\n"
                       f"INSERT DATA {{ GRAPH <{graph}> {{\n{body}\n}} }}")
        try:
            self._store.update(" ;\n".join(ops))
        except (SyntaxError, OSError) as err:
            raise StoreError(f"graph(s) {', '.join(graphs)}: could not be written "
                             f"({_first_line(err)}); the store is unchanged") from None

    def add_triples(self, graph: str, triples: Iterable[Triple]) -> None:
        """Add triples to a graph in one transaction; triples already there are no-ops."""
        self._store.extend(ox.Quad(to_ox(s), to_ox(p), to_ox(o), ox.NamedNode(graph))
                           for s, p, o in triples)

    def drop_graph(self, graph: str) -> None:
        self._store.update(f"DROP SILENT GRAPH <{graph}>")

    # ------------------------------------------------------------------ reading

    def asserted_graphs(self) -> list[str]:
        """Every graph but the inferred one: what reasoning starts from."""
        return [g for g in self.graphs() if g != INFERRED_GRAPH]

    def graphs(self) -> list[str]:
        return sorted(g.value for g in self._store.named_graphs())

    def triples(self, graph: str | None = None) -> Iterator[Triple]:
        """Triples of one named graph, or of the union of all graphs (deduplicated)."""
        if graph is not None:
            quads = self._store.quads_for_pattern(None, None, None, ox.NamedNode(graph))
            for q in quads:
                yield from_ox(q.subject), from_ox(q.predicate), from_ox(q.object)
            return
        seen: set[Triple] = set()
        for q in self._store:
            t = (from_ox(q.subject), from_ox(q.predicate), from_ox(q.object))
            if t not in seen:
                seen.add(t)
                yield t

    def count(self, graph: str | None = None) -> int:
        if graph is None:
            return len(self._store)
        answer = self.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        return int(_lexical(answer.rows[0][0]))

    def query(self, sparql: str) -> QueryResult:
        """Run a SELECT, ASK or CONSTRUCT query over the union of all graphs."""
        try:
            result = self._store.query(sparql, prefixes=PREFIXES, use_default_graph_as_union=True)
        except SyntaxError as err:
            raise QueryError(f"invalid SPARQL query ({_first_line(err)}); check the syntax") from None
        except OSError as err:
            raise StoreError(f"query failed while reading the store ({_first_line(err)})") from None
        if isinstance(result, ox.QueryBoolean):
            return QueryResult("ask", [], [], boolean=bool(result))
        if isinstance(result, ox.QueryTriples):
            triples = [(from_ox(t.subject), from_ox(t.predicate), from_ox(t.object)) for t in result]
            return QueryResult("construct", ["subject", "predicate", "object"],
                               [list(t) for t in triples], triples=triples)
        variables = [v.value for v in result.variables]
        rows = [[None if sol[v] is None else from_ox(sol[v]) for v in variables] for sol in result]
        return QueryResult("select", variables, rows)

    def ontology(self, name: str = "store", graphs: list[str] | None = None) -> Ontology:
        """The typed model of the union graph (asserted ∪ inferred), or of some graphs."""
        if graphs is None:
            return build_ontology(name, self.triples())
        return build_ontology(name, (t for g in graphs for t in self.triples(g)))

    def stats(self) -> list[GraphStats]:
        """Per named graph: triples, and the classes/properties/instances the model sees."""
        out = []
        for graph in self.graphs():
            triples = list(self.triples(graph))
            onto = build_ontology(graph, triples)
            out.append(GraphStats(graph, len(triples), len(onto.classes), len(onto.properties),
                                  len(onto.instances)))
        return out

    def export(self, fmt: str, out: str | Path | None = None) -> bytes | None:
        """Serialize the union graph as Turtle or N-Triples (to a file, or return bytes)."""
        formats = {"turtle": ox.RdfFormat.TURTLE, "ntriples": ox.RdfFormat.N_TRIPLES}
        if fmt not in formats:
            raise StoreError(f"unknown export format '{fmt}'; use turtle or ntriples")
        result = self._store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
                                   use_default_graph_as_union=True)
        if out is None:
            return result.serialize(format=formats[fmt])
        tmp = Path(f"{out}.part")
        result.serialize(str(tmp), format=formats[fmt])
        tmp.replace(out)
        return None


def _lexical(term: str) -> str:
    return term[1:term.rfind('"')] if term.startswith('"') else term


def _first_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200]
