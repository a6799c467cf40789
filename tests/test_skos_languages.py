"""Issue 25: SKOS thesauri read as taxonomies, and prompts in the user's language.

The thesaurus is a slice of the UNESCO Thesaurus (tests/data/ontologies/, labels in en, es,
fr, ru, ar); German (which UNESCO lacks) is checked on the shared DBpedia ontology's `@de`
labels, as are Spanish and French on an OWL ontology.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.from_triples import BuildOptions, build_ontology
from kgprobe.ontology.labels import LABEL_PROPERTIES, name_words
from kgprobe.ontology.languages import available_languages, prompt_language
from kgprobe.ontology.loaders import parse_rdf
from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_LABEL,
    RDFS_SUBCLASSOF,
    SKOS,
    is_literal,
    literal,
    parse_literal,
)
from kgprobe.ontology.skos import singular_label, skos_mapping
from kgprobe.ontology.verbalize import capitalize, load_templates
from kgprobe.reasoning.items import item_closure, reasoning_items
from kgprobe.reasoning.memorizing import generate_memorizing
from kgprobe.reasoning.memorizing_sets import generated_sets

ROOT = Path(__file__).resolve().parents[1]
UNESCO = ROOT / "tests" / "data" / "ontologies" / "unesco-thesaurus-slice.ttl"
DBPEDIA = ROOT.parent / "shared" / "data" / "ontologies" / "dbpedia-ontology.ttl"
U = "http://vocabularies.unesco.org/thesaurus/concept"
EX = "http://example.org/t/"
#: English template words that must never appear in a prompt in another language.
ENGLISH_WORDS = re.compile(r"\b(is an?|Therefore|has|implies|One|particular|something|that)\b")


@pytest.fixture(scope="module")
def unesco():
    return parse_rdf(UNESCO)


def build(triples, **options):
    return build_ontology("t", triples, BuildOptions(**options))


# ------------------------------------------------------------------------------- SKOS


def test_thesaurus_broader_hierarchy_becomes_memorizing_records_and_items(unesco):
    onto = build(unesco, skos="classes")  # UNESCO is topical: `auto` leaves it unmapped
    assert not onto.instances  # no "X is a concept" records
    assert onto.classes[U + "1060"].label == "academic library"  # "Academic libraries"@en, singular, common noun lowered
    assert onto.classes[U + "1060"].parents == [U + "496"]
    records = generate_memorizing(onto, seed=0)
    assert not records["type"]
    sco = {r.subject: r.answers for r in records["subClassOf"]}
    assert sco["academic library"] == ["library"]
    assert all("concept" not in a.lower() for answers in sco.values() for a in answers)
    assert any(len(a) >= 2 for a in sco.values())  # chains, nearest first
    items = reasoning_items(onto, item_closure(onto, unesco), load_templates(),
                            rules=["rdfs9", "rdfs11"])
    assert items["rdfs11"]
    item = items["rdfs11"][0]
    assert any("SKOS thesaurus" in w for w in onto.warnings)


def test_skos_premises_count_as_asserted_through_the_cli(tmp_path):
    store, out = tmp_path / "store", tmp_path / "items"
    assert main(["kg", "load", str(UNESCO), "--store", str(store)]) == 0
    assert main(["generate", "reasoning", "--store", str(store), "--out", str(out),
                 "--rules", "rdfs11", "--skos", "classes"]) == 0
    rows = [json.loads(line) for line in (out / "rdfs11.jsonl").read_text().splitlines()]
    broader = {tuple(t) for t in skos_mapping(parse_rdf(UNESCO), "classes").triples}
    premises = [p for row in rows for p in row["premises"]]
    assert any(p["asserted"] for p in premises)
    assert all(p["asserted"] == (tuple(p["triple"]) in broader) for p in premises)


def test_leaves_mode_gives_type_records_and_rdfs9_items(unesco):
    onto = build(unesco, skos="leaves")
    assert U + "1060" in onto.instances and U + "1060" not in onto.classes
    assert onto.instances[U + "1060"].types == [U + "496"]
    records = generate_memorizing(onto, seed=0)
    tp = {r.subject: r.answers for r in records["type"]}
    assert tp["Academic library"] == ["library"]  # an individual's name keeps its case
    items = reasoning_items(onto, item_closure(onto, unesco), load_templates(),
                            rules=["rdfs9"])
    assert items["rdfs9"]


def test_skos_off_reads_plain_rdf(unesco):
    onto = build(unesco, skos="off")
    assert onto.instances and not any(c.parents for c in onto.classes.values())
    answers = {a for r in generate_memorizing(onto, seed=0)["type"] for a in r.answers}
    # read as plain RDF the concepts are individuals of skos:Concept, which, being SKOS's own
    # vocabulary, is never an answer (docs/own-ontology.md): no "X is a concept" records
    assert "concept" not in answers


def test_auto_leaves_an_ontology_with_its_own_taxonomy_alone():
    triples = [(EX + "a", SKOS + "broader", EX + "b"), (EX + "c", RDFS_SUBCLASSOF, EX + "d")]
    assert skos_mapping(triples, "auto") is None
    assert skos_mapping(triples, "classes") is not None


def test_narrower_inverted_and_transitive_shortcuts_reduced():
    triples = [(EX + "a", SKOS + "broader", EX + "b"),
               (EX + "c", SKOS + "narrower", EX + "b"),  # b broader c
               (EX + "a", SKOS + "broaderTransitive", EX + "c"),  # implied by the chain
               (EX + "d", SKOS + "narrowerTransitive", EX + "a")]  # a broader d
    edges = {(s, o) for s, _, o in skos_mapping(triples, "classes").triples}
    assert edges == {(EX + "a", EX + "b"), (EX + "b", EX + "c"), (EX + "a", EX + "d")}


@pytest.mark.parametrize("plural,singular", [
    ("Libraries", "Library"), ("Public libraries", "Public library"),
    ("Analog Computers", "Analog Computer"), ("Sciences of education", "Science of education"),
    ("Mathematics", "Mathematics"), ("Economics of education", "Economics of education"),
    ("Arts and crafts", "Arts and crafts"), ("Education", "Education"),
    ("Statistical data", "Statistical data"), ("Analysis", "Analysis")])
def test_english_thesaurus_labels_singular(plural, singular):
    assert singular_label(plural) == singular


# --------------------------------------------------------------------------- languages


def tagged_labels(triples) -> dict[str, dict[str, set[str]]]:
    """iri → language → its tagged label texts."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for s, p, o in triples:
        if p in LABEL_PROPERTIES and is_literal(o):
            text, tag = parse_literal(o)
            if tag:
                out[s][tag.split("-")[0]].add(text.strip())
    return out


def prompts_in(lang: str, triples, onto) -> list[str]:
    """Every reasoning prompt (premises, conjunction, each hypothesis) with real labels, and
    every memorizing prompt under every template."""
    templates = load_templates(lang=lang)
    items = reasoning_items(onto, item_closure(onto, triples), templates, pseudowords=False)
    texts = [" ".join([*(p.text for p in i.premises), templates.conjunction, h])
             for rule in items.values() for i in rule for h in i.hypotheses]
    for relation, records in generate_memorizing(onto, seed=0).items():
        for record in records[:50]:
            meta = templates.property_meta(record.pattern or templates.default_pattern(
                record.subject), None, None)
            texts += [capitalize(t.render(text_a=record.subject, meta=meta))
                      for t in templates[relation].manual]
    return texts


def check_language(lang: str, triples, onto) -> None:
    texts = prompts_in(lang, triples, onto)
    assert len(texts) > 20
    english = [t for t in texts if ENGLISH_WORDS.search(t)]
    assert not english, english[:3]
    labels = tagged_labels(triples)
    for table in (onto.classes, onto.properties, onto.instances):
        for iri, term in table.items():
            texts = labels[iri][lang]  # as written, or split when written as an identifier
            assert term.label in texts | {name_words(t) for t in texts}, (iri, term.label)


@pytest.mark.parametrize("lang", ["es", "fr"])
def test_thesaurus_prompts_in_spanish_and_french(unesco, lang):
    onto = build(unesco, langs=(lang,), skos="leaves")
    check_language(lang, unesco, onto)
    assert onto.classes[U + "496"].label == {"es": "Biblioteca", "fr": "Bibliothèque"}[lang]


@pytest.fixture(scope="module")
def dbpedia(shared_data):
    shared_data("data/ontologies/dbpedia-ontology.ttl")
    return parse_rdf(DBPEDIA)


@pytest.mark.parametrize("lang", ["es", "fr", "de"])
def test_owl_ontology_prompts_in_spanish_french_german(dbpedia, lang):
    onto = build(dbpedia, langs=(lang,))
    check_language(lang, dbpedia, onto)
    # every property is verbalized in the language, never by an English kgp:pattern/default
    assert all(p.pattern and " has " not in p.pattern for p in onto.properties.values())


def test_terms_without_a_label_in_the_language_are_skipped_and_counted():
    triples = [
        (EX + "A", RDF_TYPE, "http://www.w3.org/2002/07/owl#Class"),
        (EX + "A", RDFS_LABEL, literal("animal", "es")),
        (EX + "B", RDFS_SUBCLASSOF, EX + "A"), (EX + "B", RDFS_LABEL, literal("mammal", None)),
        (EX + "C", RDFS_SUBCLASSOF, EX + "B"), (EX + "C", RDFS_LABEL, literal("perro", "es-ES")),
        (EX + "D", RDFS_SUBCLASSOF, EX + "A"), (EX + "D", RDFS_LABEL, literal("bird", "en")),
    ]
    onto = build(triples, langs=("es",))
    assert set(onto.classes) == {EX + "A", EX + "C"}
    assert onto.classes[EX + "C"].parents == [EX + "A"]  # reconnected around B
    assert onto.excluded_counts == {"es-unlabelled": {"class": 2}}
    # English keeps its fallbacks: untagged labels and the local name
    assert set(build(triples).classes) == {EX + "A", EX + "B", EX + "C", EX + "D"}


def test_property_patterns_in_the_language():
    kgp = "https://w3id.org/kgprobe/vocab#pattern"
    prop = "http://www.w3.org/1999/02/22-rdf-syntax-ns#Property"
    triples = [
        (EX + "employer", RDF_TYPE, prop),
        (EX + "employer", RDFS_LABEL, literal("empleador", "es")),
        (EX + "employer", kgp, literal("[X] works for [Y] .", None)),
        (EX + "employer", kgp, literal("[X] trabaja para [Y] .", "es")),
        (EX + "author", RDF_TYPE, prop), (EX + "author", RDFS_LABEL, literal("autor", "es")),
        (EX + "author", kgp, literal("[X] was written by [Y] .", None)),
        (EX + "partOf", RDF_TYPE, prop), (EX + "partOf", RDFS_LABEL, literal("parte de", "es")),
        (EX + "has", RDF_TYPE, prop), (EX + "has", RDFS_LABEL, literal("contiene", "es")),
    ]
    patterns = {i: p.pattern for i, p in build(triples, langs=("es",)).properties.items()}
    assert patterns == {EX + "employer": "[X] trabaja para [Y] .",  # its own @es pattern
                        EX + "author": "[X] tiene como autor [Y] .",  # never the English one
                        EX + "partOf": "[X] es parte de [Y] .",
                        EX + "has": "[X] contiene [Y] ."}
    assert build(triples).properties[EX + "author"].pattern == "[X] was written by [Y] ."


def test_every_language_has_every_relation():
    english = load_templates()
    assert set(available_languages()) >= {"en", "es", "fr", "de"}
    for lang in available_languages():
        templates = load_templates(lang=lang)
        assert templates.lang == lang
        for name, relation in english.relations.items():
            assert len(templates[name].manual) == len(relation.manual), (lang, name)


#: Words that must not stand right before the mask: an article agrees with the answer's gender
#: (unknown, and a cue), French "de" elides before a vowel ("d'art": a cue too).
BEFORE_MASK = {"es": ("un", "una", "el", "la", "los", "las"),
               "fr": ("un", "une", "le", "la", "les", "de", "du"),
               "de": ("ein", "eine", "einen", "der", "die", "das", "den", "dem")}


@pytest.mark.parametrize("lang", sorted(BEFORE_MASK))
def test_no_article_or_elision_before_the_answer(lang):
    for relation in load_templates(lang=lang).relations.values():
        for template in relation.manual:
            before = template.render(text_a="X", meta={"as_subject": "", "as_object": ""},
                                     mask="\0").split("\0")[0].split()
            assert before[-1].lower() not in BEFORE_MASK[lang], template.source


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize("command", [["kg", "load", str(UNESCO)],
                                     ["generate", "reasoning", "--out", "x"],
                                     ["generate", "memorizing", "--out", "x"]])
def test_a_language_without_templates_exits_2_naming_the_available_ones(
        tmp_path, capsys, command):
    assert main([*command, "--store", str(tmp_path / "s"), "--lang", "xx"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--lang xx" in err and "available: de, en, es, fr" in err
    assert not (tmp_path / "s").exists()


def test_a_fallback_language_would_mix_languages(tmp_path, capsys):
    assert main(["generate", "reasoning", "--store", str(tmp_path), "--out", "x",
                 "--lang", "es,en"]) == 2
    assert "give --lang es" in capsys.readouterr().err
    assert prompt_language(("es-mx", "es")) == "es"  # a region of the same language is fine


def test_generated_set_is_prompted_in_its_language(tmp_path):
    store, out = tmp_path / "store", tmp_path / "mem"
    assert main(["kg", "load", str(UNESCO), "--store", str(store)]) == 0
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out),
                 "--lang", "fr", "--split-sizes", "2,2", "--skos", "classes"]) == 0
    from kgprobe.studies.memorization.study import prompts_for

    mset = generated_sets(out, tasks=["subClassOf"])["subClassOf"]
    assert mset.lang == "fr"
    prompts = prompts_for(mset, mset.records, load_templates(lang=mset.lang), 0)
    assert "Bibliothèque universitaire entre dans la catégorie [MASK] ." in prompts
