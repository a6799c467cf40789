"""kg/sparql_guard.py: the SERVICE/LOAD detection `kg serve` relies on (issue 23, case 1).

Attacks first: every way we know to hide a SERVICE or LOAD from a regex (case, comments,
codepoint escapes, no whitespace, SILENT, a variable target, inside an update's WHERE) is
found; then what must not be refused: the words inside strings, IRIs, names and variables."""

from __future__ import annotations

import pytest
from kgprobe.kg.sparql_guard import MAX_PARSED, expand_escapes, federation, keyword_scan
from kgprobe.kg.serve_checks import Request, classify

EVIL = "http://127.0.0.1:9/sparql"

HIDDEN_SERVICES = [
    f"SELECT * WHERE {{ SERVICE <{EVIL}> {{ ?s ?p ?o }} }}",
    f"select * where {{ service <{EVIL}> {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ SeRvIcE SILENT <{EVIL}> {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ # SERVICE is not here\n SERVICE # but here\n <{EVIL}> {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ ?a ?b ?c .SERVICE<{EVIL}>{{?s ?p ?o}} }}",
    f"SELECT * WHERE {{ \\u0053ERVICE <{EVIL}> {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ \\U00000053\\U00000045RVICE <{EVIL}> {{ ?s ?p ?o }} }}",
    f"PREFIX e: <{EVIL[:-6]}> SELECT * WHERE {{ SERVICE e:sparql {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ VALUES ?x {{ <{EVIL}> }} SERVICE ?x {{ ?s ?p ?o }} }}",
    f"SELECT * WHERE {{ OPTIONAL {{ {{ SELECT * {{ SERVICE <{EVIL}> {{ ?s ?p ?o }} }} }} }} }}",
    f"ASK {{ FILTER EXISTS {{ SERVICE <{EVIL}> {{ ?s ?p ?o }} }} }}",
]


@pytest.mark.parametrize("query", HIDDEN_SERVICES)
def test_every_hidden_service_is_found(query):
    found = federation(query, "query")
    assert found and found[0].keyword == "SERVICE", query


@pytest.mark.parametrize("update", [
    f"LOAD <{EVIL}>",
    f"load silent <{EVIL}> into graph <urn:g>",
    f"INSERT DATA {{ <urn:a> <urn:b> <urn:c> }} ; \\u004cOAD <{EVIL}>",
    f"INSERT {{ ?s ?p ?o }} WHERE {{ SERVICE <{EVIL}> {{ ?s ?p ?o }} }}",
])
def test_loads_and_services_in_updates_are_found(update):
    found = federation(update, "update")
    assert found and {f.keyword for f in found} <= {"LOAD", "SERVICE"}, update
    assert any(EVIL in f.target for f in found)


def test_targets_are_named_as_written():
    """Before: a prefixed target was shown as rdflib's internal `<pname_pname_{...}>`."""
    query = (f"PREFIX e: <{EVIL[:-6]}> SELECT * WHERE {{ SERVICE e:sparql {{ ?s ?p ?o }} "
             f"SERVICE :x {{ ?a ?b ?c }} SERVICE ?v {{ ?d ?e ?f }} SERVICE <{EVIL}> {{ ?g ?h ?i }} }}")
    assert [f.target for f in federation(query, "query")] == ["e:sparql", ":x", "?v", f"<{EVIL}>"]
    assert [str(f) for f in federation(f"PREFIX e: <{EVIL[:-6]}> LOAD e:x", "update")] == ["LOAD e:x"]


def test_what_cannot_be_parsed_but_mentions_one_is_refused_unverified():
    # rdflib cannot read this (not SPARQL 1.1), so we cannot show it calls nobody
    found = federation(f"SELECT * WHERE {{ SERVICE <{EVIL}> {{ ?s ?p ?o }} ADJUST }}", "query")
    assert [f.keyword for f in found] == ["unverified"]
    long = "SELECT * WHERE { ?s ?p \"load\" } " + "#" * MAX_PARSED
    assert [f.keyword for f in federation(long, "query")] == ["unverified"]


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { ?s ?p ?o } LIMIT 3",
    'SELECT * WHERE { ?s rdfs:label "customer service and load" }',
    "SELECT * WHERE { ?s ?p <http://example.org/service/load> }",
    "PREFIX service: <http://ex.org/> SELECT ?load WHERE { ?load service:load ?service }",
    'SELECT * WHERE { ?s ?p "x"@en . ?s ?q """a SERVICE <http://x> { } in a long string""" }',
    "SELECT * WHERE { ?s ?p ?o } # SERVICE <http://x> { } in a comment",
    "SELECT * WHERE { _:load ?p $service }",
])
def test_the_words_elsewhere_are_not_refused(query):
    assert federation(query, "query") == [], query


def test_the_keyword_scan_skips_strings_iris_and_comments_only():
    assert keyword_scan('"service" <urn:load> # SERVICE\n ex:load ?service') == []
    assert keyword_scan("x Service y") == ["Service"]
    assert expand_escapes("\\u004cOAD \\uD800 \\u12") == "LOAD \\uD800 \\u12"


def test_every_sparql_text_of_a_request_is_checked_as_oxigraph_routes_it():
    form = "application/x-www-form-urlencoded"
    write, texts = classify(Request("POST", "/query", "query=ASK{}", form, b"query=SELECT+1"))
    assert not write and texts == [("query", "ASK{}"), ("query", "SELECT 1")]
    write, texts = classify(Request("POST", "/sparql", "", form, b"update=LOAD+%3Chttp%3A%2F%2Fx%3E"))
    assert write and texts == [("update", "LOAD <http://x>")]
    write, texts = classify(Request("POST", "/update", "", "application/sparql-update", b"CLEAR ALL"))
    assert write and texts == [("update", "CLEAR ALL")]
    assert classify(Request("PUT", "/store", "default", "text/turtle", b"<a> <b> <c> ."))[0]
    assert not classify(Request("GET", "/store", "default", "", b""))[0]
    assert not classify(Request("POST", "/sparql", "", "application/sparql-query", b"ASK{}"))[0]
