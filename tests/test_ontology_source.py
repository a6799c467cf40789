"""One ontology source for every command (`studies/ontology_source.py`): a study on a store
reads that store's ontology and pins it; a default store holding sources makes a study
without a source option stop in one line; the options resolve to one typed source."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.errors import KgprobeError
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options

WINE = Path(__file__).resolve().parent / "data" / "ontologies" / "wine.ttl"

#: A tiny ontology labelled in English and Spanish: two rdfs9 derivations (rex and fido are
#: dogs, every dog is a mammal).
BILINGUAL = """\
@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Dog rdfs:subClassOf ex:Mammal ; rdfs:label "dog"@en, "perro"@es .
ex:Cat rdfs:subClassOf ex:Mammal ; rdfs:label "cat"@en, "gato"@es .
ex:Mammal rdfs:subClassOf ex:Animal ; rdfs:label "mammal"@en, "mamífero"@es .
ex:Animal rdfs:label "animal"@en, "animal"@es .
ex:rex a ex:Dog ; rdfs:label "Rex"@en, "Rex"@es .
ex:fido a ex:Dog ; rdfs:label "Fido"@en, "Fido"@es .
ex:tom a ex:Cat ; rdfs:label "Tom"@en, "Tom"@es .
"""


def prompts(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]


def error_line(capsys) -> str:
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("kgprobe: error:")]
    assert len(lines) == 1, lines
    return lines[0]


def test_premise_ablation_on_a_store_asks_about_its_ontology(tmp_path, monkeypatch):
    """The issue's acceptance: `kg load wine.ttl --store S --reason`, then the study on
    `--store S` writes prompts about wines, and config.json names the store."""
    monkeypatch.setenv("KGPROBE_STORE", str(tmp_path / "no-default-store"))
    store, out = tmp_path / "S", tmp_path / "W"
    assert main(["kg", "load", str(WINE), "--store", str(store), "--reason"]) == 0
    assert main(["study", "premise-ablation", "--store", str(store), "--dry-run", "--limit", "2",
                 "--rules", "rdfs9", "--out", str(out)]) == 0
    rows = prompts(out)
    reasoning = [r for r in rows if r["extra"]["kind"] == "reasoning"]
    assert reasoning and all(r["rule"] == "rdfs9" for r in reasoning)
    golds = {g for r in reasoning for g in r["golds"]}
    assert any("wine" in g for g in golds), golds  # the bundled ontology has no wines
    assert not {"person", "agent"} & golds
    pinned = json.loads((out / "config.json").read_text())
    assert pinned["study"] == "premise-ablation" and pinned["dry_run"] is True
    source = pinned["extra"]["source"]
    assert source["kind"] == "store" and source["path"] == str(store.resolve())
    assert len(source["fingerprint"]) == 64
    assert pinned["extra"]["ontology"] == f"store {store}"
    # the store changes: its pinned fingerprint changes, so a resumed run would be refused
    before = OntologySource("store", str(store)).pinned()
    extra = tmp_path / "extra.ttl"
    extra.write_text(BILINGUAL)
    assert main(["kg", "load", str(extra), "--store", str(store)]) == 0
    assert OntologySource("store", str(store)).pinned()["fingerprint"] != before["fingerprint"]


def test_store_with_lang_es_prompts_in_spanish(tmp_path, monkeypatch):
    monkeypatch.setenv("KGPROBE_STORE", str(tmp_path / "no-default-store"))
    ttl, store, out = tmp_path / "pets.ttl", tmp_path / "S", tmp_path / "W"
    ttl.write_text(BILINGUAL, encoding="utf-8")
    assert main(["kg", "load", str(ttl), "--store", str(store)]) == 0
    assert main(["study", "premise-ablation", "--store", str(store), "--lang", "es",
                 "--dry-run", "--rules", "rdfs9", "--templates", "manual", "--out",
                 str(out)]) == 0
    reasoning = [r for r in prompts(out) if r["extra"]["kind"] == "reasoning"]
    assert reasoning and all("Por lo tanto" in r["text"] for r in reasoning)
    golds = {g for r in reasoning for g in r["golds"]}
    assert "mamífero" in golds and "mammal" not in golds
    assert json.loads((out / "config.json").read_text())["extra"]["source"]["lang"] == "es"
    # the same store in English: the English labels and templates
    assert main(["study", "premise-ablation", "--store", str(store), "--dry-run", "--rules",
                 "rdfs9", "--templates", "manual", "--out", str(tmp_path / "en")]) == 0
    english = [r for r in prompts(tmp_path / "en") if r["extra"]["kind"] == "reasoning"]
    assert "mammal" in {g for r in english for g in r["golds"]}


def test_a_default_store_with_sources_makes_the_source_ambiguous(tmp_path, monkeypatch, capsys):
    """No source option while the default store holds sources: one line naming both
    choices, exit 2, nothing written; naming either runs."""
    store = tmp_path / "default"
    ttl = tmp_path / "pets.ttl"
    ttl.write_text(BILINGUAL, encoding="utf-8")
    assert main(["kg", "load", str(ttl), "--store", str(store)]) == 0
    monkeypatch.setenv("KGPROBE_STORE", str(store))
    capsys.readouterr()
    for argv in (["study", "premise-ablation", "--dry-run", "--rules", "rdfs9", "--limit", "1"],
                 ["study", "memorization", "--dry-run", "--task", "domain", "--limit", "1"],
                 ["study", "consistency", "--dry-run", "--rules", "rdfs9", "--limit", "1"],
                 ["export", "lm-eval", "--studies", "memorizing", "--task", "domain",
                  "--limit", "1"]):
        out = tmp_path / argv[1]
        assert main([*argv, "--out", str(out)]) == 2, argv
        line = error_line(capsys)
        assert f"--store {store}" in line and "--ontology bundled" in line, line
        assert not out.exists()
    out = tmp_path / "bundled"
    assert main(["study", "premise-ablation", "--dry-run", "--rules", "rdfs9", "--limit", "1",
                 "--ontology", "bundled", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["extra"] == {"ontology": "bundled"}
    out = tmp_path / "store"
    assert main(["study", "consistency", "--dry-run", "--rules", "rdfs9", "--store", str(store),
                 "--out", str(out)]) == 0
    assert {g for r in prompts(out) for g in r["golds"]} & {"mammal", "animal"}


def parse(*argv: str, probes: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_ontology_options(parser, probes=probes)
    return parser.parse_args(list(argv))


def test_the_options_resolve_to_one_source(tmp_path, monkeypatch):
    monkeypatch.setenv("KGPROBE_STORE", str(tmp_path / "none"))
    assert OntologySource.from_args(parse()).bundled
    assert OntologySource.from_args(parse("--ontology", "bundled")).bundled
    url = "http://127.0.0.1:9/query"
    source = OntologySource.from_args(parse("--endpoint", url, "--timeout", "5", "--lang", "es"))
    assert (source.origin, source.location, source.timeout) == ("endpoint", url, 5.0)
    assert source.pinned() == {"kind": "endpoint", "url": url, "lang": "es"}
    assert source.options().langs == ("es",)
    ttl = tmp_path / "pets.ttl"
    ttl.write_text(BILINGUAL, encoding="utf-8")
    source = OntologySource.from_args(parse("--ontology", str(ttl)))
    assert source.origin == "file" and len(source.pinned()["sha256"]) == 64
    assert "perro" not in {c.label for c in source.load().ontology.classes.values()}
    probes = OntologySource.from_args(parse("--probes", str(tmp_path), probes=True))
    assert (probes.origin, probes.location) == ("probes", str(tmp_path))
    for argv, words in [(("--store", "s", "--endpoint", url), "--store and --endpoint"),
                        (("--ontology", str(tmp_path / "nope.ttl")), "no such file"),
                        (("--lang", "es"), "drop --lang"),
                        (("--lang", "xx"), "xx")]:
        with pytest.raises(KgprobeError, match=words):
            OntologySource.from_args(parse(*argv))
    assert OntologySource.from_args(parse(), default="store").origin == "store"
