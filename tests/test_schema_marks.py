"""Issue 33, what a blind reading of six unseen ontologies found (docs/own-ontology-samples.md):

* UML multiplicities written into property labels (GoodRelations' "seeks (0..*)", "has next
  (0..1)") are no words of the prompt;
* a plural marker glued to a word (GeoNames' "plain(s)") is no disambiguator "s";
* an ordinal the lexicon does not list ("sixth order inflorescence axis") is no acronym;
* a class declared below skos:Concept holds codes, not things: "Palm grove is a code" is
  never written (GeoNames' gn:Code), as its rdfs9 items already were not;
* a broader term "Rock or sediment" has two heads: "Rock" names a kind of it;
* "has" before no noun ("has next") gets the conservative pattern; foaf:name is a label;
  "business entity" is a kind, not a root; "Carpenter, General" keeps its words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgprobe.ontology.exclusions import VOCABULARY_CLASS
from kgprobe.ontology.from_triples import BuildOptions
from kgprobe.ontology.loaders import load_rdf
from kgprobe.ontology.skos import _heads
from kgprobe.ontology.verbalize import load_templates
from kgprobe.ontology.wording import strip_marks, word_case
from kgprobe.reasoning.items import item_closure, reasoning_items
from kgprobe.reasoning.memorizing import generate_memorizing

PREFIXES = """@prefix ex: <http://ex.org/gr/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "onto.ttl"
    path.write_text(PREFIXES + text, encoding="utf-8")
    source = load_rdf(path, options=BuildOptions())
    return source.ontology, list(source.triples)


@pytest.mark.parametrize("label, expected", [
    ("seeks (0..*)", "seeks"), ("hasNext (0..1)", "hasNext"),
    ("has max value float (1..1)", "has max value float"), ("has max value 0..1", "has max value"),
    ("plain(s)", "plain"), ("marsh(es)", "marsh"),
    # what is not a mark stays
    ("Week (unit of temporal duration)", "Week (unit of temporal duration)"),
    ("ISO 8601 date", "ISO 8601 date"), ("version 1.2", "version 1.2")])
def test_marks_a_schema_writes_into_labels_are_taken_out(label, expected):
    assert strip_marks(label) == expected


def test_an_ordinal_is_no_acronym_and_an_acronym_still_is():
    assert [word_case(w) for w in ("sixth", "fifth", "twelfth")] == ["sixth", "fifth", "twelfth"]
    assert [word_case(w) for w in ("isrc", "html")] == ["ISRC", "HTML"]


GOODRELATIONS = """
ex:DayOfWeek a owl:Class ; rdfs:label "Day of week" .
ex:Offering a owl:Class ; rdfs:label "Offering" .
ex:BusinessEntity a owl:Class ; rdfs:label "Business entity" .
ex:hasNext a owl:ObjectProperty ; rdfs:label "has next (0..1)" ;
    rdfs:domain ex:DayOfWeek ; rdfs:range ex:DayOfWeek .
ex:seeks a owl:ObjectProperty ; rdfs:label "seeks (0..*)" ;
    rdfs:domain ex:BusinessEntity ; rdfs:range ex:Offering .
ex:Monday a ex:DayOfWeek ; rdfs:label "Monday" ; ex:hasNext ex:Tuesday .
ex:Tuesday a ex:DayOfWeek ; rdfs:label "Tuesday" .
ex:acme rdfs:label "Acme" ; ex:seeks ex:offer1 .
ex:offer1 rdfs:label "Spring sale" .
"""


def test_no_prompt_writes_a_multiplicity(tmp_path):
    onto, triples = load(tmp_path, GOODRELATIONS)
    assert onto.properties["http://ex.org/gr/hasNext"].label == "has next"
    assert onto.properties["http://ex.org/gr/seeks"].label == "seeks"
    items = reasoning_items(onto, item_closure(onto, triples), load_templates(None),
                            pseudowords=False)
    texts = [p.text for rule in items.values() for i in rule for p in i.premises]
    # rdfs2/rdfs3 items were made; "has" before an adjective reads as no sentence, so the
    # conservative pattern names the relation
    assert any('Monday stands in the relation "has next" to Tuesday' in t for t in texts)
    assert texts and not any(".." in t or "(" in t for t in texts)


def test_a_name_is_read_where_a_vocabulary_gives_no_label(tmp_path):
    onto, _ = load(tmp_path, """@prefix foaf: <http://xmlns.com/foaf/0.1/> .
ex:Marc-Wick a foaf:Person ; foaf:name "Marc Wick" .
foaf:Person a owl:Class ; rdfs:label "Person" .
""")
    assert onto.instances["http://ex.org/gr/Marc-Wick"].label == "Marc Wick"


def test_an_entity_that_is_a_kind_stays_an_answer(tmp_path):
    """GoodRelations' "business entity" (a person or an organization) is a top with classes
    below it, but a kind of thing, unlike an "entity" above most of an ontology."""
    onto, _ = load(tmp_path, """
ex:BusinessEntity a owl:Class ; rdfs:label "Business entity" .
ex:Person rdfs:subClassOf ex:BusinessEntity ; rdfs:label "Person" .
ex:Organization rdfs:subClassOf ex:BusinessEntity ; rdfs:label "Organization" .
""" + "".join(f'ex:C{k} a owl:Class ; rdfs:label "offering {k}" .\n' for k in range(5)))
    assert "http://ex.org/gr/BusinessEntity" in onto.classes


CODES = """
ex:Code a owl:Class ; rdfs:label "Code" ; rdfs:subClassOf skos:Concept .
ex:Feature a owl:Class ; rdfs:label "Feature" .
ex:River a owl:Class ; rdfs:label "River" ; rdfs:subClassOf ex:Feature .
ex:PLMG a ex:Code ; skos:prefLabel "palm grove" .
ex:PLN a ex:Code ; skos:prefLabel "plain(s)" .
ex:STM a ex:Code ; skos:prefLabel "stream" .
ex:thames a ex:River ; rdfs:label "Thames" .
"""


def test_a_code_list_class_is_no_answer_and_its_codes_no_subjects(tmp_path):
    onto, triples = load(tmp_path, CODES)
    assert onto.excluded["http://ex.org/gr/Code"] == VOCABULARY_CLASS
    records = generate_memorizing(onto, train=0, dev=0)
    answers = {a for recs in records.values() for r in recs for a in r.answer_iris}
    assert "http://ex.org/gr/Feature" in answers  # the real taxonomy still asks
    assert "http://ex.org/gr/Code" not in answers
    subjects = {r.subject for recs in records.values() for r in recs}
    assert not subjects & {"http://ex.org/gr/PLMG", "http://ex.org/gr/PLN"}


def test_a_broader_term_with_alternatives_has_a_head_for_each():
    assert _heads("Rock or sediment") == ("rock", "sediment")
    assert _heads("Public libraries") == ("library",)


def test_a_thesaurus_label_with_a_comma_keeps_its_words():
    """HISCO's "Carpenter, General": inflect singularizes the whole label to "False General";
    only the head, before a comma or preposition, is made singular."""
    from kgprobe.ontology.skos import singular_label

    assert singular_label("Carpenter, General") == "Carpenter, General"
    assert singular_label("Physicists, general") == "Physicist, general"
    assert singular_label("Libraries for the blind") == "Library for the blind"
    assert singular_label("Carpenters , General") == "Carpenter , General"
