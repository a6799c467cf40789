"""`kgprobe kg check`: is the store whole? Read-only, so it runs beside a writer.

pyoxigraph 0.5 exposes no RocksDB verification (``Store`` has no ``validate``, and RocksDB's
``VerifyChecksum`` is not bound), so the check reads every entry of every index (RocksDB
verifies each block's checksum as it reads it, and a table file the manifest lists but the
directory lacks refuses the open), checks that the six quad indexes agree on how many quads
there are, and compares each source graph with what the meta graph recorded when it was
loaded: its triple count (bulk-loaded graphs) and its content hash (graphs loaded through
Python; a graph `kg serve --allow-updates` may have written is noted when it differs, not
called damaged). Inferred triples are checked as every other graph's, by the indexes; whether they
are stale is `kg stats`' business, not damage.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox
from kgprobe.errors import StoreError
from kgprobe.kg import meta as kgmeta
from kgprobe.kg.bulk import graph_triples, pending_graphs
from kgprobe.kg.integrity import BULK_GLOB, is_new, layout_problem
from kgprobe.kg.store import GRAPH_NS, STAGING_NS
from kgprobe.kg.terms import content_hash

@dataclass
class CheckReport:
    """What `kg check` found: `problems` make the store damaged; `notes` do not."""

    path: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    graphs: int = 0
    quads: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def check_store(path: Path) -> CheckReport:
    """Check the store at `path` without changing it (read-only; a writer may hold it)."""
    path = Path(path)
    report = CheckReport(path)
    problem = layout_problem(path)
    if problem is None and is_new(path):  # nothing to check: a user error, not damage
        raise StoreError(f"{path}: no store here; run `kgprobe kg load` first or pass --store")
    if problem is not None:
        report.problems.append(problem)
        return report
    report.notes += [f"{path / p.name}: left by a failed bulk load; the next writer deletes it"
                     for p in path.glob(BULK_GLOB)]
    try:
        store = ox.Store.read_only(str(path))
    except (OSError, RuntimeError) as err:
        report.problems.append(f"{path}: RocksDB cannot open it "
                               f"({' '.join(str(err).split())[:300]})")
        return report
    try:
        _scan(store, report)
    except (OSError, RuntimeError, ValueError) as err:
        report.problems.append(f"{path}: reading the store failed "
                               f"({' '.join(str(err).split())[:300]})")
    return report


def _count(quads) -> int:
    return sum(1 for _ in quads)


def _scan(store, report: CheckReport) -> None:
    """Read every index in full and compare what they and the meta graph say."""
    graphs = sorted(g.value for g in store.named_graphs())
    subjects, predicates, objects = set(), set(), set()
    per_graph: dict[str, int] = {}
    total = _count(store.quads_for_pattern(None, None, None, ox.DefaultGraph()))
    for g in graphs:
        node, n = ox.NamedNode(g), 0
        g_preds, g_objs = set(), set()
        for q in store.quads_for_pattern(None, None, None, node):  # index GSPO
            n += 1
            subjects.add(q.subject)
            g_preds.add(q.predicate)
            g_objs.add(q.object)
        per_graph[g] = n
        total += n
        predicates |= g_preds
        objects |= g_objs
        # indexes GPOS and GOSP hold the same quads of this graph
        for name, found in (
                ("GPOS", sum(_count(store.quads_for_pattern(None, p, None, node)) for p in g_preds)),
                ("GOSP", sum(_count(store.quads_for_pattern(None, None, o, node)) for o in g_objs))):
            if found != n:
                report.problems.append(f"graph <{g}>: index {name} holds {found} quads, "
                                       f"index GSPO {n}")
    for q in store.quads_for_pattern(None, None, None, ox.DefaultGraph()):
        subjects.add(q.subject)
        predicates.add(q.predicate)
        objects.add(q.object)
    for name, found in (
            ("SPOG", sum(_count(store.quads_for_pattern(s, None, None, None)) for s in subjects)),
            ("POSG", sum(_count(store.quads_for_pattern(None, p, None, None)) for p in predicates)),
            ("OSPG", sum(_count(store.quads_for_pattern(None, None, o, None)) for o in objects))):
        if found != total:
            report.problems.append(f"index {name} holds {found} quads, the graph indexes {total}")
    report.quads = total
    report.graphs = len([g for g in graphs if g != kgmeta.META_GRAPH])
    _compare_meta(store, per_graph, report, set(pending_graphs(store, kgmeta.META_GRAPH)))


def _compare_meta(store, per_graph: dict[str, int], report: CheckReport,
                  pending: set[str]) -> None:
    """Each source graph against its meta record: present, same triple count, same hash.

    A graph whose record carries `kg serve`'s mark (`meta.recorded_hash`) may have been
    changed by a write the server accepted: unchanged, it passes as any other; changed or
    dropped, that is a note, not damage (tests/test_store_files.py)."""
    records = {r["g"].value: kgmeta.recorded_hash(r["hash"].value) for r in store.query(
        f"SELECT ?g ?hash WHERE {{ GRAPH <{kgmeta.META_GRAPH}> {{ ?g <{kgmeta.SOURCE_HASH}> ?hash }} }}")}
    stats = kgmeta.cached_stats(store.query(kgmeta.stats_query()))
    for g in sorted(set(per_graph) | set(records)):
        recorded, served = records.get(g, ("", False))
        if g.startswith(STAGING_NS) or g in pending:
            report.notes.append(f"graph <{g}>: left by an interrupted write; the next writer "
                                "drops it")
        elif g in records and g not in per_graph:
            (report.notes if served else report.problems).append(
                f"graph <{g}>: recorded in the meta graph but missing"
                + (" (dropped by a write through `kg serve`)" if served else ""))
        elif g in stats and stats[g].triples != per_graph[g]:
            report.problems.append(f"graph <{g}>: holds {per_graph[g]} triples, "
                                   f"{stats[g].triples} were loaded")
        elif recorded and not recorded.startswith("file:") and g.startswith(GRAPH_NS):
            _compare_hash(store, g, recorded, served, report)


def _compare_hash(store, g: str, recorded: str, served: bool, report: CheckReport) -> None:
    """The graph's triples against the content hash recorded when it was loaded."""
    tag = "_:g" + hashlib.sha256(g.encode()).hexdigest()[:8]  # terms.scoped
    stored = [(_unscope(s, tag), p, _unscope(o, tag)) for s, p, o in graph_triples(store, g)]
    if content_hash(stored) == recorded:
        return
    if served:
        report.notes.append(f"graph <{g}>: changed by a write through `kg serve "
                            "--allow-updates` since it was loaded; checked through its "
                            "indexes only")
    elif any(_normalized(o) for _, _, o in stored):
        report.notes.append(f"graph <{g}>: content hash not comparable (Oxigraph "
                            "stores numeric, boolean and date literals in canonical "
                            "form); checked through its indexes only")
    else:
        report.problems.append(f"graph <{g}>: its triples differ from the ones loaded "
                               "(content hash mismatch)")


def _unscope(term: str, tag: str) -> str:
    return "_:" + term[len(tag):] if term.startswith(tag) else term


def _normalized(term: str) -> bool:
    """A literal Oxigraph may have rewritten when storing it: "03"^^xsd:integer is stored as
    "3", xsd:nonNegativeInteger as xsd:integer (every XSD datatype but string)."""
    return term.startswith('"') and f'"^^<{_XSD}' in term and not term.endswith('#string>')


_XSD = "http://www.w3.org/2001/XMLSchema#"
