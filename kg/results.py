"""A SPARQL answer in kgprobe's term convention, whether the local store or an endpoint gave it."""

from __future__ import annotations

from dataclasses import dataclass

import pyoxigraph as ox
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import Triple


@dataclass
class QueryResult:
    """A SPARQL answer: `rows` for SELECT, `boolean` for ASK, `triples` for CONSTRUCT."""

    kind: str  # "select" | "ask" | "construct"
    variables: list[str]
    rows: list[list[str | None]]
    boolean: bool | None = None
    triples: list[Triple] | None = None


def query_result(result) -> QueryResult:
    """A pyoxigraph answer (solutions, boolean or triples) in kgprobe's term convention."""
    if isinstance(result, ox.QueryBoolean):
        return QueryResult("ask", [], [], boolean=bool(result))
    if isinstance(result, ox.QuerySolutions):
        variables = [v.value for v in result.variables]
        rows = [[None if sol[v] is None else from_ox(sol[v]) for v in variables] for sol in result]
        return QueryResult("select", variables, rows)
    triples = [(from_ox(t.subject), from_ox(t.predicate), from_ox(t.object)) for t in result]
    return QueryResult("construct", ["subject", "predicate", "object"],
                       [list(t) for t in triples], triples=triples)
