"""Texts too long to be names or answers never reach spaCy whole (issue 45): spaCy refuses a
text over 1,000,000 characters (error E088), and a label that long in an ontology, or a
generated answer of 2.1 MB, crashed `kg load` and the open-answer grader with a traceback."""

from __future__ import annotations

import contextlib
import io

from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.reasoning.grading import Taxonomy, grade

EX = "http://example.org/z#"
LONG = " ".join(["word"] * 220_000)  # 1,099,999 characters


def test_a_label_over_a_million_characters_leaves_its_term_out_counted(tmp_path):
    assert len(LONG) > 1_000_000
    path = tmp_path / "long.ttl"
    path.write_text(f"""@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix : <{EX}> .
:Animal a owl:Class ; rdfs:label "animal" .
:Dog a owl:Class ; rdfs:subClassOf :Animal ; rdfs:label "dog" .
:Cat a owl:Class ; rdfs:subClassOf :Animal ; rdfs:label "cat" .
:Long a owl:Class ; rdfs:subClassOf :Animal ; rdfs:label "{LONG}" .
:Puppy a owl:Class ; rdfs:subClassOf :Long ; rdfs:label "puppy" .
""", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    store = str(tmp_path / "store")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["kg", "load", str(path), "--store", store])
    assert code == 0, err.getvalue()[-2000:]
    from kgprobe.ontology.labels import MAX_LABEL_CHARS

    assert f"skipped 1 class: labels over {MAX_LABEL_CHARS:,} characters" in err.getvalue()
    assert "4 classes" in out.getvalue()  # the long-labelled class is left out, not the others
    with KnowledgeGraph(store, read_only=True) as kg:  # the file is stored as it is
        assert any(s == EX + "Long" for s, _, _ in kg.triples())


def test_a_two_megabyte_answer_is_graded_by_its_first_characters():
    taxonomy = Taxonomy({"S": ["sports league"], "L": ["league"], "O": ["organization"]},
                        {"S": ["L"], "L": ["O"]})
    answer = "a sports league in Oregon. " * 80_000
    assert len(answer) > 2_100_000
    g = grade(answer, ["sports league"], taxonomy)
    assert (g.grade, g.term) == ("exact", "S")
    # what follows the first MAX_ANSWER_CHARS characters is not read
    from kgprobe.reasoning.grading import MAX_ANSWER_CHARS

    late = "x " * MAX_ANSWER_CHARS + "sports league"
    assert grade(late, ["sports league"], taxonomy).grade == "unmapped"


def test_a_name_over_a_million_characters_is_no_name():
    """A synonym as long as a file (an altLabel holding a text) is not indexed, and never
    reaches spaCy; the term's other names still fold ("leagues" → league)."""
    taxonomy = Taxonomy({"L": ["league", LONG], "O": ["organization"]}, {"L": ["O"]})
    assert grade("two leagues", ["league"], taxonomy).grade == "exact"
    assert taxonomy.lookup(LONG) == []
    assert grade("word word", ["league"], taxonomy).grade == "unmapped"
