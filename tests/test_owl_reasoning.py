"""`kgprobe reason --owl`: HermiT's named subsumptions and types join the inferred graph with
provenance owl:hermit, and generation uses them (issue 16)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.reasoning.owl import PROVENANCE, parse_hermit

DATA = Path(__file__).parent / "data"
EX = "http://ex.org/pizza#"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="HermiT needs Java")


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_parse_hermit_keeps_named_statements_and_reports_unsatisfiable():
    out = "\n".join([
        f"SubClassOf( <{EX}A> <{EX}B> )",
        f"SubClassOf( <{EX}A> <http://www.w3.org/2002/07/owl#Thing> )",
        f"EquivalentClasses( <http://www.w3.org/2002/07/owl#Nothing> <{EX}Bad> )",
        f"EquivalentClasses( <{EX}C> <{EX}D> )",
        f"EquivalentObjectProperties( <{EX}p> ObjectInverseOf( <{EX}q> ) )",
        f"Type( <{EX}i> <{EX}C> )",
    ])
    result = parse_hermit(out)
    assert result.triples == {(EX + "A", SUB, EX + "B"), (EX + "C", SUB, EX + "D"),
                              (EX + "D", SUB, EX + "C"), (EX + "i", TYPE, EX + "C")}
    assert result.unsatisfiable == [EX + "Bad"]


def test_missing_java_is_one_line(tmp_path, monkeypatch):
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(DATA / "veg_pizza.ttl"), "--store", store)[0] == 0
    monkeypatch.setattr("kgprobe.ontology.formats.shutil.which", lambda name: None)
    code, _, err = cli("reason", "--owl", "--store", store)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "java" in err and "--owl" in err


@needs_java
def test_owl_subsumptions_are_stored_with_provenance_and_used(tmp_path):
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(DATA / "veg_pizza.ttl"), "--store", store)[0] == 0
    code, out, _ = cli("reason", "--owl", "--store", store, "--provenance", str(tmp_path / "p.jsonl"))
    assert code == 0 and "owl:hermit" in out
    margherita = (EX + "Margherita", SUB, EX + "VegetarianPizza")
    diavola = (EX + "diavola", TYPE, EX + "SpicyPizza")
    with KnowledgeGraph(store, read_only=True) as kg:
        inferred = set(kg.triples("urn:kgprobe:inferred"))
        assert {margherita, diavola} <= inferred
        assert {margherita, diavola} <= kg.provenance(PROVENANCE)
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert {"rule": PROVENANCE, "conclusion": list(margherita), "premises": []} in rows
    # RDFS alone cannot: a plain `reason` drops them, and their provenance with them
    assert cli("reason", "--store", store)[0] == 0
    with KnowledgeGraph(store, read_only=True) as kg:
        assert margherita not in set(kg.triples("urn:kgprobe:inferred"))
        assert not kg.provenance(PROVENANCE)
    assert cli("reason", "--owl", "--store", store)[0] == 0
    # generation: memorizing answers and reasoning premises use HermiT's conclusions
    assert cli("generate", "memorizing", "--out", str(tmp_path / "m"), "--store", store)[0] == 0
    sco = [json.loads(x) for x in (tmp_path / "m" / "subClassOf.jsonl").read_text().splitlines()]
    marg = next(r for r in sco if r["subject_iri"] == EX + "Margherita")
    assert EX + "VegetarianPizza" in marg["answer_iris"]
    assert cli("generate", "reasoning", "--out", str(tmp_path / "r"), "--store", store)[0] == 0
    items = [json.loads(x) for x in (tmp_path / "r" / "rdfs9.jsonl").read_text().splitlines()]
    premises = [p for item in items for p in item["premises"]]
    hermit = next(p for p in premises if p["triple"] == [EX + "SpicyPizza", SUB, EX + "Pizza"])
    assert hermit["asserted"] is False


@needs_java
def test_pizza_margherita_is_vegetarian(tmp_path, shared_data):
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(shared_data("data/ontologies/pizza.owl")), "--store", store)[0] == 0
    assert cli("reason", "--owl", "--store", store)[0] == 0
    ns = "https://raw.githubusercontent.com/owlcs/pizza-ontology/refs/heads/master/pizza.owl#"
    with KnowledgeGraph(store, read_only=True) as kg:
        owl = kg.provenance(PROVENANCE)
    assert (ns + "Margherita", SUB, ns + "VegetarianPizzaEquivalent1") in owl


@needs_java
def test_reason_flags_rerun_reasoning_as_it_last_ran(tmp_path):
    """`kg load --reason` / `generate memorizing --reason` on a stale store re-run the rules and
    HermiT that `reason` last used: a plain RDFS rerun would silently drop every OWL conclusion."""
    store = str(tmp_path / "store")
    margherita = (EX + "Margherita", SUB, EX + "VegetarianPizza")
    assert cli("kg", "load", str(DATA / "veg_pizza.ttl"), "--store", store)[0] == 0
    assert cli("reason", "--owl", "--rules", "rdfs9,rdfs11", "--store", store)[0] == 0
    extra = tmp_path / "extra.ttl"
    extra.write_text("<http://ex.org/pizza#mine> a <http://ex.org/pizza#Margherita> .\n")
    code, out, _ = cli("kg", "load", str(extra), "--store", store, "--reason")
    assert code == 0 and "rdfs9, rdfs11, owl:hermit" in out
    with KnowledgeGraph(store, read_only=True) as kg:
        assert kg.inferred_state() == "fresh"
        assert kg.reasoned_with() == ("rdfs9", "rdfs11", PROVENANCE)
        assert margherita in kg.provenance(PROVENANCE)
        assert (EX + "mine", TYPE, EX + "VegetarianPizza") in set(kg.triples("urn:kgprobe:inferred"))
    extra.write_text("<http://ex.org/pizza#yours> a <http://ex.org/pizza#Margherita> .\n")
    assert cli("kg", "load", str(extra), "--store", store)[0] == 0
    code, out, _ = cli("generate", "memorizing", "--reason", "--out", str(tmp_path / "m"),
                       "--store", store)
    assert code == 0 and "owl:hermit" in out
    assert cli("reason", "--store", store)[0] == 0  # plain RDFS from now on
    extra.write_text("<http://ex.org/pizza#theirs> a <http://ex.org/pizza#Margherita> .\n")
    code, out, _ = cli("kg", "load", str(extra), "--store", store, "--reason")
    assert code == 0 and "owl:hermit" not in out and "rdfs2" in out
    with KnowledgeGraph(store, read_only=True) as kg:
        assert not kg.provenance(PROVENANCE) and PROVENANCE not in kg.reasoned_with()
