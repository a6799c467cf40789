"""The `urn:kgprobe:meta` graph: what the store records about its own graphs.

Per source graph its path and content hash; for the inferred graph the fingerprint of the
sources it was computed from and, reified, which reasoner derived which triple (provenance
such as ``owl:hermit``). Never part of the union the queries see.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

import pyoxigraph as ox
from kgprobe.kg.terms import lit
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import KGP, RDF, Triple, nt_term

INFERRED_GRAPH = "urn:kgprobe:inferred"
META_GRAPH = "urn:kgprobe:meta"
#: per source graph, in the meta graph: the file it was loaded from and its content hash
SOURCE_PATH, SOURCE_HASH = KGP + "sourcePath", KGP + "sourceHash"
#: What `kg serve --allow-updates` appends to every recorded source hash before and after a
#: write it accepts (kg/serve_proxy.py `mark_stale`), followed by a time stamp: the hash
#: before it stays what the graph held when it was loaded.
SERVED_WRITE = " written through kg serve"
#: the fingerprint of the sources the inferred graph was computed from
COMPUTED_FROM = KGP + "computedFrom"
_BY = KGP + "derivedBy"
#: what the inferred graph was computed with ("rdfs2,rdfs3,…", plus "owl:hermit" after
#: `reason --owl`): `--reason` on a stale store re-runs exactly that
_WITH = KGP + "reasonedWith"
#: `kg stats` figures of a bulk-loaded source graph, recorded after it is published and
#: deleted with its path and hash whenever the graph is replaced or removed.
STAT_PREDICATES = {name: KGP + "stat" + name.title()
                   for name in ("triples", "classes", "properties", "instances")}


@dataclass(frozen=True)
class SourceRecord:
    """What the meta graph says about one source graph."""

    graph: str
    path: str
    content_hash: str


def recorded_hash(value: str) -> tuple[str, bool]:
    """(the content hash recorded at load time, whether a write through `kg serve` may have
    changed the graph since): `kg check` compares the first only when the second is false,
    and otherwise says the graph was written through the server, not that it is damaged."""
    head, served, _ = value.partition(SERVED_WRITE)
    return head, bool(served)


def _reified(name: str, triple: Triple) -> str:
    """One provenance row: a blank node naming the reasoner and the triple it derived."""
    s, p, o = map(nt_term, triple)
    return (f"[] <{_BY}> {lit(name)} ; <{RDF}subject> {s} ; <{RDF}predicate> {p} ; "
            f"<{RDF}object> {o} .")


def meta_updates(ops: list[str], meta: dict[str, SourceRecord], drop: Iterable[str],
                 fingerprint: str | None, provenance: dict[str, Iterable[Triple]] | None,
                 source_facts: dict[str, list[tuple[str, str]]] | None = None,
                 reasoned_with: tuple[str, ...] = ()) -> list[str]:
    """Append the DELETEs for records being replaced to `ops`; return the rows to INSERT.

    A replaced or removed graph loses every meta row about it (path, hash, stats, and the
    facts `kg pull` records: `source_facts`, graph → [(predicate IRI, object in SPARQL
    syntax)]); `provenance` names the reasoner of inferred triples (``{"owl:hermit": …}``);
    `reasoned_with` the rules (and reasoners) the inferred graph was computed with.
    """
    for graph in [*meta, *drop]:
        ops.append(f"DELETE WHERE {{ GRAPH <{META_GRAPH}> {{ <{graph}> ?p ?a }} }}")
    rows = [f"<{r.graph}> <{SOURCE_PATH}> {lit(r.path)} . <{r.graph}> <{SOURCE_HASH}> {lit(r.content_hash)} ."
            for r in meta.values()]
    rows += [f"<{g}> <{p}> {o} ." for g, facts in (source_facts or {}).items() for p, o in facts]
    if fingerprint is not None:
        for pred in (COMPUTED_FROM, _WITH):
            ops.append(f"DELETE WHERE {{ GRAPH <{META_GRAPH}> {{ <{INFERRED_GRAPH}> <{pred}> ?c }} }}")
        ops.append(f"DELETE WHERE {{ GRAPH <{META_GRAPH}> {{ ?r <{_BY}> ?by ; "
                   f"<{RDF}subject> ?s ; <{RDF}predicate> ?p ; <{RDF}object> ?o }} }}")
        if fingerprint:
            rows.append(f"<{INFERRED_GRAPH}> <{COMPUTED_FROM}> {lit(fingerprint)} .")
        if fingerprint and reasoned_with:
            rows.append(f"<{INFERRED_GRAPH}> <{_WITH}> {lit(','.join(reasoned_with))} .")
        rows += [_reified(name, t) for name, ts in (provenance or {}).items() for t in ts]
    return rows


def fingerprint(hashes: dict[str, str]) -> str:
    """The fingerprint of a set of source graphs (graph → content hash): what the inferred
    graph records it was computed from, and what decides whether it is stale."""
    lines = sorted(f"{g} {h}" for g, h in hashes.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def provenance_query(name: str) -> str:
    """The SELECT (?s ?p ?o) of the triples the meta graph records as derived by `name`."""
    return (f"SELECT ?s ?p ?o WHERE {{ GRAPH <{META_GRAPH}> {{ ?r <{_BY}> {lit(name)} ; "
            f"<{RDF}subject> ?s ; <{RDF}predicate> ?p ; <{RDF}object> ?o }} }}")


def reasoned_with(store: ox.Store) -> tuple[str, ...]:
    """The rules (and ``owl:hermit``) the inferred graph was last computed with; () if none."""
    for q in store.quads_for_pattern(ox.NamedNode(INFERRED_GRAPH), ox.NamedNode(_WITH), None,
                                     ox.NamedNode(META_GRAPH)):
        return tuple(q.object.value.split(","))
    return ()


def recorded_provenance(store: ox.Store, name: str) -> set[Triple]:
    """The triples the meta graph records as derived by `name` (e.g. ``owl:hermit``)."""
    rows = store.query(provenance_query(name))
    return {(from_ox(r["s"]), from_ox(r["p"]), from_ox(r["o"])) for r in rows}


def record_stats(store: ox.Store, stats: list) -> None:
    """Remember `GraphStats` of freshly published graphs (one small update; a crash before it
    only means `kg stats` computes them)."""
    rows = [f"<{st.graph}> <{iri}> {getattr(st, name)} ." for st in stats
            for name, iri in STAT_PREDICATES.items()]
    if rows:
        store.update(f"INSERT DATA {{ GRAPH <{META_GRAPH}> {{ {' '.join(rows)} }} }}")


def stats_query() -> str:
    """The SELECT (?g ?p ?n) of the figures `record_stats` wrote: one query for the store and
    an endpoint serving one."""
    preds = " ".join(f"<{iri}>" for iri in STAT_PREDICATES.values())
    return (f"SELECT ?g ?p ?n WHERE {{ GRAPH <{META_GRAPH}> {{ ?g ?p ?n }} "
            f"VALUES ?p {{ {preds} }} }}")


def cached_stats(rows) -> dict:
    """graph → `GraphStats` from `stats_query`'s answer (graphs with all four figures)."""
    from kgprobe.kg.bulk import GraphStats

    names = {iri: name for name, iri in STAT_PREDICATES.items()}
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        found.setdefault(row["g"].value, {})[names[row["p"].value]] = int(row["n"].value)
    return {g: GraphStats(g, **v) for g, v in found.items() if len(v) == len(STAT_PREDICATES)}