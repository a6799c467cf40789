"""Issue 16: probes from the ontologies users bring (fixtures in tests/data/byo/).

Each fixture reproduces one problem found on public ontologies: IDs and non-English labels,
OWL intersections and unions, schema.org includes, datatypes and top classes as answers,
splits too small for 10/10, properties without a pattern, answer order after `reason`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.exclusions import Exclusions
from kgprobe.ontology.from_triples import BuildOptions, build_ontology
from kgprobe.ontology.labels import is_id_like, name_words
from kgprobe.ontology.loaders import parse_rdf
from kgprobe.ontology.model import RDFS_SUBCLASSOF, Instance
from kgprobe.ontology.owl_axioms import lower
from kgprobe.ontology.verbalize import default_pattern, load_templates, property_meta
from kgprobe.reasoning.items import item_closure, reasoning_items
from kgprobe.reasoning.memorizing import candidate_sets, empty_splits, generate_memorizing
from kgprobe.reasoning.rdfs import closure

DATA = Path(__file__).parent / "data" / "byo"
FIXTURES = sorted(DATA.glob("*.ttl"))
OBO = "http://example.org/obo/"
PZ = "http://example.org/pizza#"
SCHEMA = "http://schema.org/"
H = "http://example.org/h/"
EXW = "http://example.org/wine#"


def model(name: str, **options):
    triples = parse_rdf(DATA / name)
    return triples, build_ontology(name, triples, BuildOptions(**options))


def items_of(triples, onto, pseudowords=True, skipped=None):
    """Items as `generate reasoning` and the studies draw them (`item_closure`)."""
    return reasoning_items(onto, item_closure(onto, triples), load_templates(),
                           pseudowords=pseudowords, skipped=skipped)


def answers(records, relation):
    return {r.subject: r.answers for r in records[relation]}


# ---------------------------------------------------------------------------------- labels


@pytest.mark.parametrize("name,id_like", [
    ("DOID_4006", True), ("C20921", True), ("uberon_0001062", True), ("IAO:0000115", True),
    ("Q42", True), ("NCIT_C20921", True), ("R7Cq1QvDx7dMLhEmDnnBk0B", True),
    ("ICD10", False), ("COVID19", False), ("SoccerPlayer", False), ("1031", False),
    ("soccer player 2", False)])
def test_id_like_names(name, id_like):
    assert is_id_like(name) is id_like


def test_local_names_split_at_case_underscores_and_digits():
    assert name_words("EUEnergyEfficiencyEnumeration") == "EU energy efficiency enumeration"
    assert name_words("Procedure_Has_Imaged_Anatomy") == "procedure has imaged anatomy"
    assert name_words("Tier3Team") == "tier 3 team"


def test_identifier_labels_are_split_for_classes_but_names_stay(tmp_path):
    path = tmp_path / "brands.ttl"
    path.write_text('@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n'
                    'ex:VideoSite rdfs:label "VideoSharingWebsite" .\n'
                    'ex:yt a ex:VideoSite ; rdfs:label "YouTube" .\n', encoding="utf-8")
    onto = build_ontology("brands", parse_rdf(path))
    assert onto.classes["http://ex.org/VideoSite"].label == "video sharing website"
    assert onto.instances["http://ex.org/yt"].label == "YouTube"


def test_ids_are_never_words_and_are_counted():
    triples, onto = model("ids.ttl")
    assert {OBO + "DOID_4006", OBO + "DOID_4007", OBO + "C20921"} <= set(onto.excluded)
    # IAO_0000115 (definition) is an annotation property before it is an ID
    assert onto.excluded_counts == {"id-like": {"class": 3}, "annotation": {"property": 1}}
    assert any("skipped 3 classes: no label usable" in w for w in onto.warnings)
    # The hierarchy is kept around the skipped classes: cancer ⊑ DOID_4006 ⊑ disease.
    assert onto.classes[OBO + "Cancer"].parents == [OBO + "Disease"]
    records = generate_memorizing(onto)
    assert answers(records, "type")["case one"] == ["disease"]
    words = json.dumps(candidate_sets(onto))
    skipped = Counter()
    for rule_items in items_of(triples, onto, pseudowords=False, skipped=skipped).values():
        for item in rule_items:
            words += " ".join(p.text for p in item.premises) + item.conclusion["text"]
    assert not re.search(r"doid|c20921|iao|0000115|4006", words, re.I)
    assert skipped["rdfs11: id-like"] > 0


def test_label_properties_order_and_languages():
    _, onto = model("ids.ttl")
    label = {i: c.label for i, c in onto.classes.items()}
    assert label[OBO + "Cancer"] == "cancer"  # IAO editor preferred term
    assert label[OBO + "Lymphoma"] == "lymphoma"  # oboInOwl exact synonym
    assert label[OBO + "EUEnergyEfficiencyEnumeration"] == "EU energy efficiency enumeration"
    assert onto.properties[OBO + "Procedure_Has_Imaged_Anatomy"].label == \
        "procedure has imaged anatomy"
    assert onto.instances[OBO + "gene1"].label == "BRCA1"  # an individual's name stays
    _, es = model("ids.ttl", langs=("es", "en"))
    assert es.classes[OBO + "C20921"].label == "enfermedad rara"
    assert es.classes[OBO + "Gene"].label == "gen"
    _, de = model("ids.ttl", langs=("de", "*"))
    assert de.classes[OBO + "Gene"].label == "Gen"


# ------------------------------------------------------------------------------------- OWL


def test_named_conjuncts_and_union_members_are_kept():
    triples, onto = model("owl.ttl")
    assert set(onto.classes[PZ + "VegetarianPizza"].parents) == {PZ + "Pizza", PZ + "Food"}
    assert PZ + "Dish" in onto.classes[PZ + "Pizza"].parents  # Dish ≡ Pizza ⊔ Calzone
    assert onto.properties[PZ + "hasTopping"].domain == [PZ + "Pizza", PZ + "Calzone"]
    warning = " ".join(onto.warnings)
    for kind in ("1 restriction conjunct of equivalentClass intersection",
                 "1 subClassOf restriction", "1 owl:disjointWith", "1 owl:TransitiveProperty"):
        assert kind in warning
    records = generate_memorizing(onto)
    assert answers(records, "subClassOf")["margherita"] == ["vegetarian pizza", "food",
                                                            "pizza", "dish"]
    rdfs11 = items_of(triples, onto)["rdfs11"]
    assert any(i.answers == ["pizza"] and "Vegetarian pizza is a pizza" in i.premises[0].text
               for i in rdfs11)
    # the kept edges are what makes them: the asserted triples alone derive no such item
    plain = reasoning_items(onto, closure(triples), load_templates())["rdfs11"]
    assert not any(i.answers == ["pizza"] for i in plain)


def test_union_domains_are_not_reasoned_with():
    """``P domain A ⊔ B`` does not entail ``P domain A``: no closure edge comes from it."""
    kept = lower(parse_rdf(DATA / "owl.ttl"))
    assert kept.unions and not set(kept.unions) & set(kept.closure_triples())
    assert all(p == RDFS_SUBCLASSOF for _, p, _ in kept.closure_triples())


# ------------------------------------------------------------------------------ schema.org


def test_schema_includes_on_by_default_with_a_warning():
    triples, onto = model("schema.ttl")
    assert onto.properties[SCHEMA + "worksFor"].domain == [SCHEMA + "Person"]
    assert onto.properties[SCHEMA + "worksFor"].label == "works for"
    assert any("weaker statement" in w for w in onto.warnings)
    rdfs2 = items_of(triples, onto)["rdfs2"]
    assert any(i.answers == ["person"] for i in rdfs2)  # Title Case lowered
    _, off = model("schema.ttl", schema_includes=False)
    assert off.properties[SCHEMA + "worksFor"].domain == []


# ---------------------------------------------------------------------------------- hygiene


def test_datatypes_and_top_classes_are_never_answers():
    triples, onto = model("hygiene.ttl")
    cands = candidate_sets(onto)["class"]
    assert cands == ["agent", "person"]
    skipped = Counter()
    records = generate_memorizing(onto, skipped=skipped)
    assert "thingy" not in answers(records, "type")  # typed owl:Thing only
    assert answers(records, "range") == {"knows": ["person"]}  # xsd:integer, km, Literal gone
    assert skipped["range: only excluded answers"] == 3
    assert skipped["type: only excluded answers"] == 1
    assert skipped["type: instance sharing another's label"] == 1
    assert len(onto.instances) == 4  # the owl:Axiom annotation node is no instance
    all_answers = {a for rule_items in items_of(triples, onto).values()
                   for i in rule_items for a in i.answers}
    assert all_answers == {"agent", "person"}
    sk = Counter()
    items_of(triples, onto, skipped=sk)
    assert sk["rdfs9: top"] > 0


def test_schema_datatypes_and_subclasses_are_excluded():
    _, onto = model("schema.ttl")
    for iri in ("Text", "URL", "Thing"):
        assert SCHEMA + iri not in onto.classes
    assert onto.excluded[SCHEMA + "URL"] == "datatype"


def test_exclusion_list_is_overridable():
    # owl:Thing, out of the list, is still a root by its name ("thing") unless kept
    _, onto = model("hygiene.ttl", exclusions=Exclusions(), keep_roots=True)
    assert "http://www.w3.org/2002/07/owl#Thing" in onto.classes


# ----------------------------------------------------------------------------------- splits


def test_tiny_split_is_reported_and_fractions_work():
    _, onto = model("tiny.ttl")
    records = generate_memorizing(onto)  # 4 records: 10,10 scale down to 1,1 (split_sizes)
    assert Counter(r.split for r in records["subClassOf"]) == {"train": 1, "dev": 1, "test": 2}
    records = generate_memorizing(onto, train=0, dev=3)  # 3 dev records leave 1 test: 0,1
    assert Counter(r.split for r in records["subClassOf"]) == {"dev": 1, "test": 3}
    assert empty_splits(records)["subClassOf"] == ["train"]
    records = generate_memorizing(onto, train=0.25, dev=0.25)
    assert Counter(r.split for r in records["subClassOf"]) == {"train": 1, "dev": 1, "test": 2}
    assert "subClassOf" not in empty_splits(records)


def test_instances_per_class_is_seeded():
    _, onto = model("tiny.ttl")
    for cls in ("Dog", "Cat"):
        for n in range(3):
            onto.instances[f"http://x/{cls}{n}"] = Instance(
                f"http://x/{cls}{n}", f"{cls} {n}", [f"http://example.org/tiny/{cls}"])
    one = generate_memorizing(onto, ["type"], instances_per_class=2, seed=3)["type"]
    again = generate_memorizing(onto, ["type"], instances_per_class=2, seed=3)["type"]
    assert [r.subject for r in one] == [r.subject for r in again]
    assert Counter(r.answers[0] for r in one) == {"dog": 2, "cat": 2, "bird": 1}


# ---------------------------------------------------------------------------------- wording


@pytest.mark.parametrize("label,pattern", [
    ("telephone number", "[X] has telephone number [Y] ."), ("has topping", "[X] has topping [Y] ."),
    ("located in", "[X] is located in [Y] ."), ("affects", "[X] affects [Y] ."),
    ("belongs to", "[X] belongs to [Y] ."), ("part of", "[X] is part of [Y] ."),
    ("near", "[X] is near [Y] .")])
def test_default_pattern_is_grammatical(label, pattern):
    assert default_pattern(label) == pattern


_DANGLING = re.compile(r"\b(a|an|the)\s*(?:[.,?!]|$|\b(?:a|an|the|is|has)\b)", re.I)
_DOUBLED = re.compile(r"\b(\w+) \1\b", re.I)


@pytest.mark.parametrize("fixture", [p.name for p in FIXTURES])
def test_every_template_renders_cleanly(fixture):
    """Every bundled template over each fixture: no dangling article, no doubled word."""
    triples, onto = model(fixture)
    templates = load_templates()
    texts = []
    for pseudowords in (True, False):
        for rule_items in items_of(triples, onto, pseudowords).values():
            for item in rule_items:
                texts += [p.text for p in item.premises] + item.hypotheses
    for relation, records in generate_memorizing(onto).items():
        tmpl = templates[relation]
        for rec in records:
            meta = property_meta(rec.pattern or default_pattern(rec.subject), None, None) \
                if relation in ("domain", "range") else None
            for t in tmpl.manual:
                texts.append(t.fill(rec.answers[0], text_a=rec.subject, meta=meta))
    assert texts
    for text in texts:
        assert not _DANGLING.search(text.replace("[MASK]", "X")), text
        assert not _DOUBLED.search(text), text


# ------------------------------------------------------------------------------------ order


def test_answers_are_specific_to_general_whatever_the_store_holds():
    triples, onto = model("tiny.ttl")
    reasoned = build_ontology("r", triples + sorted(closure(triples).rdf_inferred))
    assert len(reasoned.classes["http://example.org/tiny/Dog"].parents) == 2  # the closure
    before = generate_memorizing(onto)
    after = generate_memorizing(reasoned)
    for relation in ("type", "subClassOf"):
        assert answers(after, relation) == answers(before, relation)
    assert answers(after, "type")["Rex"] == ["dog", "mammal", "animal"]


# -------------------------------------------------------------------------------------- CLI


def test_cli_generation_reports_what_it_skipped(tmp_path, capsys):
    store, out = tmp_path / "store", tmp_path / "mem"
    assert main(["kg", "load", str(DATA / "ids.ttl"), "--store", str(store)]) == 0
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out),
                 "--lang", "en,es", "--split-sizes", "1,1"]) == 0
    err = capsys.readouterr().err
    assert "no label usable as words" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"]["terms"] == {"id-like": {"class": 2},
                                           "annotation": {"property": 1}}
    assert summary["split"] == [1, 1] and summary["lang"] == ["en", "es"]
    labels = [json.loads(line)["subject"] for line in (out / "subClassOf.jsonl").open()]
    assert "enfermedad rara" in labels
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out),
                 "--split-sizes", "0.8,0.5"]) == 2


# ---------------------------------------------------------------------------------- OWL 1


def test_owl1_expressions_on_named_classes_are_lowered():
    """Issue 25's regression: `WhiteWine owl:intersectionOf (Wine …)` written on the named
    class itself (OWL 1, the W3C wine ontology) is `WhiteWine ⊑ Wine` again; a union on a
    named class makes its members subclasses; the header is no knowledge."""
    triples, onto = model("owl1.ttl")
    assert onto.classes[EXW + "WhiteWine"].parents == [EXW + "Wine"]
    assert set(onto.classes[EXW + "WhiteBurgundy"].parents) == {EXW + "Burgundy",
                                                               EXW + "WhiteWine"}
    assert EXW + "WineDescriptor" in onto.classes[EXW + "WineTaste"].parents
    assert "1 owl:oneOf" in " ".join(onto.warnings)
    assert onto.excluded_counts["ontology header"] == {"triple": 4}
    records = generate_memorizing(onto)
    assert answers(records, "subClassOf")["white wine"] == ["wine"]
    assert answers(records, "type")["my wine"] == ["white Burgundy", "Burgundy", "white wine",
                                                   "wine"]
    rdfs9 = items_of(triples, onto)["rdfs9"]
    assert any(i.answers == ["white wine"] for i in rdfs9)


def test_owl1_wine_keeps_its_hierarchy():
    """The published wine ontology (tests/data/ontologies/wine.ttl): every class defined by
    an OWL 1 intersection has its named superclass again (14 SCO records for 76 classes
    before the fix)."""
    path = Path(__file__).parent / "data" / "ontologies" / "wine.ttl"
    onto = build_ontology("wine", parse_rdf(path))
    vin = "http://www.w3.org/TR/2003/PR-owl-guide-20031209/wine#"
    assert vin + "Wine" in onto.classes[vin + "WhiteWine"].parents
    assert len(generate_memorizing(onto, ["subClassOf"])["subClassOf"]) >= 60


def test_an_answer_its_own_premise_gives_is_dropped_and_counted(tmp_path):
    """DCAT: dcat:hasVersion ⊑ dcterms:hasVersion, both "has version" (here two properties of
    one namespace, since dcterms is an annotation vocabulary): "[X] has version [Y]" → "[X]
    [MASK] [Y]" answered "has version" is no reasoning."""
    path = tmp_path / "versions.ttl"
    path.write_text('@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n'
                    'ex:hasVersion rdfs:label "has version" ; rdfs:subPropertyOf ex:hasVersion2 .\n'
                    'ex:hasVersion2 rdfs:label "has version" .\n'
                    'ex:hasPart rdfs:label "has part" ; rdfs:subPropertyOf ex:relation .\n'
                    'ex:relation rdfs:label "is related to" .\n'
                    'ex:a ex:hasVersion ex:b ; ex:hasPart ex:c .\n', encoding="utf-8")
    triples = parse_rdf(path)
    onto = build_ontology("v", triples)
    skipped = Counter()
    rdfs7 = items_of(triples, onto, skipped=skipped)["rdfs7"]
    assert [i.answers for i in rdfs7] == [["is related to"]]
    assert skipped["rdfs7: answer in its own premise"] == 1
    records = generate_memorizing(onto, ["subPropertyOf"], skipped=skipped)["subPropertyOf"]
    assert [r.subject for r in records] == ["has part"]  # "has version implies has version"
    assert skipped["subPropertyOf: answer is its own subject"] == 1
