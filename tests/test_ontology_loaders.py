"""Loaders: the OntoProbe JSON pair, RDF files, labels and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kgprobe.errors import OntologyError
from kgprobe.ontology.labels import article, local_name_label, pick_label
from kgprobe.ontology.loaders import (
    bundled_source,
    load_ontoprobe,
    load_rdf,
    load_source,
)
from kgprobe.ontology.model import (
    RDFS_SUBCLASSOF,
    SKOS_PREFLABEL,
    literal,
    parse_literal,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DBO = "http://dbpedia.org/ontology/"


@pytest.fixture(scope="module")
def bundled():
    return bundled_source()


def test_bundled_ontology_counts_and_iris(bundled):
    onto = bundled.ontology
    raw = json.loads((SHARED / "ontoprobe" / "class.json").read_text())
    # Every class of class.json keeps its DBpedia IRI; a few chain-only labels are minted.
    assert {r["rdfs:Class"] for r in raw} <= set(onto.classes)
    assert onto.classes[DBO + "SoccerPlayer"].label == "soccer player"
    assert onto.classes[DBO + "SoccerPlayer"].parents == [DBO + "Athlete"]
    # 52 listed properties plus their superproperties known only by label.
    assert DBO + "team" in onto.properties
    team = onto.properties[DBO + "team"]
    assert team.label == "member of sports team"
    assert team.pattern == "[X] played for [Y] ."
    assert team.domain == [DBO + "Person"] and team.range == [DBO + "SportsTeam"]
    assert "https://www.wikidata.org/wiki/Property:P54" in team.same_as
    assert any(onto.properties[p].label == "member of" for p in team.parents)


def test_bundled_instances_and_facts(bundled):
    onto = bundled.ontology
    messi_like = [i for i in onto.instances.values() if DBO + "SoccerPlayer" in i.types]
    assert len(messi_like) == 20
    assert len(onto.facts) > 500
    s, p, o = onto.facts[0]
    assert s in onto.instances and p in onto.properties and o in onto.instances


def test_chain_inconsistencies_are_reported_not_dropped(bundled):
    warnings = "\n".join(bundled.ontology.warnings)
    # class.json lists 'classical music artist' with a chain whose first element is
    # 'person'; the stored direct edge is that first element and the mismatch is reported.
    assert "classical music artist" in warnings
    assert "earthquake" in warnings
    cls = next(c for c in bundled.ontology.classes.values() if c.label == "classical music artist")
    assert cls.parents == [DBO + "Person"]
    # Chain-only labels get their direct superclass from the chain, so no warning for them.
    assert "Record Office" not in warnings
    minted = next(c for c in bundled.ontology.classes.values()
                  if c.label == "non-profit organisation")
    assert minted.parents == [DBO + "Organisation"]


def test_every_listed_chain_is_checked(tmp_path):
    (tmp_path / "class.json").write_text(json.dumps([
        {"id": 0, "rdfs:Class": "http://ex.org/A", "rdfs:label": "a",
         "rdfs:subClassOf": ["b", "c"], "is rdf:type of": ["x1"]},
        {"id": 1, "rdfs:Class": "http://ex.org/B", "rdfs:label": "b",
         "rdfs:subClassOf": ["d"], "is rdf:type of": []},
    ]))
    (tmp_path / "property.json").write_text("[]")
    src = load_ontoprobe(tmp_path)
    assert any("'a'" in w and "['b', 'c']" in w for w in src.ontology.warnings)
    assert src.ontology.classes["http://ex.org/A"].parents == ["http://ex.org/B"]


def test_missing_property_json_is_a_one_line_error(tmp_path):
    (tmp_path / "class.json").write_text("[]")
    with pytest.raises(OntologyError, match="property.json") as err:
        load_source(tmp_path)
    assert "\n" not in str(err.value)


def test_pizza_owl_loads_and_ignores_restrictions():
    src = load_rdf(SHARED / "ontologies" / "pizza.owl")
    onto = src.ontology
    pz = "https://raw.githubusercontent.com/owlcs/pizza-ontology/refs/heads/master/pizza.owl#"
    assert pz + "Margherita" in onto.classes
    assert pz + "NamedPizza" in onto.classes[pz + "Margherita"].parents
    assert all(p.startswith("http") for c in onto.classes.values() for p in c.parents)
    assert any("175 subClassOf restriction" in w for w in onto.warnings)
    assert pz + "hasTopping" in onto.properties
    assert onto.properties[pz + "hasTopping"].range == [pz + "PizzaTopping"]


def test_dbpedia_ontology_loads():
    onto = load_rdf(SHARED / "ontologies" / "dbpedia-ontology.ttl").ontology
    assert len(onto.classes) > 700 and len(onto.properties) > 2000
    assert DBO + "Athlete" in onto.classes[DBO + "SoccerPlayer"].parents
    assert onto.classes[DBO + "SoccerPlayer"].label == "soccer player"


@pytest.mark.parametrize("suffix,text", [
    (".nt", '<http://ex.org/Dog> <http://www.w3.org/2000/01/rdf-schema#subClassOf> '
            '<http://ex.org/Mammal> .\n'),
    (".jsonld", json.dumps({"@id": "http://ex.org/Dog",
                            "http://www.w3.org/2000/01/rdf-schema#subClassOf":
                                {"@id": "http://ex.org/Mammal"}})),
    (".rdf", '<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
             ' xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"><rdf:Description '
             'rdf:about="http://ex.org/Dog"><rdfs:subClassOf rdf:resource="http://ex.org/Mammal"/>'
             '</rdf:Description></rdf:RDF>'),
    (".trix", '<TriX xmlns="http://www.w3.org/2004/03/trix/trix-1/"><graph><triple>'
              '<uri>http://ex.org/Dog</uri><uri>http://www.w3.org/2000/01/rdf-schema#subClassOf</uri>'
              '<uri>http://ex.org/Mammal</uri></triple></graph></TriX>'),
])
def test_each_rdf_syntax_loads(tmp_path, suffix, text):
    path = tmp_path / f"o{suffix}"
    path.write_text(text)
    src = load_rdf(path)
    assert ("http://ex.org/Dog", RDFS_SUBCLASSOF, "http://ex.org/Mammal") in src.triples
    assert src.ontology.classes["http://ex.org/Dog"].label == "dog"


def test_truncated_turtle_names_the_line(tmp_path):
    text = (SHARED / "ontologies" / "dbpedia-ontology.ttl").read_text()[:3000]
    path = tmp_path / "cut.ttl"
    path.write_text(text)
    with pytest.raises(OntologyError) as err:
        load_rdf(path)
    msg = str(err.value)
    assert "cut.ttl" in msg and "line" in msg and "\n" not in msg


def test_truncated_rdfxml_names_the_line(tmp_path):
    path = tmp_path / "cut.owl"
    path.write_text((SHARED / "ontologies" / "pizza.owl").read_text()[:2000])
    with pytest.raises(OntologyError, match=r"cut.owl: line \d+"):
        load_rdf(path)


def test_cycles_load_with_a_warning(tmp_path):
    path = tmp_path / "cycle.ttl"
    path.write_text("@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                    "ex:A rdfs:subClassOf ex:B . ex:B rdfs:subClassOf ex:C . ex:C rdfs:subClassOf ex:A .\n")
    onto = load_rdf(path).ontology
    assert any("cyclic subclass" in w and "a → b → c" in w for w in onto.warnings)
    assert onto.classes["http://ex.org/C"].parents == ["http://ex.org/A"]


def test_instances_and_facts_from_rdf(tmp_path):
    path = tmp_path / "zoo.ttl"
    path.write_text("""@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:rex a ex:Dog ; ex:ownedBy ex:ann ; rdfs:label "Rex"@en .
ex:ownedBy rdfs:domain ex:Animal ; rdfs:range ex:Person .
ex:Dog rdfs:subClassOf ex:Animal .
""")
    onto = load_rdf(path).ontology
    assert onto.instances["http://ex.org/rex"].types == ["http://ex.org/Dog"]
    assert onto.instances["http://ex.org/rex"].label == "Rex"
    assert ("http://ex.org/rex", "http://ex.org/ownedBy", "http://ex.org/ann") in onto.facts
    assert "http://ex.org/ann" in onto.instances  # the object of a fact is an instance
    assert onto.properties["http://ex.org/ownedBy"].domain == ["http://ex.org/Animal"]


# ----------------------------------------------------------------------------- labels


def test_label_fallbacks():
    iri = "http://ex.org/SoccerPlayer"
    rdfs, skos = "http://www.w3.org/2000/01/rdf-schema#label", SKOS_PREFLABEL
    both = {rdfs: [("Fußballspieler", "de"), ("soccer player", "en")]}
    assert pick_label(both, iri) == "soccer player"
    assert pick_label(both, iri, ("de", "en")) == "Fußballspieler"
    assert pick_label({rdfs: [("Fußballspieler", "de")], skos: [("footballer", "en")]},
                      iri) == "footballer"
    assert pick_label({rdfs: [("Fußballspieler", "de")]}, iri) == "soccer player"
    assert pick_label({rdfs: [("Fußballspieler", "de")]}, iri, ("en", "*")) == "Fußballspieler"
    assert pick_label({rdfs: [("untagged", None)]}, iri) == "untagged"
    assert local_name_label("http://ex.org/onto#has_topping") == "has topping"
    assert local_name_label("http://ex.org/HTTPServer") == "http server"
    assert local_name_label("http://ex.org/Place_of%20birth") == "place of birth"


def test_label_fallback_in_loader(tmp_path):
    path = tmp_path / "l.ttl"
    path.write_text('@prefix ex: <http://ex.org/> . @prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n'
                    '@prefix owl: <http://www.w3.org/2002/07/owl#> .\n'
                    'ex:IceCream a owl:Class . ex:Cake a owl:Class ; skos:prefLabel "gâteau"@fr, "cake"@en .\n')
    onto = load_rdf(path).ontology
    assert onto.classes["http://ex.org/IceCream"].label == "ice cream"
    assert onto.classes["http://ex.org/Cake"].label == "cake"


@pytest.mark.parametrize("phrase,expected", [
    ("dog", "a"), ("animal", "an"), ("hour", "an"), ("university", "a"),
    ("European city", "a"), ("honest man", "an"), ("one-day event", "a"), ("MRI scanner", "an"),
])
def test_article_by_sound(phrase, expected):
    assert article(phrase) == expected


def test_literal_round_trip():
    for text in ['plain', 'with "quotes"', "back\\slash", "new\nline"]:
        assert parse_literal(literal(text)) == (text, "en")
    assert parse_literal('"x"') == ("x", None)


TRICKY = ["tab\there", "ctrl\x01char", "caf\u00e9", "para\u2028sep", 'q"uote', "back\\slash",
          "\\u0041 is not A", "new\nline\r\n", "astral \U0001F600"]


def test_literal_escapes_from_pyoxigraph_and_rdflib_are_undone():
    """Literals reach the model written by pyoxigraph (\\t, \\u0001) and by rdflib; each
    must decode to the text the file says, whoever wrote it."""
    import pyoxigraph as ox
    import rdflib
    from kgprobe.ontology.loaders import _rdflib_term

    for text in TRICKY:
        assert parse_literal(str(ox.Literal(text, language="de"))) == (text, "de"), text
        assert parse_literal(_rdflib_term(rdflib.Literal(text))) == (text, None), text
        typed = _rdflib_term(rdflib.Literal(text, datatype=rdflib.URIRef("http://ex.org/code")))
        assert typed.endswith("^^<http://ex.org/code>")
        assert parse_literal(typed)[0] == text


def test_a_label_with_a_tab_and_an_escape_loads_as_written(tmp_path):
    path = tmp_path / "t.ttl"
    path.write_text('@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n'
                    '<http://ex.org/Cafe> rdfs:subClassOf <http://ex.org/Place> ;\n'
                    '    rdfs:label "caf\\u00e9\\tbar"@en .\n', encoding="utf-8")
    src = load_rdf(path)
    # the triple keeps the escapes as written; the prompt label has one space for the tab
    # (`ontology.wording.normalize_spaces`: a tab inside a prompt is no word boundary a model saw)
    assert ("http://ex.org/Cafe", "http://www.w3.org/2000/01/rdf-schema#label",
            '"caf\u00e9\\tbar"@en') in src.triples
    assert src.ontology.classes["http://ex.org/Cafe"].label == "caf\u00e9 bar"
