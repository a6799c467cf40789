"""Issue 33's wording cases: each quoted label, in a tiny hand-made ontology, gives a
grammatical prompt (or the conservative pattern, whose shape is counted as "unclear")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kgprobe.ontology.from_triples import BuildOptions, build_ontology
from kgprobe.ontology.labels import is_adjective_label
from kgprobe.ontology.loaders import parse_rdf
from kgprobe.ontology.verbalize import load_templates
from kgprobe.ontology.wording import UNCLEAR_PATTERN, property_shape
from kgprobe.reasoning.items import Verbalizer

EX = "http://example.org/w#"

#: property label → the domain prompt it must give (issue 33 #1).
PROPERTIES = {
    "resulted in": "One has to be a particular [MASK] if one resulted in a thing .",
    "collaborated with": "One has to be a particular [MASK] if one collaborated with a thing .",
    "biotically interacts with":
        "One has to be a particular [MASK] if one biotically interacts with a thing .",
    "spacetime volume is defined by":
        "One has to be a particular [MASK] if one 's spacetime volume is defined by a thing .",
    "interval meets": "One has to be a particular [MASK] if one stands in the relation "
                      '"interval meets" to a thing .',
    "currently holds": "One has to be a particular [MASK] if one currently holds a thing .",
    "in XSD Date-Time-Stamp": "One has to be a particular [MASK] if one stands in the relation "
                              '"in XSD date time stamp" to a thing .',
    # "has" before no noun phrase: the conservative pattern ("has member during" names a time)
    "has member During": ('One has to be a particular [MASK] if one stands in the relation '
                          '"has member during" to a thing .'),
    "has SubOrganization":
        "One has to be a particular [MASK] if one has sub organization a thing .",
    "located in": "One has to be a particular [MASK] if one is located in a thing .",
    # ORG's "registered site" and CIDOC-CRM's "used constituent": a participle before a noun
    # is a noun phrase or a verb and its object, never "is registered site" nor "has used
    # constituent"; OWL-Time's "interval disjoint" ends in an adjective: no noun to "have"
    "registered site": "One has to be a particular [MASK] if one stands in the relation "
                       '"registered site" to a thing .',
    "used constituent": "One has to be a particular [MASK] if one stands in the relation "
                        '"used constituent" to a thing .',
    "interval disjoint": "One has to be a particular [MASK] if one stands in the relation "
                         '"interval disjoint" to a thing .',
    # BIBO's "court", Music Ontology's "time": a noun that is also a verb's base form, between
    # two classes, is the noun ("one court something" was the wrong sentence)
    "court": "One has to be a particular [MASK] if one has court a thing .",
    "time": "One has to be a particular [MASK] if one has time a thing .",
    # ORG's "subOrganization of" (camelCase inside a label, lower first letter)
    "subOrganization of": "One has to be a particular [MASK] if one is sub organization of a "
                          "thing .",
}

#: class label → how "[X] is a ___ ." reads it, and its disambiguator (issue 33 #2, #10).
CLASSES = {
    "Human-Made Thing": ("human-made thing", None),
    "Date Time description": ("date time description", None),
    "Spokenword": ("spoken word", None),
    "Week (unit of temporal duration)": ("week", "unit of temporal duration"),
    "asterids": ("asterid", None),
    "Gnetophytes": ("gnetophyte", None),
    "Biomolecule": ("biomolecule", None),
    "Australian football Team": ("Australian football team", None),
    "EMail": ("email", None),  # BIBO: one capital letter before a word
    "archbishop": ("archbishop", None),  # no "arch bishop": a word, not two run together
    # ENVO: a parenthetical inside the name is a disambiguator too
    "cowpea (pulse) food product": ("cowpea food product", "pulse"),
    # the head is the noun before a preposition: no "collection of valuable"
    "collection of valuables": ("collection of valuables", None),
}


def _ontology(tmp_path: Path):
    """One class "thing"; each property's domain and range; each class under "thing"."""
    lines = ["@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             "@prefix owl: <http://www.w3.org/2002/07/owl#> .", f"@prefix : <{EX}> .",
             ':thing a owl:Class ; rdfs:label "thing" .', ":isrc a owl:ObjectProperty ; "
             'rdfs:label "isrc" ; rdfs:subPropertyOf :p0 .']
    for n, label in enumerate(PROPERTIES):
        lines.append(f':p{n} a owl:ObjectProperty ; rdfs:label "{label}" ; rdfs:domain :thing ; '
                     "rdfs:range :thing .")
    # OWL-Time's "minutes" relates a duration to a number: a noun, where "feeds" between two
    # classes is a verb (`wording._verb_between_classes`)
    lines.append(':minutes a owl:DatatypeProperty ; rdfs:label "minutes" ; rdfs:domain :thing ; '
                 "rdfs:range <http://www.w3.org/2001/XMLSchema#decimal> .")
    lines.append(':feeds a owl:ObjectProperty ; rdfs:label "feeds" ; rdfs:domain :thing ; '
                 "rdfs:range :thing .")
    for n, label in enumerate(CLASSES):
        lines.append(f':c{n} a owl:Class ; rdfs:label "{label}" ; rdfs:subClassOf :thing .')
    # OWL-Time's individuals: the parenthetical is a disambiguator, kept apart (issue 33 #2)
    lines.append(':week a :c0 ; rdfs:label "Week (unit of temporal duration)" .')
    # BIBO's document status "peer reviewed": an adjective, no subject of "[X] is a ___"
    lines.append(':peer a :c0 ; rdfs:label "Peer reviewed" .')
    # ENVO's grouping classes ("food material by organism") are no kind of thing
    lines.append(':group a owl:Class ; rdfs:label "food material by organism" ; '
                 "rdfs:subClassOf :thing .")
    lines.append(':plantfood a owl:Class ; rdfs:label "plant food product" ; '
                 "rdfs:subClassOf :group .")
    lines.append(':ooze a owl:Class ; rdfs:label "sediment permeated by freshwater" ; '
                 "rdfs:subClassOf :thing .")
    path = tmp_path / "w.ttl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # "thing", above every class, would be a root (tests/test_roots_homonyms.py); kept here
    # as the one range every pattern names
    return build_ontology("w", parse_rdf(path), BuildOptions(keep_roots=True))


@pytest.fixture(scope="module")
def onto(tmp_path_factory):
    return _ontology(tmp_path_factory.mktemp("wording"))


def test_property_labels_give_grammatical_domain_prompts(onto):
    verb = Verbalizer(onto, load_templates(), pseudowords=True)
    for n, (label, prompt) in enumerate(PROPERTIES.items()):
        meta = verb.property_meta(f"{EX}p{n}")
        text = verb.templates["domain"].manual[0].render(meta=meta)
        assert text == prompt, label
        assert not re.search(r"\b(is|has) (resulted|collaborated|biotically|interval|in XSD)",
                             text)


def test_a_plural_looking_label_is_a_verb_between_classes_and_a_noun_before_a_value(onto):
    """ "minutes" (to a number) reads "[X] has minutes [Y]"; "feeds" (between two classes) is
    the verb "[X] feeds [Y]", though a tagger reads both alone as plural nouns."""
    from kgprobe.ontology.verbalize import default_pattern

    minutes, feeds = onto.properties[f"{EX}minutes"], onto.properties[f"{EX}feeds"]
    assert (minutes.pattern or default_pattern(minutes.label)) == "[X] has minutes [Y] ."
    assert (feeds.pattern or default_pattern(feeds.label)) == "[X] feeds [Y] ."


def test_unclear_shapes_are_counted_not_worded_wrongly():
    shapes = {label: property_shape(label) for label in PROPERTIES}
    assert [label for label, s in shapes.items() if s == "unclear"] == [
        "interval meets", "in XSD Date-Time-Stamp", "has member During", "registered site",
        "used constituent", "interval disjoint"]
    assert UNCLEAR_PATTERN.startswith("[X]") and UNCLEAR_PATTERN.index("[X]") < \
        UNCLEAR_PATTERN.index("[Y]")


def test_acronym_keeps_its_capitals(onto):
    label = onto.properties[f"{EX}isrc"].label
    prompt = load_templates()["subPropertyOf"].manual[0].render(text_a=label)
    assert prompt.startswith("ISRC implies [MASK]"), prompt


def test_class_labels_read_as_common_singular_nouns(onto):
    for n, (label, (words, disambiguator)) in enumerate(CLASSES.items()):
        cls = onto.classes[f"{EX}c{n}"]
        assert (cls.label, cls.disambiguator) == (words, disambiguator), label
        premise = load_templates()["subClassOf"].manual[0].fill("thing", text_a=cls.label)
        assert "(" not in premise and not re.search(r"\ban? \w+s \.", premise), premise


@pytest.mark.parametrize("label", ["carotenoid", "terpenoid", "cloud top"])
def test_adjective_filter_keeps_nouns(label):
    assert not is_adjective_label(label)


@pytest.mark.parametrize("label", ["viscous", "decreased", "adjacent to", "striated"])
def test_adjective_filter_still_drops_adjectives(label):
    assert is_adjective_label(label)


def test_an_individuals_parenthetical_is_a_field_not_part_of_the_prompt(onto):
    """ "Week (unit of temporal duration) is a [MASK] ." (issue 33 #2) reads "Week is a …", the
    parenthetical kept in the record's `disambiguator`."""
    from kgprobe.reasoning.memorizing import generate_memorizing

    week = onto.instances[f"{EX}week"]
    assert (week.label, week.disambiguator) == ("Week", "unit of temporal duration")
    record, = [r for r in generate_memorizing(onto, ["type"], train=0, dev=0)["type"]
               if r.subject_iri == f"{EX}week"]
    assert (record.subject, record.disambiguator) == ("Week", "unit of temporal duration")
    prompt = load_templates()["type"].manual[0].render(text_a=record.subject)
    assert "(" not in prompt and prompt.startswith("Week is "), prompt
    assert "disambiguator" in record.to_json()


def test_an_individual_labelled_by_an_adjective_phrase_is_left_out_and_counted(onto):
    from kgprobe.ontology.exclusions import ADJECTIVE

    assert f"{EX}peer" not in onto.instances
    assert onto.excluded[f"{EX}peer"] == ADJECTIVE
    assert f"{EX}week" in onto.instances  # a name ("Week") is no adjective phrase


def test_a_grouping_class_is_no_answer_and_its_subclasses_keep_their_parents(onto):
    from kgprobe.ontology.exclusions import GROUPING

    assert onto.excluded[f"{EX}group"] == GROUPING
    assert onto.classes[f"{EX}plantfood"].parents == [f"{EX}thing"]  # reconnected around it
    assert f"{EX}ooze" in onto.classes  # a participle before "by": a kind, kept


def test_a_text_is_tagged_once_for_its_cased_and_as_written_keys(tmp_path, monkeypatch):
    """A lower-case label's two keys (as written, cased) are one text: the tagger reads it
    once, and each key gets what tagging it alone gives."""
    from kgprobe.ontology import wording

    monkeypatch.setenv("KGPROBE_TAG_CACHE_DIR", str(tmp_path))  # nothing cached yet
    monkeypatch.setattr(wording, "_TAGGED", {})
    nlp = wording._pipeline()
    read = []

    class Counting:
        def pipe(self, texts, batch_size):
            texts = list(texts)
            read.extend(texts)
            return nlp.pipe(texts, batch_size=batch_size)

    monkeypatch.setattr(wording, "_pipeline", lambda: Counting())
    labels = ["pectoral fin", "Has Topping", "DNA binding", "pectoral fin ray"]
    wording.tag_all(labels, cased=(False, True))  # as `word_labels` tags class labels
    assert sorted(read) == sorted({"pectoral fin", "has topping", "Has Topping", "DNA binding",
                                   "pectoral fin ray"})
    for label in labels:
        assert wording.tags(label) == tuple((t.text, t.tag_) for t in nlp(wording._as_written(label)))
        assert wording.tags(label, cased=True) == tuple((t.text, t.tag_) for t in nlp(label))


def test_spacy_loads_without_its_command_line_package():
    """The tagger loads with spaCy's CLI deferred (no typer, requests, weasel); the real
    package loads afterwards on demand, and `spacy.info` reaches it."""
    import subprocess
    import sys

    code = ("import sys; from kgprobe.ontology import wording; tags = wording._pipeline(); "
            "late = [m for m in ('spacy.cli', 'requests', 'weasel', 'torch') if m in sys.modules]; "
            "import spacy, spacy.cli; "
            "print(late, callable(spacy.cli.setup_cli), 'spacy_version' in spacy.info())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "[] True True", out.stdout
