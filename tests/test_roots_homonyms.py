"""Issue 33: upper-level roots, `--namespace`, homonyms and QUDT's header and wording cases.

* An upper-level root (BFO's entity, continuant, occurrent …, or a class above 90 % of an
  ontology) is never a gold unless `--keep-roots`; the roots are counted like other excluded
  terms.
* `--namespace` keeps subjects and answers to the ontology's own terms, while derivations
  through imported classes still make items.
* Prompts that read alike with different golds (two classes labelled "mouth") are dropped
  and counted: no such prompt group is left.
* QUDT: its graph metadata is ontology header, dcterms:description (declared a datatype
  property) no property candidate, and "[X] has prefix [Y]" never asks for "prefix".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.exclusions import ROOT, load_exclusions
from kgprobe.ontology.from_triples import BuildOptions, build_ontology
from kgprobe.ontology.loaders import load_rdf, parse_rdf
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.items import item_closure, reasoning_items
from kgprobe.reasoning.memorizing import candidate_sets, generate_memorizing

DATA = Path(__file__).parent / "data" / "ontologies"
OBO = "http://purl.obolibrary.org/obo/"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
QUDT = "http://qudt.org/schema/qudt/"
PREFIXES = """@prefix ex: <http://ex.org/own/> . @prefix imp: <http://ex.org/imported/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
"""


def probes(onto, triples, pseudowords=True):
    skipped: Counter = Counter()
    records = generate_memorizing(onto, train=0, dev=0, skipped=skipped)
    items = reasoning_items(onto, item_closure(onto, triples), load_templates(None),
                            pseudowords=pseudowords, skipped=skipped)
    return records, items, skipped


def golds(records, items) -> set[str]:
    """Every answer IRI a record or item asks for."""
    out = {a for recs in records.values() for r in recs for a in r.answer_iris}
    for rule_items in items.values():
        for i in rule_items:
            c = i.conclusion["triple"]
            out.add(c[1] if i.rule == "rdfs7" else c[2])
    return out


def load(path: Path, **options):
    source = load_rdf(path, options=BuildOptions(**options))
    return source.ontology, list(source.triples)


def ttl(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "onto.ttl"
    path.write_text(PREFIXES + text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- roots


@pytest.mark.parametrize("fixture", ["bfo2.ttl", "iao.ttl", "uberon-life-stages.ttl",
                                     "pato.ttl"])
def test_upper_level_roots_are_never_golds(fixture):
    onto, triples = load(DATA / fixture)
    roots = {iri for iri, why in onto.excluded.items() if why == ROOT}
    assert roots and onto.excluded_counts[ROOT]["class"] == len(roots)
    records, items, skipped = probes(onto, triples)
    assert not golds(records, items) & roots
    assert sum(n for k, n in skipped.items() if k.endswith(": root")) > 0  # items went
    kept_onto, kept_triples = load(DATA / fixture, keep_roots=True)
    assert ROOT not in kept_onto.excluded_counts
    assert golds(*probes(kept_onto, kept_triples)[:2]) & roots  # the roots were answers


def test_which_roots_each_rule_takes():
    """BFO's and UBERON's by the list; PATO's "quality" (99 % of it) by the share; GO's three
    aspects and the wine ontology's "potable liquid" (83 %) stay answers."""
    bfo = load(DATA / "bfo2.ttl")[0].excluded
    assert {bfo[OBO + f"BFO_000000{n}"] for n in (1, 2, 3, 4)} == {ROOT}
    assert OBO + "BFO_0000040" not in bfo  # material entity: below the upper levels
    assert load(DATA / "uberon-life-stages.ttl")[0].excluded[OBO + "UBERON_0000000"] == ROOT
    assert load(DATA / "pato.ttl")[0].excluded[OBO + "PATO_0000001"] == ROOT
    go = load(DATA / "goslim-generic.ttl")[0]
    assert ROOT not in go.excluded_counts and OBO + "GO_0008150" in go.classes
    wine = load(DATA / "wine.ttl")[0]
    assert ROOT not in wine.excluded_counts
    assert load_exclusions().iris[ROOT] >= {OBO + "BFO_0000001",
                                            "http://www.cidoc-crm.org/cidoc-crm/E1_CRM_Entity"}


CRM = "http://www.cidoc-crm.org/cidoc-crm/"
#: CIDOC-CRM's general classes (issue 33 #3: "CRM entity", "persistent item", "temporal
#: entity", "spacetime volume", "thing" were golds of most of its items).
CRM_ROOTS = {"E1_CRM_Entity": "CRM entity", "E2_Temporal_Entity": "temporal entity",
             "E77_Persistent_Item": "persistent item", "E92_Spacetime_Volume": "spacetime volume",
             "E70_Thing": "thing"}


def test_cidoc_crm_general_classes_are_never_golds(tmp_path):
    """A slice of CIDOC-CRM's hierarchy: none of its general classes is an answer, the
    classes below them still are, and each is counted as a root."""
    edges = [("E2_Temporal_Entity", "E1_CRM_Entity"), ("E77_Persistent_Item", "E1_CRM_Entity"),
             ("E92_Spacetime_Volume", "E1_CRM_Entity"), ("E4_Period", "E2_Temporal_Entity"),
             ("E4_Period", "E92_Spacetime_Volume"), ("E5_Event", "E4_Period"),
             ("E7_Activity", "E5_Event"), ("E11_Modification", "E7_Activity"),
             ("E70_Thing", "E77_Persistent_Item"), ("E71_Human-Made_Thing", "E70_Thing"),
             ("E72_Legal_Object", "E70_Thing"), ("E18_Physical_Thing", "E72_Legal_Object")]
    labels = {**CRM_ROOTS, "E4_Period": "period", "E5_Event": "event", "E7_Activity": "activity",
              "E11_Modification": "modification", "E71_Human-Made_Thing": "human-made thing",
              "E72_Legal_Object": "legal object", "E18_Physical_Thing": "physical thing"}
    lines = [f'<{CRM}{c}> rdfs:label "{lab}" .' for c, lab in labels.items()]
    lines += [f"<{CRM}{c}> rdfs:subClassOf <{CRM}{p}> ." for c, p in edges]
    onto, triples = load(ttl(tmp_path, "\n".join(lines) + "\n"))
    roots = {CRM + c for c in CRM_ROOTS}
    assert {onto.excluded[r] for r in roots} == {ROOT}
    answers = golds(*probes(onto, triples)[:2])
    assert answers and not answers & roots
    assert {CRM + "E7_Activity", CRM + "E72_Legal_Object"} <= answers


def _tree(n: int, top: str = "animal") -> str:
    """ex:Entity, labelled `top`, above `n` classes (a chain of kinds, each with a leaf)."""
    lines = [f'ex:Entity rdfs:label "{top}" .']
    for k in range(n // 2):
        lines.append(f'ex:Kind{k} rdfs:subClassOf ex:Entity ; rdfs:label "kind {k}" .')
        lines.append(f'ex:Leaf{k} rdfs:subClassOf ex:Kind{k} ; rdfs:label "leaf {k}" .')
    return "\n".join(lines) + "\n"


def test_a_root_above_nearly_every_class_is_one_in_a_large_ontology_only(tmp_path):
    onto = load(ttl(tmp_path, _tree(30)))[0]
    assert onto.excluded.get("http://ex.org/own/Entity") == ROOT
    assert "skipped 1 class: upper-level roots answer" in " ".join(onto.warnings)
    small = load(ttl(tmp_path, _tree(10)))[0]  # a toy taxonomy's root is its subject
    assert "http://ex.org/own/Entity" in small.classes


@pytest.mark.parametrize("top", ["entity", "plant anatomical entity", "spatial thing", "Core",
                                 "SpatialThing"])
def test_a_top_named_as_an_upper_level_category_is_a_root_at_any_size(tmp_path, top):
    """SEM's "core", W3C geo's "spatial thing", PO's "plant anatomical entity": a top whose
    head noun names no kind of thing is no answer, even above ten classes; "animal" is."""
    onto, triples = load(ttl(tmp_path, _tree(10, top)))
    assert onto.excluded.get("http://ex.org/own/Entity") == ROOT
    records, items, _ = probes(onto, triples)
    assert "http://ex.org/own/Entity" not in golds(records, items)
    assert "http://ex.org/own/Kind0" in golds(records, items)  # the kinds below still are


# ----------------------------------------------------------------------------- namespace


NAMESPACED = """ex:Dog rdfs:subClassOf imp:Canine ; rdfs:label "dog" .
imp:Canine rdfs:subClassOf ex:Pet ; rdfs:label "canine" .
ex:Pet rdfs:label "pet" .
imp:Wolf rdfs:subClassOf imp:Canine ; rdfs:label "wolf" .
ex:rex a ex:Dog ; rdfs:label "Rex" .
imp:akela a imp:Wolf ; rdfs:label "Akela" .
"""


def test_namespace_keeps_probes_to_own_terms_through_imported_ones(tmp_path):
    path = ttl(tmp_path, NAMESPACED)
    everything = probes(*load(path))
    onto, triples = load(path, namespaces=("http://ex.org/own/",))
    records, items, skipped = probes(onto, triples)
    def own(iri: str) -> bool:
        return iri.startswith("http://ex.org/own/")

    assert all(own(r.subject_iri) and all(map(own, r.answer_iris))
               for recs in records.values() for r in recs)
    assert all(own(i.slots["[X]"]) for rule in items.values() for i in rule)
    assert all(map(own, golds(records, items)))
    assert not all(map(own, golds(*everything[:2])))  # without it, imported answers too
    # Rex is a pet and a dog is a pet: both derived through the imported "canine"
    through = [i for rule in ("rdfs9", "rdfs11") for i in items[rule]
               if i.premises[0].triple[0].startswith("http://ex.org/imported/")]
    assert {i.rule for i in through} == {"rdfs9", "rdfs11"}
    assert {tuple(i.answers) for i in through} == {("pet",)}
    assert skipped["rdfs9: outside --namespace"] > 0
    sco = {r.subject: r.answers for r in records["subClassOf"]}
    assert sco == {"dog": ["pet"]}  # the imported superclass is no gold


def test_namespace_and_keep_roots_are_cli_options(tmp_path, capsys):
    path = ttl(tmp_path, NAMESPACED)
    out = tmp_path / "rsn"
    assert main(["generate", "reasoning", "--ontology", str(path), "--out", str(out),
                 "--namespace", "http://ex.org/own/", "--keep-roots"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"]["records"]["rdfs9: outside --namespace"] > 0
    items = [json.loads(x) for x in (out / "rdfs9.jsonl").read_text().splitlines()]
    assert items and all(i["slots"]["[X]"].startswith("http://ex.org/own/") for i in items)
    capsys.readouterr()
    assert main(["generate", "reasoning", "--ontology", str(path), "--out", str(out),
                 "--namespace", "not a prefix"]) == 2
    assert "--namespace" in capsys.readouterr().err


# ------------------------------------------------------------------------------ homonyms


HOMONYMS = """ex:RiverMouth rdfs:label "mouth" ; rdfs:subClassOf ex:WatercoursePart .
ex:WatercoursePart rdfs:label "watercourse part" .
ex:Mouth rdfs:label "Mouth" ; rdfs:subClassOf ex:DigestiveSubdivision .
ex:DigestiveSubdivision rdfs:label "subdivision of digestive tract" .
ex:amazonMouth a ex:RiverMouth ; rdfs:label "Amazon mouth" .
ex:hasMember rdfs:label "has member" ; rdfs:domain ex:Organization .
imp:hasMember rdfs:label "has member" ; rdfs:domain ex:Membership .
ex:Organization rdfs:label "organization" . ex:Membership rdfs:label "membership" .
ex:knows rdfs:label "knows" ; kgp:pattern "[X] knows [Y] ."@en .
imp:knows rdfs:label "knows" ; kgp:pattern "[X] is acquainted with [Y] ."@en .
ex:meetsA rdfs:label "meets" ; rdfs:subPropertyOf ex:knows .
ex:meetsB rdfs:label "meets" ; rdfs:subPropertyOf imp:knows .
ex:ann ex:meetsA ex:bob . ex:cy ex:meetsB ex:dee .
"""


def prompt_groups(records, items) -> list:
    """Prompts with more than one gold among the probes: (relation, subject) of records,
    (premises, hypothesis) of items."""
    golds_of = defaultdict(set)
    for relation, recs in records.items():
        for r in recs:
            golds_of[(relation, r.subject.lower())].add((r.subject_iri, tuple(r.answers)))
            if relation in ("domain", "range"):
                golds_of[(relation, r.pattern)].add((r.subject_iri, tuple(r.answers)))
    for rule_items in items.values():
        for i in rule_items:
            key = (tuple(p.text for p in i.premises), i.conclusion["text"])
            golds_of[key].add((None, tuple(i.answers)))
    return [k for k, v in golds_of.items() if len({a for _, a in v}) > 1]


@pytest.mark.parametrize("pseudowords", [True, False])
def test_homonym_prompts_are_dropped_and_counted(tmp_path, pseudowords):
    onto, triples = load(ttl(tmp_path, HOMONYMS))
    records, items, skipped = probes(onto, triples, pseudowords)
    assert not prompt_groups(records, items)
    assert "mouth" not in {r.subject.lower() for r in records["subClassOf"]}
    assert "has member" not in {r.subject for r in records["domain"]}
    assert skipped["subClassOf: homonym (one prompt, different answers)"] == 2
    assert skipped["domain: homonym (one prompt, different answers)"] == 2
    if pseudowords:  # "meets implies knows. [X] meets [Y]. [X] [MASK] [Y]": two wordings
        assert skipped["rdfs7: homonym (one prompt, different answers)"] == 2
    # the instance is no homonym: its prompt names it alone
    assert [r.answers for r in records["type"]] == [["mouth", "watercourse part"]]


# ---------------------------------------------------------------------------------- QUDT


def test_qudt_header_annotations_and_answers_named_by_the_property():
    triples = list(parse_rdf(DATA / "qudt-schema.ttl"))
    # the slice has no unit data: a range and a fact as the full QUDT has them
    triples += [(QUDT + "prefix", RDFS + "range", QUDT + "Prefix"),
                (QUDT + "prefix", RDFS + "label", '"prefix"'),
                ("http://ex.org/kilogram", QUDT + "prefix", "http://ex.org/kilo")]
    onto = build_ontology("qudt", triples)
    records, items, skipped = probes(onto, triples)
    gmd = "http://www.linkedmodel.org/schema/vaem#GMD_QUDT-SCHEMA"
    assert gmd in onto.header and gmd not in onto.instances
    assert not any("QUDT_VERSION" in r.subject or r.subject_iri == gmd
                   for recs in records.values() for r in recs)
    assert "description" not in candidate_sets(onto)["property"]
    assert onto.excluded["http://purl.org/dc/terms/description"] == "annotation"
    texts = [(p.text, i.answers) for i in items["rdfs3"] for p in i.premises]
    assert not any(a == ["prefix"] for _, a in texts)
    assert skipped["rdfs3: answer in the property's wording"] >= 1


def test_only_the_range_a_property_names_is_left_out():
    """Wine: "[X] has wine descriptor [Y]" names [Y]'s class, not [X]'s: rdfs3's "wine
    descriptor" goes, rdfs2's "wine" stays."""
    onto, triples = load(DATA / "wine.ttl")
    _, items, skipped = probes(onto, triples)

    def told(rule: str) -> set:
        return {tuple(i.answers) for i in items[rule]
                if i.premises[1].answer == "has wine descriptor"}

    assert ("wine",) in told("rdfs2") and not told("rdfs3")
    assert skipped["rdfs3: answer in the property's wording"] > 0
    assert not skipped["rdfs2: answer in the property's wording"]


# ------------------------------------------------------------------------- premise ablation


def test_report_says_how_far_known_reaches(tmp_path):
    from kgprobe.studies.premise_ablation.report import known_reach

    premises = [{"role": "P1", "relation": "subClassOf", "subject": str(n), "answer": "a",
                 "pair": None, "rr": 1 / rank, "known": rank <= 15, "prompt": ""}
                for n, rank in enumerate((1, 3, 15, 20, 36))]
    (tmp_path / "memorized.json").write_text(json.dumps({"premises": premises}))
    lines = known_reach(tmp_path)
    assert "- P1 subClassOf: known down to rank 15 (3 of 5 known)" in lines
    paper = {"protocol": "paper", "rules": {"rdfs9": {
        "P1": {"records": [0, 1, 2], "rr": [1.0, 0.5, 0.25], "memorized": [0, 1], "not": [2]},
        "P2": [{"records": [0, 1], "rr": [0.1, 0.05], "memorized": [0], "not": [1]}]}}}
    (tmp_path / "memorized.json").write_text(json.dumps(paper))
    assert known_reach(tmp_path)[2:4] == ["- rdfs9 P1: known down to rank 2 (2 of 3 known)",
                                          "- rdfs9 P2: known down to rank 10 (1 of 2 known)"]
    (tmp_path / "memorized.json").unlink()
    assert known_reach(tmp_path) == []


def test_a_premise_of_two_terms_with_one_label_is_no_item(tmp_path):
    """CIDOC-CRM's P151i and P11i are both "participated in": "Participated in implies
    participated in" says nothing, so no item rests on it; it is counted."""
    from kgprobe.reasoning.items import RESTATED

    onto, triples = load(ttl(tmp_path, """
ex:P12i rdfs:label "was present at" .
ex:P11i rdfs:label "participated in" ; rdfs:subPropertyOf ex:P12i .
ex:P151i rdfs:label "participated in" ; rdfs:subPropertyOf ex:P11i .
ex:P99i rdfs:label "took part in" ; rdfs:subPropertyOf ex:P11i .
"""))
    _, items, skipped = probes(onto, triples, pseudowords=False)
    texts = [p.text for i in items.get("rdfs5", []) for p in i.premises]
    assert texts and "Took part in implies participated in ." in texts  # other items stay
    assert not any(t.lower() == "participated in implies participated in ." for t in texts)
    assert skipped[f"rdfs5: {RESTATED}"] >= 1
