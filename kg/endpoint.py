"""A remote SPARQL 1.1 endpoint read like the local store (`--endpoint URL`).

`SparqlEndpoint` has the read side of `KnowledgeGraph` (graphs, triples, count, query,
solutions, ontology, stats, inferred_state, require_fresh), so `kg query`, `kg stats`,
`generate …` and the studies read from it unchanged.  Two kinds of endpoint:

* a kgprobe store served by `kgprobe kg serve` (or any Oxigraph holding one): recognised by
  its `urn:kgprobe:meta` graph.  Queries then see the same dataset as locally: the union of
  the data graphs, sent as the protocol's `default-graph-uri`s, never the meta graph; and stale
  inferences are refused as they are locally.
* any other endpoint (Fuseki, DBpedia, Wikidata): its default graph, shown as one graph
  named `(default graph)`.

Bulk reads are counted first, then fetched whole or, past an endpoint's result cap (DBpedia's
is 10 000 rows) or --page-size, in LIMIT/OFFSET pages over an ORDER BY.  Blank nodes keep
their identity across pages on Oxigraph; other servers may relabel them per answer (SPARQL
scopes labels to one result set), so pull blank-node-heavy graphs with `kg pull` or an export instead.
"""

from __future__ import annotations

import re
from typing import Iterator

from kgprobe.kg.bulk import PENDING, GraphStats, stats_of
from kgprobe.kg.meta import (
    COMPUTED_FROM,
    SOURCE_HASH,
    SOURCE_PATH,
    cached_stats,
    fingerprint,
    provenance_query,
    stats_query,
)
from kgprobe.kg.model_reader import ModelReader
from kgprobe.kg.results import QueryResult, query_result
from kgprobe.kg.sparql_client import EndpointError, SparqlClient, with_prefixes
from kgprobe.kg.store import (
    INFERRED_GRAPH,
    META_GRAPH,
    PREFIXES,
    STAGING_NS,
    SourceRecord,
)
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import Triple

#: The one graph a plain endpoint shows: its default graph.
DEFAULT_GRAPH = "(default graph)"


class SparqlEndpoint(ModelReader):
    """Read-only access to a SPARQL endpoint, with the store's read interface."""

    read_only = True
    default_name = "endpoint"
    stale_fix = "run `kgprobe reason` on the store behind the endpoint"

    def __init__(self, client: SparqlClient, *, page_size: int | None = None):
        self.client, self.page_size = client, page_size
        self.path = client.url  # what messages name, as a store's directory
        self.kgprobe_store = bool(self.client.select(f"ASK {{ GRAPH <{META_GRAPH}> {{ ?s ?p ?o }} }}"))
        self._graphs = self._list_graphs() if self.kgprobe_store else [DEFAULT_GRAPH]

    def __enter__(self) -> "SparqlEndpoint":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is held open between requests."""

    def _list_graphs(self) -> list[str]:
        """The data graphs, as `KnowledgeGraph.graphs`: never meta, staging or pending ones (a
        bulk load that died leaves a pending graph until the store's next writer drops it)."""
        rows = self.client.select_rows(
            f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER NOT EXISTS {{ "
            f"GRAPH <{META_GRAPH}> {{ ?g <{PENDING}> ?mark }} }} }}")
        return sorted(s["g"].value for s in rows
                      if s["g"].value != META_GRAPH and not s["g"].value.startswith(STAGING_NS))

    # ------------------------------------------------------------------ the store's reads

    def graphs(self) -> list[str]:
        return list(self._graphs)

    def asserted_graphs(self) -> list[str]:
        return [g for g in self._graphs if g != INFERRED_GRAPH]

    def _dataset(self) -> tuple[str, ...]:
        """The union of the data graphs for a kgprobe store; the endpoint's own default else."""
        return tuple(self._graphs) if self.kgprobe_store else ()

    def solutions(self, sparql: str):
        """The endpoint's answer as pyoxigraph results (solutions, boolean or a triple list)."""
        text = with_prefixes(sparql, PREFIXES)
        if _query_form(sparql) in ("CONSTRUCT", "DESCRIBE"):
            return self.client.construct(text, default_graphs=self._dataset())
        return self.client.select(text, default_graphs=self._dataset())

    def query(self, sparql: str) -> QueryResult:
        try:  # solutions are parsed as they are read: see `SparqlClient.select_rows`
            return query_result(self.solutions(sparql))
        except (SyntaxError, ValueError) as err:
            raise EndpointError(f"{self.path}: the answer holds a term that is not valid RDF "
                                f"({' '.join(str(err).split())[:200]}); fix the data at the "
                                "endpoint, or ask for less") from None

    def select(self, sparql: str) -> list:
        """The solutions of a SELECT over the endpoint's dataset, as a list."""
        return self.client.select_rows(with_prefixes(sparql, PREFIXES),
                                       default_graphs=self._dataset())

    def select_paged(self, sparql: str, order: str) -> Iterator:
        """Every solution of a SELECT (`order`: its ORDER BY variables), page by page."""
        for page in self._pages(sparql, order, self._dataset()):
            yield from page

    def triples(self, graph: str | None = None) -> Iterator[Triple]:
        """Triples of one graph, or of the union (deduplicated), read page by page."""
        if graph is None:
            where, dataset = "?s ?p ?o", self._dataset()
        elif graph == DEFAULT_GRAPH:
            where, dataset = "?s ?p ?o", ()
        else:
            where, dataset = f"GRAPH <{graph}> {{ ?s ?p ?o }}", ()
        for page in self._pages(f"SELECT DISTINCT ?s ?p ?o WHERE {{ {where} }}", "?s ?p ?o",
                                dataset):
            for row in page:
                yield from_ox(row["s"]), from_ox(row["p"]), from_ox(row["o"])

    def _pages(self, sparql: str, order: str, dataset: tuple[str, ...]):
        """The whole answer in one request when the endpoint gives it; else ORDER BY +
        LIMIT/OFFSET pages.  SPARQL orders nothing without ORDER BY, and sorting costs the
        server (Oxigraph: seconds per 30k rows), so pages are the fallback, not the rule.

        The count comes first: a server that silently caps its answers (DBpedia: 10 000 rows)
        is caught, and its cap becomes the page size (or --page-size, if given, is checked)."""
        def ask(query: str) -> list:
            return self.client.select_rows(with_prefixes(query, PREFIXES), default_graphs=dataset)

        (row,) = ask(f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ {sparql} }} }}")
        total, size = int(row["n"].value), self.page_size
        if size is None or total <= size:
            rows = ask(sparql)
            if len(rows) >= total:
                yield rows
                return
            if size is not None or not rows:
                self._short_page(len(rows), total, 0, total)
            size = len(rows)  # the endpoint's cap
        for offset in range(0, total, size):
            rows = ask(f"{sparql} ORDER BY {order} LIMIT {size} OFFSET {offset}")
            if len(rows) < min(size, total - offset):
                self._short_page(len(rows), total, offset, min(size, total - offset))
            yield rows

    def _short_page(self, got: int, total: int, offset: int, expected: int) -> None:
        raise EndpointError(f"{self.path}: answered {got} rows where {expected} were expected "
                            f"(from row {offset} of {total}); the endpoint caps its answers: "
                            "pass a smaller --page-size")

    def count(self, graph: str | None = None) -> int:
        if graph is None or graph == DEFAULT_GRAPH:
            where = "?s ?p ?o"
            dataset = self._dataset() if graph is None else ()
            sparql = f"SELECT (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?s ?p ?o WHERE {{ {where} }} }}"
        else:
            sparql, dataset = f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}", ()
        (row,) = list(self.client.select(sparql, default_graphs=dataset))
        return int(row["n"].value)

    # ------------------------------------------------------------------ freshness

    def source_records(self) -> dict[str, SourceRecord]:
        if not self.kgprobe_store:
            return {}
        rows = self.client.select(f"SELECT ?g ?path ?hash WHERE {{ GRAPH <{META_GRAPH}> {{ "
                                  f"?g <{SOURCE_PATH}> ?path ; <{SOURCE_HASH}> ?hash }} }}")
        return {r["g"].value: SourceRecord(r["g"].value, r["path"].value, r["hash"].value)
                for r in rows}

    def inferred_state(self) -> str:
        """As the store's: 'none', 'fresh' or 'stale' (a plain endpoint has no inferred graph)."""
        if not self.kgprobe_store:
            return "none"
        rows = list(self.client.select(f"SELECT ?f WHERE {{ GRAPH <{META_GRAPH}> {{ "
                                       f"<{INFERRED_GRAPH}> <{COMPUTED_FROM}> ?f }} }}"))
        if not rows:
            return "stale" if INFERRED_GRAPH in self._graphs else "none"
        records = self.source_records()
        # The store's fingerprint: every source graph has a record (the store writes both at once).
        current = fingerprint({g: records[g].content_hash for g in self.asserted_graphs()
                               if g in records})
        return "fresh" if rows[0]["f"].value == current else "stale"

    def provenance(self, name: str) -> set[Triple]:
        """As the store's: the inferred triples the served store records as derived by `name`."""
        if not self.kgprobe_store:
            return set()
        return {(from_ox(r["s"]), from_ox(r["p"]), from_ox(r["o"]))
                for r in self.client.select(provenance_query(name))}

    def stats(self) -> list[GraphStats]:
        """As the store's: the figures a served kgprobe store recorded at load time, else
        each graph read and its model built."""
        cached = cached_stats(self.client.select(stats_query())) if self.kgprobe_store else {}
        return [cached.get(g) or stats_of(g, list(self.triples(g))) for g in self.graphs()]


def _query_form(sparql: str) -> str:
    """SELECT, ASK, CONSTRUCT or DESCRIBE: the first form keyword after the prologue."""
    body = re.sub(r"(?is)#[^\n]*|<[^>]*>|\"[^\"]*\"|'[^']*'", " ", sparql)
    match = re.search(r"(?i)\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", body)
    return match.group(1).upper() if match else "SELECT"
