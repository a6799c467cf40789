"""Terms between kgprobe's string convention and Oxigraph, and content hashes of graphs."""

from __future__ import annotations

import hashlib
from typing import Iterable, Iterator

import pyoxigraph as ox
from kgprobe.ontology.model import Triple, nt_term, parse_literal


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


def data_block(graph: str, triples: Iterable[Triple]) -> str:
    """``GRAPH <g> { … }`` for a SPARQL INSERT/DELETE DATA (terms are N-Triples syntax)."""
    body = " ".join(f"{nt_term(s)} {nt_term(p)} {nt_term(o)} ." for s, p, o in triples)
    return f"GRAPH <{graph}> {{ {body} }}"


def content_hash(triples: Iterable[Triple]) -> str:
    """sha256 of the sorted N-Triples lines: the same content gives the same hash."""
    digest = hashlib.sha256()
    for s, p, o in sorted(set(triples)):
        digest.update(f"{nt_term(s)} {nt_term(p)} {nt_term(o)} .\n".encode())
    return digest.hexdigest()


def lit(text: str) -> str:
    return str(ox.Literal(text))  # N-Triples escaping, valid in SPARQL


def scoped(graph: str, triples: Iterable[Triple]) -> Iterator[Triple]:
    """Blank-node labels are local to their file: prefix them per graph so two sources never
    share a node by accident (a reload of the same source gets the same labels)."""
    tag = hashlib.sha256(graph.encode()).hexdigest()[:8]

    def term(x: str) -> str:
        return f"_:g{tag}{x[2:]}" if x.startswith("_:") else x

    for s, p, o in triples:
        yield term(s), p, term(o)
