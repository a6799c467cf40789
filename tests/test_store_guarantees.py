"""The issue-15 scenarios through the CLI (`python -m kgprobe.cli`): the store never lies
(stale inferences are refused, generalized triples are not stored) and never loses data
(atomic reasoning, no silent overwrite, a failed load changes nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

EX = "http://ex.org/"
PREFIX = ("@prefix ex: <http://ex.org/> . @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n"
          "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n")
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import kgp, ok, one_line  # noqa: E402


def fails(tmp: Path, *args: str) -> str:
    return one_line(kgp(tmp, *args))


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PREFIX + body, encoding="utf-8")
    return path


def ask(tmp: Path, pattern: str) -> bool:
    return ok(tmp, "kg", "query", f"PREFIX ex: <{EX}> ASK {{ {pattern} }}").strip() == "true"


def inferred_count(tmp: Path) -> int:
    out = ok(tmp, "kg", "query", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:kgprobe:inferred> { ?s ?p ?o } }",
             "--format", "table")
    return int(out.split()[2])


def test_blank_node_predicate_is_held_back_and_keeps_previous_inferences(tmp_path):
    """Scenario 1: the engine derives (ex:x, _:p, ex:y); reason must not crash or lose data."""
    write(tmp_path / "zoo.ttl", "ex:Dog rdfs:subClassOf ex:Animal . ex:rex a ex:Dog .")
    ok(tmp_path, "kg", "load", "zoo.ttl")
    ok(tmp_path, "reason")
    assert inferred_count(tmp_path) == 1
    write(tmp_path / "bn.ttl", "ex:bar rdfs:subPropertyOf _:p . ex:x ex:bar ex:y .")
    ok(tmp_path, "kg", "load", "bn.ttl")
    out = ok(tmp_path, "reason")
    assert "1 generalized triples held back" in out
    assert ask(tmp_path, "ex:rex a ex:Animal")
    assert inferred_count(tmp_path) == 1


def test_stale_inferences_are_refused(tmp_path):
    """Scenario 2: after the file changes, the old inference must not become a gold answer."""
    onto = write(tmp_path / "zoo.ttl", "ex:Dog rdfs:subClassOf ex:Animal . ex:rex a ex:Dog . "
                 "ex:Animal rdfs:label \"animal\" . ex:Dog rdfs:label \"dog\" .")
    ok(tmp_path, "kg", "load", "zoo.ttl", "--reason")
    assert ask(tmp_path, "ex:rex a ex:Animal")
    ok(tmp_path, "generate", "memorizing", "--out", "probes")
    write(onto, "ex:rex a ex:Dog . ex:Dog rdfs:label \"dog\" .")
    out = ok(tmp_path, "kg", "load", "zoo.ttl")
    assert "stale" in out
    for cmd in (["generate", "memorizing", "--out", "probes2"], ["kg", "stats"]):
        err = fails(tmp_path, *cmd)
        assert "kgprobe reason" in err
    assert not (tmp_path / "probes2").exists()
    ok(tmp_path, "generate", "memorizing", "--out", "probes2", "--reason")
    assert not ask(tmp_path, "ex:rex a ex:Animal")
    assert EX + "Animal" not in (tmp_path / "probes2" / "type.jsonl").read_text()
    ok(tmp_path, "kg", "stats")


def test_same_file_name_needs_name_or_replace(tmp_path):
    """Scenario 3: a/onto.ttl and b/onto.ttl must not silently share one graph."""
    write(tmp_path / "a" / "onto.ttl", "ex:A rdfs:subClassOf ex:B .")
    write(tmp_path / "b" / "onto.ttl", "ex:C rdfs:subClassOf ex:D .")
    err = fails(tmp_path, "kg", "load", "a/onto.ttl", "b/onto.ttl")
    assert "--name" in err
    assert not (tmp_path / "store").exists()
    ok(tmp_path, "kg", "load", "a/onto.ttl")
    err = fails(tmp_path, "kg", "load", "b/onto.ttl")
    assert "--replace" in err and "a/onto.ttl" in err
    assert ask(tmp_path, "ex:A rdfs:subClassOf ex:B")
    ok(tmp_path, "kg", "load", "a/onto.ttl")  # reloading the same file is fine
    ok(tmp_path, "kg", "load", "b/onto.ttl", "--name", "onto-b")
    assert ask(tmp_path, "ex:A rdfs:subClassOf ex:B") and ask(tmp_path, "ex:C rdfs:subClassOf ex:D")
    ok(tmp_path, "kg", "load", "b/onto.ttl", "--replace")
    assert not ask(tmp_path, "ex:A rdfs:subClassOf ex:B")
    ok(tmp_path, "kg", "remove", "onto-b")
    out = ok(tmp_path, "kg", "query", "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", "--format", "csv")
    assert "onto-b" not in out
    fails(tmp_path, "kg", "remove", "nope")


def test_failed_first_load_creates_no_store(tmp_path):
    """Scenario 4: a bad file leaves nothing behind, and later commands say so."""
    (tmp_path / "bad.ttl").write_text("ex:a ex:b", encoding="utf-8")
    fails(tmp_path, "kg", "load", "bad.ttl")
    assert not (tmp_path / "store").exists()
    err = fails(tmp_path, "generate", "memorizing", "--out", "probes")
    assert "kg load" in err


def test_failed_load_leaves_the_store_unchanged(tmp_path):
    write(tmp_path / "zoo.ttl", "ex:Dog rdfs:subClassOf ex:Animal .")
    ok(tmp_path, "kg", "load", "zoo.ttl", "--reason")
    before = ok(tmp_path, "kg", "export", "--format", "ntriples")
    (tmp_path / "bad.ttl").write_text("ex:a ex:b", encoding="utf-8")
    write(tmp_path / "good.ttl", "ex:Cat rdfs:subClassOf ex:Animal .")
    fails(tmp_path, "kg", "load", "good.ttl", "bad.ttl")
    assert ok(tmp_path, "kg", "export", "--format", "ntriples") == before
    ok(tmp_path, "kg", "stats")  # still fresh


def test_generalized_triple_example(tmp_path):
    """rdfs3 on a literal object: ex:C rdf:type ex:R, like owlrl; the literal-subject triple is held back."""
    write(tmp_path / "g.ttl", 'ex:a ex:p "s" . ex:p rdfs:range ex:C . rdf:type rdfs:range ex:R .')
    out = ok(tmp_path, "kg", "load", "g.ttl", "--reason")
    assert "generalized triples held back" in out
    assert ask(tmp_path, "ex:C a ex:R")
    rows = ok(tmp_path, "kg", "query", f"PREFIX ex: <{EX}> SELECT ?s WHERE {{ ?s a ex:C }}", "--format", "csv")
    assert rows.split() == ["s"]
