"""`kg query --format` and `kg export` follow the W3C formats: each output is parsed back by an
independent parser (rdflib's SPARQL result parsers and RDF parsers) and compared."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import rdflib
import rdflib.compare
from rdflib.query import Result

from kgprobe.kg.store import KnowledgeGraph, graph_iri
from kgprobe.ontology.loaders import load_rdf

EX = "http://ex.org/"
ZOO = f"""@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Dog rdfs:subClassOf ex:Mammal ; rdfs:label "dog, \\"the\\" animal"@en .
ex:rex a ex:Dog ; ex:legs "4"^^xsd:integer ; ex:note "caf\u00e9 \\\\ back" ; ex:seen [ ex:by ex:ann ] .
"""
OTHER = f"<{EX}Mammal> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{EX}Animal> .\n"
SELECT = (f"SELECT ?s ?o ?missing WHERE {{ ?s ?p ?o FILTER(?s IN (<{EX}Dog>, <{EX}rex>)) "
          f"OPTIONAL {{ ?s <{EX}none> ?missing }} }}")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    (root / "zoo.ttl").write_text(ZOO)
    (root / "other.nt").write_text(OTHER)
    with KnowledgeGraph(root / "store") as kg:
        kg.add_sources([load_rdf(root / "zoo.ttl"), load_rdf(root / "other.nt")])
    return root / "store"


def query(store: Path, sparql: str, fmt: str) -> bytes:
    res = cli("kg", "query", sparql, "--store", str(store), "--format", fmt, cwd=store.parent)
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout


def expected_rows(store: Path) -> set[tuple]:
    """The answer as rdflib terms, from the source files parsed by rdflib itself."""
    g = rdflib.Graph()
    g.parse(store.parent / "zoo.ttl")
    rows = set()
    for s, _, o in g:
        if str(s) in (EX + "Dog", EX + "rex"):
            rows.add((s, None if isinstance(o, rdflib.BNode) else o, None))
    return rows


def rdflib_rows(result: Result) -> set[tuple]:
    return {(r[0], None if isinstance(r[1], rdflib.BNode) else r[1], r[2]) for r in result}


@pytest.mark.parametrize("fmt", ["json", "xml", "tsv"])
def test_select_results_parse_back_to_the_same_terms(store, fmt):
    out = query(store, SELECT, fmt)
    result = Result.parse(io.BytesIO(out), format=fmt)
    assert [str(v) for v in result.vars] == ["s", "o", "missing"]
    assert rdflib_rows(result) == expected_rows(store)  # langs, datatypes, unbound kept
    assert sum(isinstance(r[1], rdflib.BNode) for r in result) == 1


def test_json_is_the_w3c_results_format(store):
    data = json.loads(query(store, SELECT, "json"))
    assert data["head"]["vars"] == ["s", "o", "missing"]
    label = next(b["o"] for b in data["results"]["bindings"] if b["o"].get("xml:lang"))
    assert label == {"type": "literal", "value": 'dog, "the" animal', "xml:lang": "en"}
    assert all("missing" not in b for b in data["results"]["bindings"])


def test_csv_gives_lexical_forms_only(store):
    out = query(store, SELECT, "csv").decode()
    assert out.splitlines()[0] == "s,o,missing"
    assert '"dog, ""the"" animal"' in out and "@en" not in out and "^^" not in out
    result = Result.parse(io.BytesIO(out.encode()), format="csv")
    values = {str(r[1]) for r in result}
    assert {'dog, "the" animal', "4", "café \\ back", EX + "Dog"} <= values


@pytest.mark.parametrize("fmt", ["json", "xml"])
def test_ask_parses_back(store, fmt):
    yes = Result.parse(io.BytesIO(query(store, f"ASK {{ <{EX}rex> a <{EX}Dog> }}", fmt)), format=fmt)
    no = Result.parse(io.BytesIO(query(store, f"ASK {{ <{EX}rex> a <{EX}Cat> }}", fmt)), format=fmt)
    assert yes.askAnswer is True and no.askAnswer is False


CONSTRUCT = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{graph_iri('zoo')}> {{ ?s ?p ?o }} }}"
RDFLIB_NAMES = {"turtle": "turtle", "ntriples": "nt", "nquads": "nquads", "jsonld": "json-ld"}


@pytest.mark.parametrize("fmt", ["turtle", "ntriples", "nquads", "jsonld"])
def test_construct_writes_rdf_that_rdflib_reads_back(store, fmt):
    out = query(store, CONSTRUCT, fmt)
    ds = rdflib.Dataset()
    ds.parse(data=out, format=RDFLIB_NAMES[fmt])
    got = rdflib.Graph()
    for s, p, o, _ in ds.quads():
        got.add((s, p, o))
    want = rdflib.Graph().parse(store.parent / "zoo.ttl")
    assert rdflib.compare.isomorphic(got, want)


def test_export_graph_writes_one_named_graph(store, tmp_path):
    out = tmp_path / "zoo.nq"
    res = cli("kg", "export", "--graph", "zoo", "--format", "nquads", "--out", str(out),
              "--store", str(store), cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    ds = rdflib.Dataset()
    ds.parse(out, format="nquads")
    names = {str(c) for _, _, _, c in ds.quads()}
    assert names == {graph_iri("zoo")}
    want = rdflib.Graph().parse(store.parent / "zoo.ttl")
    assert rdflib.compare.isomorphic(ds.graph(rdflib.URIRef(graph_iri("zoo"))), want)
    union = cli("kg", "export", "--format", "ntriples", "--store", str(store), cwd=tmp_path)
    assert len(rdflib.Graph().parse(data=union.stdout, format="nt")) == len(want) + 1
    ttl = cli("kg", "export", "--graph", graph_iri("other"), "--store", str(store), cwd=tmp_path)
    assert len(rdflib.Graph().parse(data=ttl.stdout, format="turtle")) == 1
    bad = cli("kg", "export", "--graph", "nope", "--store", str(store), cwd=tmp_path)
    assert bad.returncode == 2 and b"no such graph" in bad.stderr


def test_a_format_that_does_not_fit_the_answer_is_one_line_exit_2(store):
    for sparql, fmt in ((SELECT, "turtle"), (CONSTRUCT, "json")):
        res = cli("kg", "query", sparql, "--store", str(store), "--format", fmt, cwd=store.parent)
        assert res.returncode == 2 and len(res.stderr.decode().strip().splitlines()) == 1
        assert b"--format " + fmt.encode() in res.stderr


def test_table_stays_for_people(store):
    out = query(store, f"SELECT ?o WHERE {{ <{EX}Dog> rdfs:label ?o }}", "table").decode()
    assert 'dog, "the" animal' in out and "(1 row)" in out
