"""The Oxigraph store and the `kgprobe kg` commands, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgprobe.errors import QueryError, StoreError
from kgprobe.kg.store import KnowledgeGraph, graph_iri
from kgprobe.ontology.loaders import bundled_source, load_rdf

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EX = "http://ex.org/"


def kgprobe(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture()
def zoo(tmp_path) -> Path:
    a = tmp_path / "zoo.ttl"
    a.write_text(f"""@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Dog rdfs:subClassOf ex:Mammal . ex:rex a ex:Dog .
""")
    b = tmp_path / "more.nt"
    b.write_text(f"<{EX}Mammal> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{EX}Animal> .\n")
    return tmp_path


def test_sparql_sees_the_union_of_named_graphs(zoo):
    kg = KnowledgeGraph(None)
    kg.add_sources([load_rdf(zoo / "zoo.ttl"), load_rdf(zoo / "more.nt")])
    assert kg.graphs() == [graph_iri("more"), graph_iri("zoo")]
    assert kg.count(graph_iri("zoo")) == 2 and kg.count() == 3
    # The path crosses the two graphs: only the union default graph can answer it.
    assert kg.query(f"ASK {{ <{EX}Dog> rdfs:subClassOf+ <{EX}Animal> }}").boolean is True
    res = kg.query(f"SELECT ?c WHERE {{ <{EX}Dog> rdfs:subClassOf+ ?c }} ORDER BY ?c")
    assert [r[0] for r in res.rows] == [EX + "Animal", EX + "Mammal"]
    con = kg.query(f"CONSTRUCT {{ ?s a <{EX}Thing> }} WHERE {{ ?s a ?c }}")
    assert con.triples == [(EX + "rex", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", EX + "Thing")]


def test_reloading_a_source_replaces_its_graph(zoo):
    kg = KnowledgeGraph(None)
    kg.add_sources([load_rdf(zoo / "zoo.ttl")])
    kg.add_sources([load_rdf(zoo / "zoo.ttl")])
    assert kg.count() == 2


def test_invalid_query_is_a_query_error():
    with pytest.raises(QueryError, match="invalid SPARQL"):
        KnowledgeGraph(None).query("SELECT ?x WHERE { ?x")


def test_store_persists_and_is_locked(tmp_path):
    path = tmp_path / "store"
    with KnowledgeGraph(path) as kg:
        kg.add_sources([bundled_source()])
        n = kg.count()
        with pytest.raises(StoreError, match="in use"):
            KnowledgeGraph(path)
    with KnowledgeGraph(path, create=False) as kg:
        assert kg.count() == n
    with pytest.raises(StoreError, match="no store here"):
        KnowledgeGraph(tmp_path / "nothing", create=False)


def test_stats_per_graph(zoo):
    kg = KnowledgeGraph(None)
    kg.add_sources([load_rdf(zoo / "zoo.ttl")])
    (stats,) = kg.stats()
    assert (stats.triples, stats.classes, stats.instances) == (2, 2, 1)


def test_cli_load_query_and_new_process(tmp_path):
    store = str(tmp_path / "s")
    out = kgprobe("kg", "load", "--default", "--store", store, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "classical music artist" in out.stderr  # the chain inconsistency is reported
    query = ('SELECT ?label WHERE { ?c rdfs:label "soccer player"@en ; rdfs:subClassOf+ ?a . '
             '?a rdfs:label ?label }')
    res = kgprobe("kg", "query", query, "--store", store, "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    labels = {b["label"]["value"] for b in json.loads(res.stdout)["results"]["bindings"]}
    chain = next(c for c in json.loads((SHARED / "ontoprobe" / "class.json").read_text())
                 if c["rdfs:label"] == "soccer player")["rdfs:subClassOf"]
    assert labels == set(chain)
    stats = kgprobe("kg", "stats", "--store", store, cwd=tmp_path)
    assert "urn:kgprobe:source:ontoprobe" in stats.stdout
    n = KnowledgeGraph(store, create=False).count()
    assert str(n) in stats.stdout


def test_cli_tour_prints_the_chain_in_order(tmp_path):
    out = kgprobe("kg", "tour", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("dbo:")]
    assert rows == ["athlete", "person", "animal", "eukaryote", "species"]
    assert (tmp_path / ".kgprobe" / "store").is_dir()


def test_cli_bad_inputs_exit_2_with_one_line_and_leave_store(tmp_path):
    store = str(tmp_path / "s")
    assert kgprobe("kg", "load", str(SHARED / "ontologies" / "pizza.owl"), "--store", store,
                   cwd=tmp_path).returncode == 0
    before = KnowledgeGraph(store, create=False)
    n = before.count()
    before.close()
    cut = tmp_path / "cut.ttl"
    cut.write_text((SHARED / "ontologies" / "dbpedia-ontology.ttl").read_text()[:5000])
    good = tmp_path / "good.nt"
    good.write_text(f"<{EX}a> <{EX}b> <{EX}c> .\n")
    for args in (["kg", "load", str(good), str(cut)],          # all-or-nothing across sources
                 ["kg", "load", str(tmp_path / "missing-dir-or-file")],
                 ["kg", "query", "SELECT ?x WHERE {"],
                 ["kg", "query", "@" + str(tmp_path / "nofile.rq")]):
        out = kgprobe(*args, "--store", store, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert out.stderr.startswith("kgprobe: error:")
    assert KnowledgeGraph(store, create=False).count() == n
    unreadable = tmp_path / "notastore"
    unreadable.write_text("x")
    out = kgprobe("kg", "stats", "--store", str(unreadable), cwd=tmp_path)
    assert out.returncode == 2 and "notastore" in out.stderr and "Traceback" not in out.stderr


def test_cli_export_round_trips(tmp_path, zoo):
    store = str(tmp_path / "s")
    kgprobe("kg", "load", str(zoo / "zoo.ttl"), "--store", store, cwd=tmp_path)
    out_file = tmp_path / "all.nt"
    res = kgprobe("kg", "export", "--format", "ntriples", "--out", str(out_file), "--store", store,
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(load_rdf(out_file).triples) == 2
    ttl = kgprobe("kg", "export", "--format", "turtle", "--store", store, cwd=tmp_path)
    assert f"<{EX}rex>" in ttl.stdout


def test_a_new_graph_version_is_published_as_a_difference_or_through_staging(tmp_path, monkeypatch):
    """Small changes to an existing graph go out as one DELETE/INSERT DATA update (no copy of
    the graph); big ones, or ones naming a blank node, through staging and MOVE; new graphs
    in place while pending. Every way, the graph ends up holding exactly the new triples."""
    import pyoxigraph as ox
    from kgprobe.kg import bulk
    from kgprobe.kg.meta import INFERRED_GRAPH

    staged = []
    real = bulk.stage_target
    monkeypatch.setattr(bulk, "stage_target",
                        lambda store, graph, *a: staged.append(graph) or real(store, graph, *a))
    ex = "http://ex.org/"
    base = {(f"{ex}s{i}", f"{ex}p", f"{ex}o{i % 7}") for i in range(40)}
    g = INFERRED_GRAPH  # `replace_inferred` publishes a new version of it after each reasoning
    with KnowledgeGraph(tmp_path / "store") as kg:
        for version, expect_staged in [
            (base, True),  # new graph: in place, pending until published
            (base - {(f"{ex}s1", f"{ex}p", f"{ex}o1")} | {
                (f"{ex}t{i}", f"{ex}p", str(ox.Literal(text, language="en"))) for i, text in
                enumerate(["x\ty", "ctrl\x01", 'q"uote', "\\u0041 is not A", "new\nline"])},
             False),  # a few changed triples, escapes and all: the difference
            (base | {("_:b1", f"{ex}p", f"{ex}o1")}, True),  # a blank node: staging
            ({(f"{ex}a", f"{ex}p", f"{ex}b")}, True),  # everything changes: staging
        ]:
            staged.clear()
            kg.replace_inferred(sorted(version))
            assert bool(staged) == expect_staged
            held = set(kg.triples(g))
            assert {t for t in held if not t[0].startswith("_:")} == {
                t for t in version if not t[0].startswith("_:")}
            assert len(held) == len(version) and g in kg.graphs()
            assert not [n for n in kg._store.named_graphs() if "staging" in n.value]
            assert not bulk.pending_graphs(kg._store, "urn:kgprobe:meta")
