"""Bulk loading a file into the store, staging any new graph version, reading a graph back.

Why: going through Python tuples cost 3 min 51 s and 5.4 GB for a 1.24M-triple file, and a
SPARQL ``MOVE`` of a million-triple staging graph takes minutes (an Oxigraph update is one
in-memory transaction).  So a new source graph is bulk-loaded by pyoxigraph straight into its
final named graph while the meta graph marks it *pending*: pending graphs are not part of the
union nor listed (`KnowledgeGraph.graphs`), a crash leaves one that the next writer drops, and
publishing it is one small SPARQL update (unmark, record path and hash), so a load is still
all-or-nothing.  Replacing an existing graph stages as before (bulk-loaded staging, ``MOVE``).
"""

from __future__ import annotations

import hashlib
import io
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

import pyoxigraph as ox
from kgprobe.errors import OntologyError
from kgprobe.ontology.formats import RdfInput
from kgprobe.ontology.loaders import malformed, too_large
from kgprobe.ontology.model import KGP, Ontology, Triple
from kgprobe.ontology.source import Source

PENDING = KGP + "pending"


def file_hash(rdf: RdfInput) -> str:
    """sha256 of the RDF bytes: a bulk-loaded graph's content hash (its blank nodes get fresh
    ids on every load, so a hash over its triples would change on each reload)."""
    digest = hashlib.sha256()
    with rdf.open() as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "file:" + digest.hexdigest()


def bulk_load(store: ox.Store, rdf: RdfInput, graph: str) -> None:
    """Parse `rdf` into `graph` with pyoxigraph's bulk loader; syntax errors name the line."""
    fmt = getattr(ox.RdfFormat, rdf.ox_format)
    try:
        if rdf.plain:
            store.bulk_load(path=str(rdf.path), format=fmt, to_graph=ox.NamedNode(graph))
        else:
            with rdf.open() as fh:
                store.bulk_load(fh, fmt, to_graph=ox.NamedNode(graph))
    except SyntaxError as err:
        line = err.lineno
        if line is None and rdf.rdflib_format:  # RDF/XML errors carry no position: ask rdflib
            from kgprobe.ontology.loaders import rdflib_triples

            rdflib_triples(rdf.path, rdf.rdflib_format, rdf)
        raise malformed(rdf.path, line, str(err.msg)) from None
    except UnicodeDecodeError as err:
        raise OntologyError(f"{rdf.path}: cannot read ({err}); check the path and encoding") from None
    except MemoryError as err:
        raise too_large(rdf.path, err) from None


def nt_triples(data: bytes) -> Iterator[Triple]:
    """Triples in kgprobe's term convention from N-Triples bytes written by pyoxigraph (one
    triple a line, single spaces, a newline only between triples): splitting lines is ~10×
    faster than wrapping 1M quads. Lines are decoded one at a time and predicates interned:
    for 1M triples that holds 150 MB where decoding and splitting the whole text held 470."""
    intern = sys.intern
    for raw in io.BytesIO(data):
        line = raw.decode("utf-8")
        i = line.index(" ")
        j = line.index(" ", i + 1)
        s, p, o = line[:i], intern(line[i + 2:j - 1]), line[j + 1:-3]
        yield (s[1:-1] if s[0] == "<" else s, p, o[1:-1] if o[0] == "<" else o)


def graph_triples(store: ox.Store, graph: str) -> Iterator[Triple]:
    """A graph's triples, read through one N-Triples dump. The order is the dump's, not
    `quads_for_pattern`'s: use it where order does not matter."""
    return nt_triples(store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=ox.NamedNode(graph)))


def parsed_triples(rdf: RdfInput) -> list[Triple]:
    """The distinct triples of `rdf` as the bulk loader stores them: the same bytes through
    the same parser (Oxigraph's), read through N-Triples. Blank nodes get their own ids.

    Why not read the stored graph back: for 1M LUBM triples the store's dump takes 9.0 s
    (a RocksDB lookup per term), parsing the file again 1.9 s, and that runs in a thread
    beside the bulk load, which releases the GIL (`stage_file`)."""
    with rdf.quads() as quads:
        data = ox.serialize((q.triple for q in quads), format=ox.RdfFormat.N_TRIPLES)
    return list(dict.fromkeys(nt_triples(data)))


def pending_graphs(store: ox.Store, meta: str) -> list[str]:
    """Graphs a load is writing into (or a crashed load left behind)."""
    return [q.subject.value for q in store.quads_for_pattern(
        None, ox.NamedNode(PENDING), None, ox.NamedNode(meta))]


def mark_pending(store: ox.Store, meta: str, graph: str) -> None:
    store.add(ox.Quad(ox.NamedNode(graph), ox.NamedNode(PENDING), ox.Literal("true"),
                      ox.NamedNode(meta)))


def drop_pending(store: ox.Store, meta: str) -> None:
    """Drop every pending graph and its mark (never published: left by a crash or a failure)."""
    for graph in pending_graphs(store, meta):
        store.remove_graph(ox.NamedNode(graph))
        store.remove(ox.Quad(ox.NamedNode(graph), ox.NamedNode(PENDING), ox.Literal("true"),
                             ox.NamedNode(meta)))


def stage_target(store: ox.Store, graph: str, staging: str, meta: str) -> tuple[str, str]:
    """Where a new version of `graph` is written, and the SPARQL update that publishes it: a
    new graph in place, marked pending (unmarking it publishes it); an existing one into
    `staging`, moved onto it (a MOVE of 300k triples takes 17–23 s, so only replacements
    pay it). The target exists, empty, on return: an empty source still gets its graph."""
    if store.contains_named_graph(ox.NamedNode(graph)):
        store.add_graph(ox.NamedNode(staging))
        return staging, f"MOVE SILENT GRAPH <{staging}> TO <{graph}>"
    mark_pending(store, meta, graph)
    store.add_graph(ox.NamedNode(graph))
    return graph, f'DELETE DATA {{ GRAPH <{meta}> {{ <{graph}> <{PENDING}> "true" }} }}'


def stage_file(store: ox.Store, src: Source, graph: str, staging: str, meta: str) -> str:
    """Bulk-load a file source where `stage_target` says. Builds the source's model
    (`src.ontology`) from the same file in a thread while the loader runs; `src.count` is
    what the store holds. Returns the update that publishes it.

    Measured on 1M LUBM triples (`python bench/load.py`, 2 cores): bulk load 10 s, model
    ~10 s; one after the other (model from the store's dump) 36 s, side by side ~12 s."""
    from kgprobe.ontology.from_triples import build_ontology

    target, publish = stage_target(store, graph, staging, meta)
    with ThreadPoolExecutor(max_workers=1) as pool:
        model = pool.submit(lambda: build_ontology(src.name, parsed_triples(src.rdf),
                                                   src.options))
        bulk_load(store, src.rdf, target)  # a syntax error raises here, naming the line
        try:
            src.ontology = model.result()
        except (SyntaxError, ValueError, OSError):
            # the loader took what the re-parse refused (never seen): read back what it stored
            src.ontology = build_ontology(src.name, list(graph_triples(store, target)),
                                          src.options)
    src.count = graph_size(store, target)
    return publish


def graph_size(store: ox.Store, graph: str) -> int:
    """Triples in one graph, counted by Oxigraph (0.4 s for 1M triples)."""
    rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
    return int(next(iter(rows))["n"].value)


@dataclass
class GraphStats:
    graph: str
    triples: int
    classes: int
    properties: int
    instances: int

    @classmethod
    def of(cls, graph: str, triples: int, onto: Ontology) -> "GraphStats":
        """A graph's figures from its triple count and its model."""
        return cls(graph, triples, len(onto.classes), len(onto.properties), len(onto.instances))


def stats_of(graph: str, triples: list[Triple]) -> GraphStats:
    """Triples, and the classes/properties/instances the model sees, of one graph."""
    from kgprobe.ontology.from_triples import build_ontology

    return GraphStats.of(graph, len(triples), build_ontology(graph, triples))


def graph_stats(store: ox.Store, graph: str) -> GraphStats:
    """`stats_of` a stored graph (counts only: the dump's order does not matter)."""
    return stats_of(graph, list(graph_triples(store, graph)))
