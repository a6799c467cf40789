"""The Oxigraph knowledge graph: one named graph per loaded source, SPARQL over their union.

What the store guarantees (the README's "Bad input" paragraph; tests/test_store_guarantees.py):
every change is staged and made visible by ONE SPARQL update (an Oxigraph update is one
transaction), so a crash leaves the old or the new state. A graph that does not exist yet is
written in place, marked pending in the meta graph (hidden from the union and `graphs()`),
and published by unmarking it; a new version of an existing graph is written into a
`urn:kgprobe:staging:*` graph and moved onto it (`MOVE` keeps blank-node identity; it costs
17–23 s per 300k triples, so only replacements pay it: `bulk.stage_target`). Pending and
staging graphs left by a crash are dropped on the next writer's open. A big file
(ontology/loaders.BULK_MIN_BYTES) is bulk-loaded by pyoxigraph (kg/bulk.py).
The `urn:kgprobe:meta` graph (never part of the union) records each source graph's path
and content hash, and the fingerprint of the sources the inferred graph was computed from:
inferences whose fingerprint differs from the current sources are stale.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterable, Iterator

import pyoxigraph as ox
from kgprobe.errors import KgprobeError, QueryError, StoreError
from kgprobe.kg import bulk, integrity
from kgprobe.kg import meta as kgmeta
from kgprobe.kg.lock import LOCK_NAME, WriterLock
from kgprobe.kg.meta import (
    COMPUTED_FROM,
    INFERRED_GRAPH,
    META_GRAPH,
    SOURCE_HASH,
    SOURCE_PATH,
    SourceRecord,
)
from kgprobe.kg.model_reader import ModelReader, StaleInferencesError  # noqa: F401 (re-exported)
from kgprobe.kg.query_errors import explain
from kgprobe.kg.results import QueryResult, query_result  # noqa: F401 (re-exported)
from kgprobe.kg.terms import content_hash, data_block, scoped, to_ox
from kgprobe.ontology.loaders import Source
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import (
    KGP,
    OWL,
    RDF,
    RDFS,
    SKOS,
    XSD,
    Triple,
)

GRAPH_NS = "urn:kgprobe:source:"
STAGING_NS = "urn:kgprobe:staging:"

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


class GraphNameError(StoreError):
    """A load would put a second file into an existing source graph."""


class KnowledgeGraph(ModelReader):
    """An Oxigraph store, on disk (``path``) or in memory (``path=None``).

    Each source lives in its own named graph so it can be replaced or removed on its own;
    queries see the union of all graphs as their default graph.
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True,
                 read_only: bool = False, wait: bool = False):
        """A writer takes the store's writer lock first (`wait`: block until it is free);
        a reader opens a read-only view and never blocks or is blocked by a writer."""
        self.path = Path(path) if path is not None else None
        self.read_only, self._lock, self.created = read_only, None, False
        self.committed = False  # a transaction of this process reached the store
        try:
            if self.path is None:
                self._store = ox.Store()
                return
            # before RocksDB sees it: it would start an empty store over a damaged one
            integrity.require_layout(self.path)
            if (not create or read_only) and integrity.is_new(self.path):
                raise StoreError(f"{self.path}: no store here; run `kgprobe kg load` first "
                                 "or pass --store")
            if read_only:
                self._store = ox.Store.read_only(str(self.path))
                return
            self._lock = WriterLock(self.path, wait=wait)
            self._lock.acquire()  # before looking: a writer we waited for may have created it
            integrity.require_layout(self.path)  # again: that writer may have left anything
            self.created = integrity.is_new(self.path)
            integrity.remove_bulk_leftovers(self.path)
            self._store = ox.Store(str(self.path))
            self._drop_staging()
        except OSError as err:
            self.close(quiet=True)
            raise StoreError(f"{self.path}: cannot open the store ({_first_line(err)}); "
                             f"{_os_hint(err, read_only)}") from None
        except RuntimeError as err:  # RocksDB's "Corruption: …" (a table file missing, …)
            self.close(quiet=True)
            raise integrity.opening_error(self.path, err) from None
        except BaseException:
            self.close(quiet=True)
            raise

    def __enter__(self) -> "KnowledgeGraph":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(quiet=exc_type is not None)

    def close(self, *, quiet: bool = False) -> None:
        """Flush and release the store and the writer lock. A flush that fails (disk full)
        raises a StoreError after both are released, unless `quiet` (another error is
        already on its way: it is the one the user sees)."""
        store, self._store = getattr(self, "_store", None), None
        failed = None
        if self.path is not None and store is not None and not self.read_only:
            try:
                store.flush()
            except OSError as err:
                failed = err
        del store  # releases Oxigraph's on-disk lock (if nothing else holds it)
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if failed is not None and not quiet:
            raise StoreError(f"{self.path}: could not save the store ({_first_line(failed)}); "
                             f"{_os_hint(failed, False)}") from None

    def discard(self) -> None:
        """Close and delete a store this process created: a failed first load leaves nothing.
        The writer lock is held until the directory is gone, so no waiting writer sees it."""
        self._store = None
        shutil.rmtree(self.path, ignore_errors=True)
        self.close(quiet=True)

    # ------------------------------------------------------------------ writing

    def add_sources(self, sources: Iterable[Source], *, replace: bool = False,
                    provenance: dict[str, list[tuple[str, str]]] | None = None) -> list[str]:
        """Load sources, each into its own named graph, all in one transaction.

        A graph already holding another file needs ``replace=True``; reloading the same
        path replaces it.  Inferences become stale (the sources' fingerprint changes).
        `provenance` (graph → [(predicate IRI, object in SPARQL syntax)]) goes into the meta
        graph beside the graph's path and hash, in the same transaction.
        """
        sources = list(sources)
        known = self.source_records()
        graphs: dict[str, Source] = {}
        for src in sources:
            graph, path = graph_iri(src.name), _source_path(src.path)
            if graph in graphs:
                raise GraphNameError(f"{src.path}: graph '{src.name}' would also hold "
                                     f"{graphs[graph].path}; load one of them with --name")
            old = known.get(graph)
            if old is not None and old.path != path and not replace:
                raise GraphNameError(f"{src.path}: graph '{src.name}' already holds {old.path}; "
                                     "pass --replace to replace it, or --name to load it beside")
            graphs[graph] = src
        eager = {g: s for g, s in graphs.items() if s.rdf is None}
        meta = {g: SourceRecord(g, _source_path(s.path), content_hash(s.triples))
                for g, s in eager.items()}
        staged: dict = {g: scoped(g, s.triples) for g, s in eager.items()}
        for g, src in graphs.items():
            if src.rdf is not None:
                staged[g] = src
                meta[g] = SourceRecord(g, _source_path(src.path), bulk.file_hash(src.rdf))
        self._commit(staged, meta, source_facts=provenance)
        kgmeta.record_stats(self._store, [bulk.GraphStats.of(g, s.size, s.ontology)
                                          for g, s in graphs.items() if s.rdf is not None])
        return list(graphs)

    def remove_source(self, name: str) -> SourceRecord:
        """Drop a source graph and its record in one transaction."""
        graph = name if name.startswith(GRAPH_NS) else graph_iri(name)
        record = self.source_records().get(graph)
        if record is None and graph not in self.graphs():
            names = ", ".join(g[len(GRAPH_NS):] for g in self.asserted_graphs()) or "none"
            raise GraphNameError(f"no source graph named '{name}'; loaded: {names}")
        self._commit({}, {}, drop=[graph])
        return record or SourceRecord(graph, "?", "?")

    def replace_inferred(self, triples: Iterable[Triple],
                         provenance: dict[str, Iterable[Triple]] | None = None,
                         reasoned_with: tuple[str, ...] = ()) -> None:
        """Make the inferred graph hold exactly `triples`, computed from the current sources.

        `provenance` names the reasoner of some of them (``{"owl:hermit": …}``): recorded in
        the meta graph (reified, never part of the union) in the same transaction, so generation
        can tell an OWL conclusion from an RDFS one; `reasoned_with` (rules, ``owl:hermit``) too."""
        self._commit({INFERRED_GRAPH: triples}, {}, fingerprint=self.fingerprint(),
                     provenance=provenance or {}, reasoned_with=reasoned_with)
        integrity.flush_now(self._store, self.path)  # no log left for readers to replay

    def reasoned_with(self) -> tuple[str, ...]:
        """What the inferred graph was last computed with (rules, and ``owl:hermit`` after
        `reason --owl`); () when never reasoned. `--reason` re-runs exactly that."""
        return kgmeta.reasoned_with(self._store)

    def provenance(self, name: str) -> set[Triple]:
        """The inferred triples recorded as derived by `name` (e.g. ``owl:hermit``)."""
        return kgmeta.recorded_provenance(self._store, name)

    def clear_inferred(self) -> None:
        self._commit({}, {}, drop=[INFERRED_GRAPH], fingerprint="")

    def _commit(self, graphs: dict[str, Iterable[Triple]], meta: dict[str, SourceRecord], *,
                drop: Iterable[str] = (), fingerprint: str | None = None,
                provenance: dict[str, Iterable[Triple]] | None = None,
                source_facts: dict[str, list[tuple[str, str]]] | None = None,
                reasoned_with: tuple[str, ...] = ()) -> None:
        """Stage every graph, then publish all of it with one SPARQL update (one transaction)."""
        ops = []
        try:
            for n, (graph, triples) in enumerate(graphs.items()):
                staging = f"{STAGING_NS}{n}"
                if isinstance(triples, Source):
                    ops.append(bulk.stage_file(self._store, triples, graph, staging, META_GRAPH))
                    continue
                ops.extend(self._stage(graph, triples, staging))
            for graph in drop:
                ops.append(f"DROP SILENT GRAPH <{graph}>")
            rows = kgmeta.meta_updates(ops, meta, drop, fingerprint, provenance, source_facts,
                                       reasoned_with)
            if rows:
                ops.append(f"INSERT DATA {{ GRAPH <{META_GRAPH}> {{ {' '.join(rows)} }} }}")
            if ops:
                self._store.update(" ;\n".join(ops))
                self.committed = True
        except BaseException as err:
            try:
                self._drop_staging()
                if self.path is not None:
                    integrity.remove_bulk_leftovers(self.path)
            except OSError:
                pass  # the disk is full: the next writer's open drops them
            if isinstance(err, KgprobeError):
                # a bad file: drop the frames (they hold the Oxigraph store open, and a failed
                # first load must be able to delete the store directory)
                err.__context__ = err.__cause__ = None
                raise err.with_traceback(None)
            if not isinstance(err, (SyntaxError, OSError, RuntimeError, TypeError, ValueError)):
                raise
            hint = f"; {_os_hint(err, False)}" if isinstance(err, OSError) else ""
            raise StoreError(f"graph(s) {', '.join(graphs) or ', '.join(drop)}: could not be "
                             f"written ({_first_line(err)}); the store is unchanged{hint}") from None

    def _stage(self, graph: str, triples: Iterable[Triple], staging: str) -> list[str]:
        """Write the new version of `graph` where it stays hidden; return the updates that
        publish it. A small change to an existing graph (re-reasoning after loading one more
        file) is published as its difference: a MOVE copies the whole graph (17–23 s and
        +1.2 GB for 300k inferred triples), DELETE/INSERT DATA cost ~34 µs a changed triple.
        A difference holding a blank node is staged (INSERT DATA would mint a new one)."""
        if graph in self.graphs():
            new, old = set(triples), set(self.triples(graph))
            gone, added = old - new, new - old
            blank = any(t.startswith("_:") for s, _, o in gone | added for t in (s, o))
            if not blank and len(gone) + len(added) <= (len(old) + len(new)) // 2:
                return [f"{verb} DATA {{ {data_block(graph, part)} }}"
                        for verb, part in (("DELETE", gone), ("INSERT", added)) if part]
            triples = new
        target, publish = bulk.stage_target(self._store, graph, staging, META_GRAPH)
        # not `bulk_extend`: its SST files escaped the damaged-store check (test_limits_memory)
        self._store.extend(ox.Quad(to_ox(s), to_ox(p), to_ox(o), ox.NamedNode(target))
                           for s, p, o in triples)
        return [publish]

    def _drop_staging(self) -> None:
        """Staging and pending graphs are never published state: left over only by a crash
        or a failed load."""
        bulk.drop_pending(self._store, META_GRAPH)
        for g in list(self._store.named_graphs()):
            if g.value.startswith(STAGING_NS):
                self._store.remove_graph(g)

    # ------------------------------------------------------------------ bookkeeping

    def source_records(self) -> dict[str, SourceRecord]:
        rows = self._store.query(
            f"SELECT ?g ?path ?hash WHERE {{ GRAPH <{META_GRAPH}> {{ ?g <{SOURCE_PATH}> ?path ; "
            f"<{SOURCE_HASH}> ?hash }} }}")
        return {r["g"].value: SourceRecord(r["g"].value, r["path"].value, r["hash"].value)
                for r in rows}

    def fingerprint(self) -> str:
        """Hash of the (graph, content hash) pairs of every source graph now in the store."""
        records = self.source_records()
        return kgmeta.fingerprint({
            g: records[g].content_hash if g in records else content_hash(self.triples(g))
            for g in self.asserted_graphs()})

    def inferred_state(self) -> str:
        """'none' (never reasoned), 'fresh', or 'stale' (sources changed since `reason`)."""
        rows = list(self._store.quads_for_pattern(ox.NamedNode(INFERRED_GRAPH), ox.NamedNode(COMPUTED_FROM),
                                                  None, ox.NamedNode(META_GRAPH)))
        if not rows:
            return "stale" if INFERRED_GRAPH in self.graphs() else "none"
        return "fresh" if rows[0].object.value == self.fingerprint() else "stale"

    # ------------------------------------------------------------------ reading

    def asserted_graphs(self) -> list[str]:
        """Every data graph but the inferred one: what reasoning starts from."""
        return [g for g in self.graphs() if g != INFERRED_GRAPH]

    def graphs(self) -> list[str]:
        """The data graphs (sources and inferred; not the meta or staging graphs)."""
        pending = set(bulk.pending_graphs(self._store, META_GRAPH))
        return sorted(g.value for g in self._store.named_graphs()
                      if g.value != META_GRAPH and not g.value.startswith(STAGING_NS)
                      and g.value not in pending)

    def triples(self, graph: str | None = None) -> Iterator[Triple]:
        """Triples of one named graph, or of the union of all graphs (deduplicated)."""
        if graph is not None:
            quads = self._store.quads_for_pattern(None, None, None, ox.NamedNode(graph))
            for q in quads:
                yield from_ox(q.subject), from_ox(q.predicate), from_ox(q.object)
            return
        seen: set[Triple] = set()
        visible = set(self.graphs())
        for q in self._store:
            if q.graph_name.value not in visible:
                continue
            t = (from_ox(q.subject), from_ox(q.predicate), from_ox(q.object))
            if t not in seen:
                seen.add(t)
                yield t

    def count(self, graph: str | None = None) -> int:
        if graph is None:
            visible = set(self.graphs())
            hidden = [g for g in self._store.named_graphs() if g.value not in visible]
            return len(self._store) - sum(1 for g in hidden
                                          for _ in self._store.quads_for_pattern(None, None, None, g))
        return bulk.graph_size(self._store, graph)

    def _union(self) -> dict:
        """Query options: the default graph is the union of the data graphs (never meta)."""
        return {"default_graph": [ox.NamedNode(g) for g in self.graphs()] or [ox.DefaultGraph()]}

    def solutions(self, sparql: str):
        """Oxigraph's own answer (QuerySolutions, QueryBoolean or QueryTriples) over the union
        of all graphs: what the W3C result serializers in `kg.formats` write."""
        try:
            return self._store.query(sparql, prefixes=PREFIXES, **self._union())
        except SyntaxError as err:
            raise QueryError(explain(sparql, _first_line(err), PREFIXES)) from None
        except OSError as err:
            raise StoreError(f"query failed while reading the store ({_first_line(err)})") from None

    def query(self, sparql: str) -> QueryResult:
        """Run a SELECT, ASK or CONSTRUCT query over the union of all graphs."""
        return query_result(self.solutions(sparql))

    def stats(self) -> list[bulk.GraphStats]:
        """Per named graph: triples, and the classes/properties/instances the model sees."""
        # recorded by the bulk load: no model to rebuild
        cached = kgmeta.cached_stats(self._store.query(kgmeta.stats_query()))
        return [cached.get(g) or bulk.graph_stats(self._store, g) for g in self.graphs()]


def _source_path(path: str) -> str:
    """A source's identity: its absolute path (names like '(bundled)' stay as they are)."""
    return str(Path(path).resolve()) if Path(path).exists() else path


def _first_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200]


def _os_hint(err: OSError, read_only: bool) -> str:
    """What to do about an OSError: RocksDB reports errno only in its message."""
    text = str(err)
    if "No space left" in text or "quota exceeded" in text.lower():
        return "free disk space and run the command again"
    if "Read-only file system" in text:
        return "pass a --store on a writable file system"
    return f"pass a{'n existing' if read_only else ' writable'} --store directory"
