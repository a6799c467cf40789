"""Bulk loading (issue 16, scale): a new graph is loaded in place while marked pending, an
existing one through staging; either way readers see the old or the new graph, never a part."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest


from kgprobe.cli import main
from kgprobe.kg import bulk
from kgprobe.kg.store import META_GRAPH, KnowledgeGraph, graph_iri
from kgprobe.ontology.loaders import open_rdf

DATA = Path(__file__).parent / "data"
PREFIX = "@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"


@pytest.fixture(autouse=True)
def bulk_everything(monkeypatch):
    """Small fixture files take the bulk path too (it starts at 8 MB)."""
    monkeypatch.setattr("kgprobe.ontology.loaders.BULK_MIN_BYTES", 0)


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_stats_recorded_at_load_equal_the_computed_ones(tmp_path):
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(DATA / "veg_pizza.ttl"), "--store", store)[0] == 0
    with KnowledgeGraph(store, read_only=True) as kg:
        graph = graph_iri("veg_pizza")
        assert kg.stats() == [bulk.graph_stats(kg._store, graph)]
        # 9 classes in the file; "spicy" is an adjective label (issue 25), not counted
        assert kg.stats()[0].triples == 55 and kg.stats()[0].classes == 8


def test_a_crashed_bulk_load_is_never_visible_and_is_dropped(tmp_path):
    path = tmp_path / "zoo.ttl"
    path.write_text(PREFIX + "ex:Dog rdfs:subClassOf ex:Animal .", encoding="utf-8")
    store = tmp_path / "store"
    assert cli("kg", "load", str(path), "--store", str(store))[0] == 0
    with KnowledgeGraph(store) as kg:  # what a kill -9 during a load leaves behind
        bulk.mark_pending(kg._store, META_GRAPH, graph_iri("half"))
        bulk.bulk_load(kg._store, open_rdf(DATA / "veg_pizza.ttl"), graph_iri("half"))
    with KnowledgeGraph(store, read_only=True) as kg:
        assert kg.graphs() == [graph_iri("zoo")] and kg.count() == 1
        assert len(set(kg.triples())) == 1
    with KnowledgeGraph(store) as kg:  # the next writer drops it
        pass
    with KnowledgeGraph(store, read_only=True) as kg:
        names = [g.value for g in kg._store.named_graphs()]
        assert graph_iri("half") not in names and not bulk.pending_graphs(kg._store, META_GRAPH)


def test_reload_replaces_through_staging_and_keeps_inferences_fresh(tmp_path):
    path = tmp_path / "zoo.ttl"
    path.write_text(PREFIX + "ex:Dog rdfs:subClassOf ex:Animal . ex:rex a ex:Dog .", encoding="utf-8")
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(path), "--store", store, "--reason")[0] == 0
    code, out, _ = cli("kg", "load", str(path), "--store", store)  # the same file again
    assert code == 0 and "stale" not in out
    path.write_text(PREFIX + "ex:Cat rdfs:subClassOf ex:Animal .", encoding="utf-8")
    code, out, _ = cli("kg", "load", str(path), "--store", store)
    assert code == 0 and "stale" in out
    with KnowledgeGraph(store, read_only=True) as kg:
        assert set(kg.triples(graph_iri("zoo"))) == {
            ("http://ex.org/Cat", "http://www.w3.org/2000/01/rdf-schema#subClassOf",
             "http://ex.org/Animal")}
        assert not [g for g in kg._store.named_graphs() if "staging" in g.value]
        assert kg.stats()[0].triples == 1  # the recorded figures were replaced too


def test_graph_triples_reads_what_quads_for_pattern_reads(tmp_path, shared_data):
    store = str(tmp_path / "store")
    pizza = shared_data("data/ontologies/pizza.owl")
    assert cli("kg", "load", str(pizza), "--store", store, "--name", "p")[0] == 0
    with KnowledgeGraph(store, read_only=True) as kg:
        fast = list(bulk.graph_triples(kg._store, graph_iri("p")))
        assert len(fast) == len(set(fast)) and set(fast) == set(kg.triples(graph_iri("p")))


def test_a_malformed_bulk_load_changes_nothing(tmp_path):
    store = str(tmp_path / "store")
    bad = tmp_path / "bad.ttl"
    bad.write_text(PREFIX + "ex:a ex:b ex:c .\nex:a ex:b", encoding="utf-8")
    code, _, err = cli("kg", "load", str(bad), "--store", store)
    assert code == 2 and "line 3" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()  # a failed first load leaves no store
    assert cli("kg", "load", str(DATA / "veg_pizza.ttl"), "--store", store)[0] == 0
    with KnowledgeGraph(store, read_only=True) as kg:
        before = sorted(kg.triples())
    for args in ([str(bad)], [str(bad), "--name", "veg_pizza", "--replace"]):  # new, replaced
        code, _, err = cli("kg", "load", *args, "--store", store)
        assert code == 2 and len(err.strip().splitlines()) == 1
        with KnowledgeGraph(store, read_only=True) as kg:
            assert sorted(kg.triples()) == before
            assert not [g for g in kg._store.named_graphs() if "staging" in g.value]


def _canonical(onto) -> dict:
    """What the model says, independent of triple order and blank-node ids."""
    def term(x: str) -> str:
        return "_:b" if x.startswith("_:") else x

    return {
        "classes": {i: (c.label, sorted(c.parents)) for i, c in onto.classes.items()},
        "properties": {i: (p.label, sorted(p.domain), sorted(p.range), sorted(p.parents),
                           p.pattern, sorted(p.same_as)) for i, p in onto.properties.items()},
        "instances": {i: (n.label, sorted(n.types)) for i, n in onto.instances.items()},
        "facts": sorted(tuple(map(term, t)) for t in onto.facts),
        "warnings": sorted(onto.warnings), "excluded": onto.excluded,
        "emptied": dict(onto.emptied),
    }


def _samples(tmp_path: Path, pizza: Path) -> list[Path]:
    """Turtle with OWL expressions, IDs, schema.org, hygiene; OWL/XML (converted); gzip;
    RDF/XML with blank nodes (pizza); a file stating triples twice."""
    import gzip

    files = sorted((DATA / "byo").glob("*.ttl")) + [DATA / "formats" / "zoo.owx"]
    gz = tmp_path / "owl.ttl.gz"
    gz.write_bytes(gzip.compress((DATA / "byo" / "owl.ttl").read_bytes()))
    twice = tmp_path / "twice.ttl"
    stated = "ex:Dog rdfs:subClassOf ex:Animal . ex:rex a ex:Dog ; ex:owner ex:ann .\n"
    twice.write_text(PREFIX + stated + stated, encoding="utf-8")
    return files + [gz, twice, pizza]


def test_the_model_built_beside_the_bulk_load_is_the_stored_graphs_model(tmp_path, shared_data):
    """stage_file builds the model from a second parse of the file, in a thread beside the
    loader: it must be the model of exactly what the store holds."""
    from kgprobe.ontology.from_triples import build_ontology
    from kgprobe.ontology.loaders import load_source

    for n, path in enumerate(_samples(tmp_path, shared_data("data/ontologies/pizza.owl"))):
        src = load_source(path, lazy=True)
        assert src.rdf is not None and src.ontology is None, path
        with KnowledgeGraph(tmp_path / f"store{n}") as kg:
            kg.add_sources([src])
            graph = graph_iri(src.name)
            stored = list(kg.triples(graph))
            assert src.count == len(stored) == kg.count(graph), path
            assert _canonical(src.ontology) == _canonical(build_ontology(src.name, stored)), path


def test_a_pending_graph_is_hidden_through_an_endpoint_too(tmp_path, monkeypatch):
    """`kg serve` serves the store as it is on disk: a graph a dead load left pending must stay
    out of an endpoint's graphs, as it stays out of the store's."""
    import pyoxigraph as ox

    from kgprobe.kg.endpoint import SparqlEndpoint

    path = tmp_path / "zoo.ttl"
    path.write_text(PREFIX + "ex:Dog rdfs:subClassOf ex:Animal .", encoding="utf-8")
    store = tmp_path / "store"
    assert cli("kg", "load", str(path), "--store", str(store))[0] == 0
    with KnowledgeGraph(store) as kg:
        bulk.mark_pending(kg._store, META_GRAPH, graph_iri("half"))
        bulk.bulk_load(kg._store, open_rdf(DATA / "veg_pizza.ttl"), graph_iri("half"))

    class DiskClient:  # answers as `oxigraph serve` would, from the same directory
        url = str(store)
        default_graphs: tuple = ()

        def __init__(self):
            self.db = ox.Store.read_only(str(store))

        def select(self, sparql, default_graphs=None):
            return self.db.query(sparql)

        def select_rows(self, sparql, default_graphs=None):
            return list(self.db.query(sparql))

    with KnowledgeGraph(store, read_only=True) as kg:
        local, stats = kg.graphs(), kg.stats()
    endpoint = SparqlEndpoint(DiskClient())
    assert endpoint.graphs() == local == [graph_iri("zoo")]
    # the figures recorded at load time are read, not recomputed from every triple
    monkeypatch.setattr("kgprobe.kg.endpoint.stats_of", lambda *a: pytest.fail("recomputed"))
    assert endpoint.stats() == stats and stats[0].triples == 1
