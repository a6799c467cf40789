"""`kgprobe reason --owl`: HermiT's named subsumptions and types join the inferred graph with
provenance owl:hermit, and generation uses them (issue 16)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.reasoning import owl
from kgprobe.reasoning.owl import (
    PROVENANCE,
    hermit_error,
    parse_hermit,
    without_datatype,
)

DATA = Path(__file__).parent / "data"
EX = "http://ex.org/pizza#"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
OWL = "http://www.w3.org/2002/07/owl#"
OWL_EQ = OWL + "equivalentClass"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
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


# ------------------------------------------------------- failing well (issue 33 #7)

DT = "http://ex.org/dt#"
#: A facet restriction on a user's rdfs:Datatype, which HermiT refuses outright (its
#: --ignoreUnsupportedDatatypes does not cover facets), beside a subsumption only OWL gives.
CUSTOM_DATATYPE = f"""@prefix ex: <{DT}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Score a rdfs:Datatype .
ex:score a owl:DatatypeProperty ; rdfs:range ex:Score .
ex:HighScorer a owl:Class ; rdfs:label "high scorer" ;
  owl:equivalentClass [ a owl:Restriction ; owl:onProperty ex:score ;
    owl:someValuesFrom [ a rdfs:Datatype ; owl:onDatatype ex:Score ;
                         owl:withRestrictions ( [ xsd:minInclusive 90 ] ) ] ] .
ex:Player a owl:Class ; rdfs:label "player" ; rdfs:subClassOf ex:Athlete .
ex:Athlete a owl:Class ; rdfs:label "athlete" ; owl:equivalentClass ex:Sportsperson .
ex:Sportsperson a owl:Class ; rdfs:label "sportsperson" .
"""

#: The stack trace HermiT prints for it (its message spans five lines).
UNSUPPORTED_TRACE = """Exception in thread "main" org.semanticweb.HermiT.datatypes.\
UnsupportedDatatypeException: HermiT supports all and only the datatypes of the OWL 2 datatype \
map, see 
http://www.w3.org/TR/owl2-syntax/#Datatype_Maps. 
The datatype 'http://ex.org/dt#Score' is not part of the OWL 2 datatype map and 
no custom datatype definition is given; 
therefore, HermiT cannot handle this datatype.
\tat org.semanticweb.HermiT.datatypes.DatatypeRegistry.getDatatypeHandlerFor(Unknown Source)
\tat org.semanticweb.HermiT.cli.CommandLine.main(CommandLine.java:830)
""".replace("\\\n", "")


def test_hermit_errors_are_one_whole_line():
    """The message used to be cut at "see)": every line of the Java message is kept."""
    err = str(hermit_error("Processing file:///x\nClassifying...\n" + UNSUPPORTED_TRACE, 1))
    assert "\n" not in err
    assert "UnsupportedDatatypeException" in err and err.count("HermiT cannot handle") == 1
    assert "Datatype_Maps. The datatype 'http://ex.org/dt#Score'" in err
    assert "without --owl" in err and "Processing" not in err
    assert "inconsistent" in str(hermit_error(
        'Exception in thread "main" org.semanticweb.owlapi.reasoner.'
        "InconsistentOntologyException: Inconsistent ontology\n", 1))


def test_without_datatype_leaves_out_whole_axioms():
    restriction = {("http://ex.org/C", OWL_EQ, "_:r"), ("_:r", OWL + "someValuesFrom", "_:d"),
                   ("_:d", OWL + "onDatatype", DT + "Score"), ("_:d", OWL + "withRestrictions", "_:l"),
                   ("_:l", RDF + "first", "_:f"), ("_:f", XSD + "minInclusive", '"90"^^<' + XSD
                                                   + 'integer>')}
    other = {("http://ex.org/C", SUB, "http://ex.org/D"), ("_:x", OWL + "onDatatype", XSD + "int")}
    literal = ("http://ex.org/i", DT + "score", f'"95"^^<{DT}Score>')
    kept, dropped = without_datatype(restriction | other | {literal}, DT + "Score")
    assert kept == other and dropped == len(restriction) + 1


@needs_java
def test_custom_datatype_is_set_aside_with_a_warning(tmp_path):
    """HermiT's UnsupportedDatatypeException: exit 0, a warning naming the datatype, and the
    subsumptions that do not depend on it still derived."""
    (tmp_path / "scores.ttl").write_text(CUSTOM_DATATYPE, encoding="utf-8")
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(tmp_path / "scores.ttl"), "--store", store)[0] == 0
    code, _, err = cli("reason", "--owl", "--store", store)
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if ln.strip()]
    assert len(warnings) == 1 and f"<{DT}Score>" in warnings[0], err
    assert warnings[0].endswith("(what follows from them is missing)")  # whole, not cut
    with KnowledgeGraph(store, read_only=True) as kg:
        assert (DT + "Athlete", SUB, DT + "Sportsperson") in kg.provenance(PROVENANCE)


def slow_ontology(n: int = 20000) -> str:
    """`A ⊑ ≥n p.B`: HermiT builds n pairwise distinct successors while it classifies, a
    quadratic amount of work (n = 3000 took 15 s on a laptop; 20000, minutes)."""
    return (f"@prefix ex: <{EX}> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
            "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
            "ex:A a owl:Class ; rdfs:label \"a\" ; rdfs:subClassOf ex:Top, [ a owl:Restriction ; "
            "owl:onProperty ex:p ; "
            f"owl:minQualifiedCardinality \"{n}\"^^xsd:nonNegativeInteger ; owl:onClass ex:B ] .\n"
            "ex:B a owl:Class ; rdfs:label \"b\" .\nex:Top a owl:Class ; rdfs:label \"top\" .\n"
            "ex:p a owl:ObjectProperty .\n")


@needs_java
def test_timeout_stops_hermit_and_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """`reason --owl --timeout 3` on an ontology HermiT needs minutes for: exit 2 within the
    limit and a few seconds, one error line, progress lines before it, the Java process gone
    and the store (its triples, inferences and their freshness) unchanged."""
    path = tmp_path / "slow.ttl"
    path.write_text(slow_ontology(), encoding="utf-8")
    store = str(tmp_path / "store")
    assert cli("kg", "load", str(path), "--store", store)[0] == 0
    assert cli("reason", "--store", store)[0] == 0
    with KnowledgeGraph(store, read_only=True) as kg:
        before = (sorted(kg.triples()), kg.fingerprint(), kg.inferred_state(), kg.reasoned_with())
    children: list[subprocess.Popen] = []
    popen = subprocess.Popen

    def spy(*args, **kwargs):
        children.append(popen(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(owl.subprocess, "Popen", spy)
    monkeypatch.setattr(owl, "PROGRESS_EVERY_S", 0.5)
    start = time.monotonic()
    code, _, err = cli("reason", "--owl", "--timeout", "3", "--store", store)
    took = time.monotonic() - start
    assert code == 2 and took < 3 + 15, (code, took, err)  # generous: a loaded machine
    errors = [ln for ln in err.splitlines() if ln.startswith("kgprobe: error:")]
    assert len(errors) == 1 and "--timeout 3 s" in errors[0] and "nothing was stored" in errors[0]
    assert any(ln.startswith("kgprobe: HermiT: ") and "of --timeout 3 s" in ln
               for ln in err.splitlines()), err
    assert len(children) == 1 and children[0].returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(children[0].pid, 0)  # reaped: no Java left behind
    with KnowledgeGraph(store, read_only=True) as kg:
        after = (sorted(kg.triples()), kg.fingerprint(), kg.inferred_state(), kg.reasoned_with())
    assert after == before

