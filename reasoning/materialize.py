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
    held_back: int  # inferred generalized triples that are not legal RDF (never stored)
    derived_by: dict[str, int]
    seconds: float
    closure: Closure


def asserted_triples(kg: KnowledgeGraph) -> set:
    return {t for g in kg.asserted_graphs() for t in kg.triples(g)}


def materialize(kg: KnowledgeGraph, rules: Iterable[str] = RULES) -> ReasonReport:
    """Replace the inferred graph with the closure of every other graph.

    The closure is computed completely before the store is touched, and only its legal
    RDF triples replace the inferred graph, in one transaction together with the
    fingerprint of the sources it was computed from: a failure or a crash leaves the old
    inferences (and their freshness) as they were.  Reasoning always starts from the
    asserted graphs, so running it twice adds nothing.
    """
    start = time.perf_counter()
    asserted = asserted_triples(kg)
    result = closure(asserted, rules)
    stored = result.rdf_inferred
    before = set(kg.triples(INFERRED_GRAPH))
    kg.replace_inferred(sorted(stored))
    return ReasonReport(tuple(result.rules), len(asserted), len(stored), len(stored - before),
                        len(result.held_back), result.derived_by(),
                        time.perf_counter() - start, result)


def clear(kg: KnowledgeGraph) -> int:
    """Remove the inferred graph; returns how many triples it held."""
    n = kg.count(INFERRED_GRAPH)
    kg.clear_inferred()
    return n
