"""Issue 23 case 6 and issue 25's owl:imports line, through the CLI: no request leaves the
machine unless the user asks (SERVICE, JSON-LD contexts, OWL/XML imports, HermiT's imports).
Each test first shows the attack is real (the opt-in flag makes the request arrive at a
127.0.0.1 socket), then that by default nothing arrives and the command ends in one line."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from limits_helpers import fails, kgp, ok, server  # noqa: E402

TTL = "@prefix ex: <http://ex.org/> .\nex:a ex:p ex:b .\n"


def test_service_is_refused_unless_allowed(tmp_path):
    (tmp_path / "g.ttl").write_text(TTL)
    ok(tmp_path, "kg", "load", "g.ttl")
    with server() as (port, hits):
        query = f"SELECT * {{ SERVICE <http://127.0.0.1:{port}/sparql> {{ ?s ?p ?o }} }}"
        kgp(tmp_path, "kg", "query", query, "--allow-federation")  # the attack: pyoxigraph sends it
        assert hits and (b"POST" in hits[0] or b"GET" in hits[0]), hits
        hits.clear()
        line = fails(tmp_path, "kg", "query", query)
        assert f"SERVICE <http://127.0.0.1:{port}/sparql>" in line and "--allow-federation" in line
        # SILENT, lower case, a comment before it: still refused; a variable named ?service is not
        fails(tmp_path, "kg", "query", f"SELECT * {{ # x\n service silent <http://127.0.0.1:{port}/> "
              "{ ?s ?p ?o } }")
        assert hits == []
    out = ok(tmp_path, "kg", "query", 'SELECT ?service { ?service <http://ex.org/p> ?o } # SERVICE <x>')
    assert "http://ex.org/a" in out


def test_federation_helper_finds_only_keywords():
    from kgprobe.kg.sparql_guard import federation

    def targets(text, kind="query"):
        return [f.target for f in federation(text, kind)]

    assert targets("SELECT * { SERVICE <http://x/q> { ?s ?p ?o } }") == ["<http://x/q>"]
    assert targets("SELECT * { SERVICE SILENT ?ep { ?s ?p ?o } }") == ["?ep"]
    assert targets('PREFIX ex: <http://ex.org/> SELECT ?service { ?service ex:SERVICE '
                   '"SERVICE <x>" ; ex:p "a"@service } # SERVICE <y>') == []
    assert targets("PREFIX SERVICE: <http://x/> SELECT * { SERVICE:a ?p ?o }") == []
    assert targets("LOAD <http://x/data.ttl> INTO GRAPH <urn:g>", "update") == ["<http://x/data.ttl>"]
    assert targets('INSERT DATA { <a> <b> "LOAD <x>" }', "update") == []


def test_jsonld_contexts_are_not_fetched(tmp_path):
    with server() as (port, hits):
        remote = tmp_path / "remote.jsonld"
        remote.write_text(f'{{"@context": "http://127.0.0.1:{port}/ctx.jsonld", '
                          '"@id": "http://ex.org/a", "name": "x"}')
        kgp(tmp_path, "kg", "load", "remote.jsonld", "--allow-imports")  # the attack: rdflib fetches
        assert hits, "the opt-in should fetch the context"
        hits.clear()
        line = fails(tmp_path, "kg", "load", "remote.jsonld")
        assert "@context" in line and "--allow-imports" in line
        assert hits == []
    secret = tmp_path / "secret.json"
    secret.write_text('{"@context": {"name": "http://ex.org/leaked"}}')
    local = tmp_path / "local.jsonld"
    local.write_text(f'{{"@context": "{secret.as_uri()}", "@id": "http://ex.org/a", "name": "x"}}')
    line = fails(tmp_path, "kg", "load", "local.jsonld")  # a file: context is not read either
    assert "@context" in line
    assert not (tmp_path / "store").exists()


OWX = """<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://ex.org/main">
    <Import>http://127.0.0.1:{port}/imported.owl</Import>
    <Declaration><Class IRI="http://ex.org/Dog"/></Declaration>
    <Declaration><Class IRI="http://ex.org/Animal"/></Declaration>
    <SubClassOf><Class IRI="http://ex.org/Dog"/><Class IRI="http://ex.org/Animal"/></SubClassOf>
</Ontology>
"""


def test_owlxml_imports_are_not_fetched_and_reason_names_them(tmp_path):
    with server() as (port, hits):
        (tmp_path / "main.owx").write_text(OWX.format(port=port))
        kgp(tmp_path, "kg", "load", "main.owx", "--allow-imports", "--store", "attack")
        assert hits, "the opt-in should let owlready2 fetch the import"
        hits.clear()
        ok(tmp_path, "kg", "load", "main.owx")
        assert hits == []
        assert "true" in ok(tmp_path, "kg", "query", "ASK { <http://ex.org/main> "
                            f"<http://www.w3.org/2002/07/owl#imports> <http://127.0.0.1:{port}/imported.owl> }}")
        line = fails(tmp_path, "reason", "--owl")
        assert f"imports http://127.0.0.1:{port}/imported.owl" in line
        assert "--ignore-imports" in line and "kg load" in line and "OWL 2 DL" not in line
        if shutil.which("java") is None:
            pytest.skip("no java: HermiT cannot run")
        out = ok(tmp_path, "reason", "--owl", "--ignore-imports")
        assert "owl:hermit" in out
        assert hits == [], "HermiT must not fetch the import"


OFN = """Prefix(:=<http://ex.org/>)
Ontology(<http://ex.org/fmain>
Import(<http://127.0.0.1:{port}/imported.owl>)
Declaration(Class(:Dog))
SubClassOf(:Dog :Animal)
)
"""


def test_functional_syntax_imports_are_not_fetched(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java: the OWL API cannot run")
    with server() as (port, hits):
        (tmp_path / "f.ofn").write_text(OFN.format(port=port))
        r = kgp(tmp_path, "kg", "load", "f.ofn", "--allow-imports", "--store", "attack")
        assert hits and r.returncode == 2, "the opt-in lets the OWL API fetch the import"
        hits.clear()
        ok(tmp_path, "kg", "load", "f.ofn")
        assert hits == []
        line = fails(tmp_path, "reason", "--owl")
        assert f"http://ex.org/fmain imports http://127.0.0.1:{port}/imported.owl" in line


def test_loaded_imports_are_not_missing():
    from kgprobe.reasoning.owl import missing_imports

    owl = "http://www.w3.org/2002/07/owl#"
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    triples = {("http://ex.org/main", owl + "imports", "http://ex.org/base/"),
               ("http://ex.org/main", owl + "imports", "http://ex.org/v1"),
               ("http://ex.org/main", owl + "imports", "http://ex.org/gone"),
               ("http://ex.org/base", rdf_type, owl + "Ontology"),
               ("http://ex.org/other", rdf_type, owl + "Ontology"),
               ("http://ex.org/other", owl + "versionIRI", "http://ex.org/v1")}
    assert missing_imports(triples) == [("http://ex.org/main", "http://ex.org/gone")]
