"""Materializing the closure into the store, and `kgprobe reason`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from kgprobe.kg.store import INFERRED_GRAPH, KnowledgeGraph
from kgprobe.ontology.loaders import bundled_source, load_rdf
from kgprobe.reasoning.materialize import clear, materialize

EX = "http://ex.org/"


def test_inferred_graph_is_idempotent_and_removable(tmp_path):
    path = tmp_path / "zoo.ttl"
    path.write_text(f"@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                    "ex:Dog rdfs:subClassOf ex:Animal . ex:rex a ex:Dog .\n")
    kg = KnowledgeGraph(None)
    kg.add_sources([load_rdf(path)])
    ask = f"ASK {{ <{EX}rex> a <{EX}Animal> }}"
    assert kg.query(ask).boolean is False
    first = materialize(kg)
    assert first.added == 1 and kg.query(ask).boolean is True
    assert kg.graphs() == [INFERRED_GRAPH, "urn:kgprobe:source:zoo"]
    second = materialize(kg)
    assert second.added == 0 and kg.count() == 3
    assert clear(kg) == 1 and kg.query(ask).boolean is False and kg.count() == 2


def test_rule_subset_only_derives_its_rules(tmp_path):
    path = tmp_path / "zoo.ttl"
    path.write_text(f"@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                    "ex:Dog rdfs:subClassOf ex:Mammal . ex:Mammal rdfs:subClassOf ex:Animal . ex:rex a ex:Dog .\n")
    kg = KnowledgeGraph(None)
    kg.add_sources([load_rdf(path)])
    report = materialize(kg, ["rdfs11"])
    assert set(kg.triples(INFERRED_GRAPH)) == {
        (EX + "Dog", "http://www.w3.org/2000/01/rdf-schema#subClassOf", EX + "Animal")}
    assert report.rules == ("rdfs11",)


def test_cli_reason_on_the_bundled_ontology(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "kgprobe.cli", *a], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=300)
    assert run("kg", "load", "--default").returncode == 0
    prov = tmp_path / "prov.jsonl"
    out = run("reason", "--provenance", str(prov))
    assert out.returncode == 0, out.stderr
    assert "rdfs9" in out.stdout and " s" in out.stdout.splitlines()[0]
    # Every instance of 'soccer player' is now an athlete, a person, an animal, ...
    with KnowledgeGraph(tmp_path / ".kgprobe" / "store", create=False) as kg:
        missing = kg.query("""SELECT ?i WHERE {
            ?i a dbo:SoccerPlayer .
            FILTER NOT EXISTS { ?i a dbo:Athlete, dbo:Person, dbo:Animal, dbo:Eukaryote, dbo:Species } }""")
        players = kg.query("SELECT ?i WHERE { ?i a dbo:SoccerPlayer }")
        assert len(players.rows) == 20 and missing.rows == []
        n = kg.count()
    rules = Counter(json.loads(line)["rule"] for line in prov.read_text().splitlines())
    assert set(rules) == {"rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11"}
    again = run("reason")
    assert "(0 new)" in again.stdout
    assert "removed" in run("reason", "--clear").stdout
    with KnowledgeGraph(tmp_path / ".kgprobe" / "store", create=False) as kg:
        assert kg.count() == len(bundled_source().triples) < n
    bad = run("reason", "--rules", "rdfs2,rdfs4")
    assert bad.returncode == 2 and "rdfs4" in bad.stderr and "Traceback" not in bad.stderr
