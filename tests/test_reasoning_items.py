"""Reasoning items: verbalization per rule, pseudoword slots, templates, summaries, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgprobe.errors import TemplateError
from kgprobe.ontology.loaders import bundled_source, load_rdf
from kgprobe.ontology.verbalize import load_templates, normalize_label, parse_template
from kgprobe.reasoning.items import reasoning_items, rule_summary
from kgprobe.reasoning.rdfs import RULES, closure

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

ZOO = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
ex:Dog rdfs:subClassOf ex:Mammal ; rdfs:label "dog"@en .
ex:Mammal rdfs:subClassOf ex:Animal ; rdfs:label "mammal"@en .
ex:Animal rdfs:label "animal"@en .
ex:ZooKeeper rdfs:subClassOf ex:Person .
ex:Person rdfs:label "person"@en .
ex:caresFor rdfs:domain ex:ZooKeeper ; rdfs:range ex:Animal ; rdfs:label "cares for"@en ;
    rdfs:subPropertyOf ex:knows ; kgp:pattern "[X] takes care of [Y] ."@en .
ex:knows rdfs:subPropertyOf ex:relatedTo ; rdfs:label "knows"@en ; kgp:pattern "[X] knows [Y] ."@en .
ex:rex a ex:Dog .
ex:ann ex:caresFor ex:rex .
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoo") / "zoo.ttl"
    path.write_text(ZOO)
    src = load_rdf(path)
    return src.ontology, closure(src.triples)


def texts(item):
    return [p.text for p in item.premises], item.conclusion["text"], item.answers


def test_every_rule_is_verbalized_as_in_the_paper(zoo):
    onto, clo = zoo
    items = reasoning_items(onto, clo, load_templates())
    by_answer = {rule: {tuple(i.answers): i for i in rule_items} for rule, rule_items in items.items()}
    rdfs9 = [texts(i) for i in items["rdfs9"]]
    # rex is a dog; dog ⊑ mammal ⊑ animal: rdfs9 pairs every type with every superclass.
    assert sorted(rdfs9) == [
        (["Dog is a mammal .", "[X] is a dog ."], "[X] is a particular [MASK] .", ["mammal"]),
        (["Dog is an animal .", "[X] is a dog ."], "[X] is a particular [MASK] .", ["animal"]),
        (["Mammal is an animal .", "[X] is a mammal ."], "[X] is a particular [MASK] .", ["animal"]),
        (["Zoo keeper is a person .", "[X] is a zoo keeper ."], "[X] is a particular [MASK] .",
         ["person"]),
    ]
    # dog ⊑ mammal ⊑ animal: the class reasoned about is the pseudoword.
    assert [texts(i) for i in items["rdfs11"]] == [
        (["Mammal is an animal .", "[X] is a mammal ."], "[X] is a particular [MASK] .", ["animal"])]
    assert texts(by_answer["rdfs2"][("zoo keeper",)]) == (
        ["One has to be a particular zoo keeper if one takes care of an animal .",
         "[X] takes care of [Y] ."], "[X] is a particular [MASK] .", ["zoo keeper"])
    assert texts(by_answer["rdfs3"][("animal",)]) == (
        ["One has to be a particular animal if a zoo keeper takes care of that .",
         "[X] takes care of [Y] ."], "[Y] is a particular [MASK] .", ["animal"])
    assert texts(by_answer["rdfs5"][("related to",)]) == (
        ["Knows implies related to .", "[X] implies knows ."], "[X] implies [MASK] .",
        ["related to"])
    # rdfs7's P1 names the superproperty by its label; the gold is its pattern's wording.
    assert (["Cares for implies knows .", "[X] takes care of [Y] ."], "[X] [MASK] [Y] .",
            ["knows"]) in [texts(i) for i in items["rdfs7"]]


def _words(text: str) -> list[str]:
    return text.lower().replace(",", " ").replace(".", " ").split()


def _contains(words: list[str], phrase: list[str]) -> bool:
    return any(words[i:i + len(phrase)] == phrase for i in range(len(words) - len(phrase) + 1))


def test_rdfs7_p1_never_writes_the_gold():
    """Over every bundled rdfs7 item: P1 is "<sub label> implies <super label> ." — no slot,
    no pattern — so the gold (the superproperty's pattern wording) is not in the prompt, except
    where the superproperty's own label is made of those words (the name is the paraphrase)."""
    src = bundled_source()
    onto = src.ontology
    items = reasoning_items(onto, closure(src.triples), load_templates(), rules=["rdfs7"])["rdfs7"]
    assert len(items) > 50
    in_label = 0
    for item in items:
        p1 = item.premises[0]
        sub, sup = p1.triple[0], p1.triple[2]
        assert "[X]" not in p1.text and "[Y]" not in p1.text
        assert _words(p1.text) == _words(f"{p1.subject} implies {p1.answer}")
        assert p1.answer == normalize_label(onto.label(sup)) and p1.subject == normalize_label(onto.label(sub))
        for gold in item.answers:
            if _contains(_words(p1.text), _words(gold)):
                assert _contains(_words(p1.answer), _words(gold)), (p1.text, gold)
                in_label += 1
    assert in_label <= len(items) // 20  # a handful of labels are their pattern's own words


def test_items_record_premises_for_the_ablation(zoo):
    onto, clo = zoo
    item = next(i for i in reasoning_items(onto, clo, load_templates())["rdfs2"])
    p1, p2 = item.premises
    assert (p1.role, p1.relation, p1.subject, p1.answer) == ("P1", "domain", "cares for", "zoo keeper")
    assert p1.asserted and p2.asserted
    assert p2.triple == ("http://ex.org/ann", "http://ex.org/caresFor", "http://ex.org/rex")
    assert item.slots == {"[X]": "http://ex.org/ann", "[Y]": "http://ex.org/rex"}
    assert item.conclusion["triple"] == ["http://ex.org/ann",
                                         "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
                                         "http://ex.org/ZooKeeper"]
    assert len(item.hypotheses) == 3 and item.candidates_key == "class"
    row = json.loads(json.dumps(item.to_json()))
    assert row["premises"][0]["triple"] == list(p1.triple)


def test_pseudoword_items_merge_derivations_that_read_the_same():
    src = bundled_source()
    items = reasoning_items(src.ontology, closure(src.triples), load_templates(), rules=["rdfs2"])
    # One item per (property, domain): every fact of a property reads "[X] … [Y] .".
    assert len(items["rdfs2"]) <= 52
    assert sum(i.count for i in items["rdfs2"]) > 5 * len(items["rdfs2"])
    real = reasoning_items(src.ontology, closure(src.triples), load_templates(), rules=["rdfs2"],
                           pseudowords=False)
    assert len(real["rdfs2"]) > 10 * len(items["rdfs2"])
    assert all("[X]" not in p.text for i in real["rdfs2"] for p in i.premises[1:])


def test_bundled_ontology_has_items_for_all_six_rules():
    src = bundled_source()
    items = reasoning_items(src.ontology, closure(src.triples), load_templates())
    assert all(len(items[rule]) > 0 for rule in RULES)


def test_dbpedia_ontology_without_instances():
    src = load_rdf(SHARED / "ontologies" / "dbpedia-ontology.ttl")
    items = reasoning_items(src.ontology, closure(src.triples), load_templates())
    summary = rule_summary(items)
    assert summary["rdfs11"]["items"] > 100
    assert summary["rdfs5"]["items"] > 0
    for rule, entry in summary.items():
        assert (entry["items"] == 0) == ("note" in entry)


def test_rules_without_premises_produce_none_and_say_so(tmp_path):
    path = tmp_path / "tree.ttl"
    path.write_text("@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                    "ex:A rdfs:subClassOf ex:B . ex:B rdfs:subClassOf ex:C .\n")
    src = load_rdf(path)
    summary = rule_summary(reasoning_items(src.ontology, closure(src.triples), load_templates()))
    assert summary["rdfs11"]["items"] == 1
    assert summary["rdfs9"] == {"items": 0, "derivations": 0, "note": "no items: the data has no "
                                "rdfs:subClassOf edge with an instance of the subclass"}


def test_label_less_terms_read_from_their_local_names(tmp_path):
    path = tmp_path / "bare.nt"
    path.write_text("<http://ex.org/SeaLion> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://ex.org/MarineMammal> .\n"
                    "<http://ex.org/MarineMammal> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://ex.org/Animal> .\n")
    src = load_rdf(path)
    (item,) = reasoning_items(src.ontology, closure(src.triples), load_templates(), rules=["rdfs11"])["rdfs11"]
    assert [p.text for p in item.premises] == ["Marine mammal is an animal .", "[X] is a marine mammal ."]


def test_templates_need_exactly_one_mask(tmp_path):
    with pytest.raises(TemplateError, match="needs exactly one") as err:
        parse_template('{"placeholder":"text_a"} is a thing .')
    assert "\n" not in str(err.value)
    bad = tmp_path / "t.toml"
    bad.write_text('[relations.type]\nmanual = [\'{"placeholder":"text_a"} is nice .\']\n')
    with pytest.raises(TemplateError, match="mask"):
        load_templates(bad)


def test_template_syntax():
    t = parse_template('{"placeholder":"text_a"} {"soft":"is"} {"soft"} {"mask"} {"meta":"m"} .')
    assert [p.kind for p in t.parts if p.kind != "text"] == ["placeholder", "soft", "soft", "mask", "meta"]
    assert t.n_soft == 2 and t.parts[2].value == "is"
    assert t.render("Rex", meta={"m": "now"}) == "Rex [SOFT] [SOFT] [MASK] now ."
    assert parse_template('{"placeholder":"text_a"} is a {"mask"} .').fill("animal", "Rex") == "Rex is an animal ."


def test_cli_generate(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "kgprobe.cli", *a], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=300)
    store = str(tmp_path / "s")
    assert run("kg", "load", str(SHARED / "ontologies" / "dbpedia-ontology.ttl"), "--store", store).returncode == 0
    out = run("generate", "reasoning", "--out", str(tmp_path / "r"), "--store", store)
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["rules"]["rdfs11"]["items"] > 0
    first = json.loads((tmp_path / "r" / "rdfs11.jsonl").read_text().splitlines()[0])
    assert set(first) >= {"id", "rule", "premises", "conclusion", "answers", "candidates_key", "split"}
    assert "[MASK]" in first["conclusion"]["text"]
    cands = json.loads((tmp_path / "r" / "candidates.json").read_text())
    assert first["answers"][0] in cands[first["candidates_key"]]
    out = run("generate", "memorizing", "--out", str(tmp_path / "m"), "--store", store)
    assert out.returncode == 0, out.stderr
    for rel in ("subClassOf", "subPropertyOf", "domain", "range"):
        assert (tmp_path / "m" / f"{rel}.jsonl").read_text().strip(), rel
    bad = run("generate", "reasoning", "--out", str(tmp_path / "x"), "--rules", "rdfs99", "--store", store)
    assert bad.returncode == 2 and "rdfs99" in bad.stderr and "Traceback" not in bad.stderr


def test_item_json_is_asdict_with_list_triples(zoo):
    """`ReasoningItem.to_json` is built field by field (speed); it writes what `asdict`
    wrote, every field included, for every rule and with both slot kinds."""
    from dataclasses import asdict, fields

    from kgprobe.reasoning.items import ReasoningItem

    onto, clo = zoo
    items = [i for pseudo in (True, False) for rule_items in reasoning_items(
        onto, clo, load_templates(), pseudowords=pseudo).values() for i in rule_items]
    assert {i.rule for i in items} >= {"rdfs2", "rdfs3", "rdfs7", "rdfs9", "rdfs11"}
    items[0].conclusion["nested"] = {"pair": ("a", "b"), "list": [1, {"x": "y"}]}
    for item in items:
        old = asdict(item)
        old["premises"] = [{**p, "triple": list(p["triple"])} for p in old["premises"]]
        new = item.to_json()
        assert new == old and json.dumps(new) == json.dumps(old)
        assert list(new) == [f.name for f in fields(ReasoningItem)]
        new["conclusion"]["text"] = "changed"  # a copy, as asdict's was
        assert item.conclusion["text"] != "changed"
