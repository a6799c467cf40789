"""Materializing the RDFS closure into the store's `urn:kgprobe:inferred` graph."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable

from kgprobe.kg.store import INFERRED_GRAPH, KnowledgeGraph
from kgprobe.reasoning.rdfs import RULES, Closure, closure


@dataclass
class ReasonReport:
    rules: tuple[str, ...]
    asserted: int  # distinct triples reasoned over
    inferred: int  # triples in the inferred graph afterwards
    added: int  # how many of those the store did not hold before
    derived_by: dict[str, int]
    seconds: float
    closure: Closure


def asserted_triples(kg: KnowledgeGraph) -> set:
    return {t for g in kg.asserted_graphs() for t in kg.triples(g)}


def materialize(kg: KnowledgeGraph, rules: Iterable[str] = RULES) -> ReasonReport:
    """Replace the inferred graph with the closure of every other graph.

    Reasoning always starts from the asserted graphs, so running it twice adds nothing
    and a source reloaded in between is reflected exactly.
    """
    start = time.perf_counter()
    asserted = asserted_triples(kg)
    result = closure(asserted, rules)
    before = set(kg.triples(INFERRED_GRAPH))
    if before != result.inferred:
        kg.drop_graph(INFERRED_GRAPH)
        kg.add_triples(INFERRED_GRAPH, sorted(result.inferred))
    return ReasonReport(tuple(result.rules), len(asserted), len(result.inferred),
                        len(result.inferred - before), result.derived_by(),
                        time.perf_counter() - start, result)


def clear(kg: KnowledgeGraph) -> int:
    """Remove the inferred graph; returns how many triples it held."""
    n = kg.count(INFERRED_GRAPH)
    kg.drop_graph(INFERRED_GRAPH)
    return n
