"""`kgprobe study consistency`: derivations from the engine's provenance, the consistency
arithmetic, a run on a tiny model with its report, resuming, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.loaders import load_source
from kgprobe.ontology.model import RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from kgprobe.reasoning.items import item_closure
from kgprobe.studies.consistency.beliefs import DerivationRanks, consistency_row, consistency_table
from kgprobe.studies.consistency.config import ConsistencyConfig
from kgprobe.studies.consistency.study import build
from kgprobe.studies.results import Results

TTL = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
ex:Animal a owl:Class ; rdfs:label "animal" .
ex:Mammal a owl:Class ; rdfs:label "mammal" ; rdfs:subClassOf ex:Animal .
ex:Dog a owl:Class ; rdfs:label "dog" ; rdfs:subClassOf ex:Mammal .
ex:Person a owl:Class ; rdfs:label "person" ; rdfs:subClassOf ex:Mammal .
ex:Place a owl:Class ; rdfs:label "place" .
ex:City a owl:Class ; rdfs:label "city" ; rdfs:subClassOf ex:Place .
ex:bornIn a rdf:Property ; rdfs:label "born in" ; rdfs:domain ex:Person ; rdfs:range ex:City ;
    rdfs:subPropertyOf ex:locatedIn .
ex:locatedIn a rdf:Property ; rdfs:label "located in" ; rdfs:subPropertyOf ex:relatedTo .
ex:relatedTo a rdf:Property ; rdfs:label "related to" .
ex:owns a rdf:Property ; rdfs:label "owns" ; rdfs:domain ex:Person ; rdfs:range ex:Animal .
ex:rex a ex:Dog ; rdfs:label "Rex" .
ex:alice a ex:Person ; rdfs:label "Alice" .
ex:bob a ex:Person ; rdfs:label "Bob" .
ex:paris a ex:City ; rdfs:label "Paris" .
ex:alice ex:bornIn ex:paris .
ex:alice ex:owns ex:rex .
"""


@pytest.fixture
def zoo(tmp_path) -> Path:
    path = tmp_path / "zoo.ttl"
    path.write_text(TTL)
    return path


def _follows(rule: str, p1, p2, c) -> bool:
    """Whether `c` follows from P1 (schema) and P2 by `rule`, as the W3C rule states it."""
    if rule == "rdfs9":
        return p1[1] == RDFS_SUBCLASSOF and p2 == (c[0], RDF_TYPE, p1[0]) and c[1:] == (RDF_TYPE, p1[2])
    if rule in ("rdfs11", "rdfs5"):
        p = RDFS_SUBCLASSOF if rule == "rdfs11" else RDFS_SUBPROPERTYOF
        return p1[1] == p2[1] == c[1] == p and p2[2] == p1[0] and c == (p2[0], p, p1[2])
    if rule == "rdfs7":
        return p1[1] == RDFS_SUBPROPERTYOF and p2[1] == p1[0] and c == (p2[0], p1[2], p2[2])
    subject = p2[0] if rule == "rdfs2" else p2[2]
    return p2[1] == p1[0] and c == (subject, RDF_TYPE, p1[2])


def test_derivations_follow_the_engines_provenance(zoo):
    setup = build(ConsistencyConfig(None, ontology=zoo, limit=None, candidates="3"))
    source = load_source(zoo)
    closure = item_closure(source.ontology, source.triples)
    true = closure.asserted | closure.inferred
    assert set(setup.derivations) == {"rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11"}
    for rule, derivations in setup.derivations.items():
        engine = {(d.premises[0], d.premises[1], d.conclusion) for d in closure.derivations(rule)}
        assert derivations, rule
        for d in derivations:
            p1, p2, c = d.triples
            assert (p1, p2, c) in engine and {p1, p2, c} <= true, d
            assert _follows(rule, p1, p2, c), d
    # Rex is a dog, a dog is a mammal ⊢ Rex is a mammal, asked as TP probes about "Rex"
    rex = [d for d in setup.derivations["rdfs9"] if d.conclusion.subject == "Rex"
           and d.premises[1].answer == "dog" and d.conclusion.answer == "mammal"]
    assert [(s.relation, s.subject, s.answer) for s in rex[0].statements] == [
        ("subClassOf", "dog", "mammal"), ("type", "Rex", "dog"), ("type", "Rex", "mammal")]
    # every statement is asked once per template, however many derivations share it
    keys = [p.statement.key for probes in setup.probes.values() for p in probes]
    assert len(keys) == len(set(keys))
    # Rex's other types are true answers of the same prompt (left out when filtered)
    probe = next(p for p in setup.probes[("type", 0)] if p.statement.key == "type|Rex||dog")
    assert probe.prompt == "Rex is a [MASK] ." and {"mammal", "animal"} <= probe.true


def test_consistency_arithmetic_on_known_beliefs():
    # ranks: (P1, P2, conclusion); believed at rank 1
    ranks = [(1, 1, 1), (1, 1, 1), (1, 1, 3), (1, 1, 1),  # both: 3 of 4 concluded
             (2, 1, 1), (1, 5, 4), (3, 3, 2), (2, 2, 2)]  # not both: 1 of 4
    derivations = [DerivationRanks(f"d{i}", *r) for i, r in enumerate(ranks)]
    row = consistency_row(derivations, believe_at=1, seed=0, key=("t",))
    assert (row["n_derivations"], row["n_both"], row["n_not_both"]) == (8, 4, 4)
    assert row["consistency"] == pytest.approx(0.75)
    assert row["p_given_not_both"] == pytest.approx(0.25)
    assert row["difference"] == pytest.approx(0.5)
    assert row["violations"] == 1
    assert row["consistency_lo"] <= 0.75 <= row["consistency_hi"]
    assert row["MRR"] == pytest.approx((4 + 1 / 3 + 1 / 4 + 1 / 2 + 1 / 2) / 8)
    weights = [min(1 / a, 1 / b) for a, b, _ in ranks]
    graded = sum(w / c for w, (_, _, c) in zip(weights, ranks)) / sum(weights)
    assert row["graded"] == pytest.approx(graded)
    # believed within the top 2: (2, 2, 2) joins "both" and is concluded; (3, 3, 2) is not both
    wide = consistency_row(derivations, believe_at=2, seed=0, key=("t",))
    assert (wide["n_both"], wide["violations"]) == (6, 1)
    assert wide["consistency"] == pytest.approx(5 / 6)
    # the same ranks give the same table; an "all" row pools the rules
    table = consistency_table({("a", 0): derivations[:4], ("b", 0): derivations[4:]}, seed=0)
    again = consistency_table({("a", 0): derivations[:4], ("b", 0): derivations[4:]}, seed=0)
    assert json.dumps(table) == json.dumps(again)  # NaN-safe equality
    assert [r["rule"] for r in table] == ["a", "b", "all"]
    assert table[2]["consistency"] == pytest.approx(0.75) and table[2]["n_derivations"] == 8


def test_the_all_row_compares_within_rules():
    """Easy conclusions with often-believed premises (one rule) beside hard ones (another) make
    a pooled gap that neither rule has: the all row's difference is the rules' mean, 0."""
    easy = ([DerivationRanks(f"e{i}", 1, 1, 1) for i in range(4)]
            + [DerivationRanks(f"e{i}", 2, 1, 1) for i in range(4, 6)])
    hard = ([DerivationRanks(f"h{i}", 1, 1, 3) for i in range(2)]
            + [DerivationRanks(f"h{i}", 3, 1, 2) for i in range(2, 6)])
    table = consistency_table({("easy", 0): easy, ("hard", 0): hard}, seed=0)
    pooled = table[2]
    assert pooled["rule"] == "all" and pooled["consistency"] == pytest.approx(4 / 6)
    assert pooled["p_given_not_both"] == pytest.approx(2 / 6)
    assert pooled["difference"] == pytest.approx(0.0)
    # a rule with one derivation on a side has no spread: it stays out of the difference
    lone = consistency_table({("easy", 0): easy, ("hard", 0): hard[1:]}, seed=0)[2]
    assert lone["difference"] == pytest.approx(0.0) and lone["n_both"] == 5


def test_a_run_writes_the_table_report_and_resumes_to_the_same_numbers(tmp_path, tiny_gpt2_dir):
    out = tmp_path / "A"
    args = ["study", "consistency", "--model", str(tiny_gpt2_dir), "--candidates", "5",
            "--limit", "5", "--out", str(out), "--threads", "1", "--reference", "frequency"]
    assert main(args) == 0
    results = Results.from_path(out)
    assert results.study == "consistency"
    frame = results.frame
    assert {"consistency", "consistency_lo", "consistency_hi", "difference", "p", "violations",
            "MRR"} <= set(frame.columns)
    assert list(frame["rule"]) == ["rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11", "all"]
    # --reference frequency: that control is subtracted, and no prior is scored
    assert set(frame["reference"]) == {"frequency"} and not (out / "controls" / "prior").exists()
    assert (frame["n_derivations"].iloc[:-1] == 5).all()
    mrr = results.get_metric("MRR")
    assert ((mrr > 0) & (mrr <= 1)).all() and len(mrr) == 7
    obs = results.observations()
    assert len(obs) == 30 and {"item", "MRR", "rule"} <= set(obs.columns)
    report = (out / "report.md").read_text()
    assert "## Violations" in report and "| rdfs9 | 0 | 5 (" in report
    assert (out / "consistency.png").stat().st_size > 0 and "(consistency.png)" in report
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.md").read_text() == report
    # killed after some units: the rerun scores what is missing and ends with the same bytes
    before = {name: (out / name).read_bytes() for name in ("results.csv", "predictions.jsonl")}
    units = sorted((out / "units").iterdir())
    assert len(units) == 6
    units[2].unlink()
    (out / "results.csv").unlink()
    kept = {p.name: p.stat().st_mtime_ns for p in units if p.exists()}
    assert main(args) == 0
    assert {n: (out / n).read_bytes() for n in before} == before
    assert {p.name: p.stat().st_mtime_ns for p in (out / "units").iterdir() if p.name in kept} == kept
    # another --believe-at rebuilds the table from the same units
    assert main([*args, "--believe-at", "5"]) == 0
    again = Results.from_path(out).frame
    assert (again["n_both"] == again["n_derivations"]).all()  # K = 5: every gold ranks ≤ 5
    assert json.loads((out / "config.json").read_text())["believe_at"] == 5


@pytest.mark.parametrize("extra, needle", [
    (["--rules", "rdfs9,rdfs99", "--model", "random"], "--rules rdfs9,rdfs99"),
    (["--believe-at", "0", "--model", "random"], "--believe-at 0"),
    ([], "--model"),
    (["--model", "random", "--template", "7"], "--template 7"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, extra, needle):
    code = main(["study", "consistency", *extra, "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x" / "config.json").exists()


def test_dry_run_writes_the_prompts_without_a_model(tmp_path, zoo):
    out = tmp_path / "dry"
    assert main(["study", "consistency", "--dry-run", "--ontology", str(zoo), "--out",
                 str(out), "--candidates", "3"]) == 0
    prompts = [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]
    texts = {p["text"] for p in prompts}
    assert "Rex is a [MASK] ." in texts and "Alice [MASK] Paris ." in texts
    assert all(p["study"] == "consistency" for p in prompts)
    # every template: a relation with fewer asks its first under the others
    assert main(["study", "consistency", "--dry-run", "--ontology", str(zoo), "--out",
                 str(out), "--candidates", "3", "--template", "all"]) == 0
    rows = [json.loads(line) for line in (out / "prompts.jsonl").read_text().splitlines()]
    assert {r["template"] for r in rows} == {"0", "1", "2"}
    assert {"Rex has class [MASK] .", "Rex is a particular [MASK] ."} <= {r["text"] for r in rows}
    assert {r["text"] for r in rows if r["task"] == "property"} == {
        "Alice [MASK] Paris .", "Alice [MASK] Rex ."}


def test_a_statement_against_every_candidate_is_the_memorization_studys_own_prompt():
    """So the score cache scores it once for both studies."""
    from kgprobe.ontology.verbalize import capitalize, load_templates
    from kgprobe.reasoning.memorizing_sets import reference_sets

    setup = build(ConsistencyConfig(None, rules=("rdfs9",), limit=20))
    ref = reference_sets(["type"])["type"]
    template = load_templates()["type"].manual[0]
    asked = {p.statement.subject: p for p in setup.probes[("type", 0)]}
    shared = [r for r in ref.records if r.subject in asked]
    assert shared
    for record in shared:
        probe = asked[record.subject]
        assert probe.prompt == capitalize(template.render(text_a=record.subject))
        assert probe.candidates == tuple(ref.candidates)
