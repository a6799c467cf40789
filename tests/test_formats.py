"""Sources in OWL/XML, functional and Manchester syntax, OBO and gzip; `--format`; misnamed
files get one line naming the syntax they look like (issue 16)."""

from __future__ import annotations

import contextlib
import gzip
import io
import shutil
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.formats import sniff

DATA = Path(__file__).parent / "data"
FORMATS = DATA / "formats"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
ZOO = "http://ex.org/zoo#"
OBO = "http://purl.obolibrary.org/obo/"
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="the OWL API needs Java")


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def load(tmp: Path, *args: str) -> set:
    store = str(tmp / "store")
    code, out, err = cli("kg", "load", *args, "--store", store)
    assert code == 0, err
    with KnowledgeGraph(store, read_only=True) as kg:
        return set(kg.triples())


def refused(tmp: Path, *args: str) -> str:
    code, _, err = cli("kg", "load", *args, "--store", str(tmp / "store"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert not (tmp / "store").exists()
    return err


def test_owl_xml_loads_through_owlready2(tmp_path):
    triples = load(tmp_path, str(FORMATS / "zoo.owx"))
    assert (ZOO + "Dog", SUB, ZOO + "Animal") in triples
    assert (ZOO + "rex", TYPE, ZOO + "Dog") in triples
    assert (ZOO + "Dog", LABEL, '"dog"@en') in triples


def test_obo_loads_through_fastobo(tmp_path):
    triples = load(tmp_path, str(FORMATS / "zoo.obo"))
    assert (OBO + "ZOO_0000002", SUB, OBO + "ZOO_0000001") in triples
    assert any(s == OBO + "ZOO_0000002" and p == LABEL and "dog" in o for s, p, o in triples)


@needs_java
@pytest.mark.parametrize("name", ["zoo.ofn", "zoo.omn"])
def test_functional_and_manchester_load_through_the_owl_api(tmp_path, name):
    triples = load(tmp_path, str(FORMATS / name))
    assert (ZOO + "Dog", SUB, ZOO + "Animal") in triples
    assert (ZOO + "rex", TYPE, ZOO + "Dog") in triples


def test_gzip_is_read_transparently(tmp_path):
    plain = load(tmp_path / "a", str(DATA / "veg_pizza.ttl"))
    gz = tmp_path / "veg_pizza.ttl.gz"
    gz.write_bytes(gzip.compress((DATA / "veg_pizza.ttl").read_bytes()))
    store = str(tmp_path / "b" / "store")
    code, out, _ = cli("kg", "load", str(gz), "--store", store)
    assert code == 0 and "graph 'veg_pizza': 55 triples" in out
    with KnowledgeGraph(store, read_only=True) as kg:
        zipped = set(kg.triples())
    def named(ts):
        return {t for t in ts if not t[0].startswith("_:") and not t[2].startswith("_:")}
    assert named(zipped) == named(plain) and len(zipped) == len(plain)


@pytest.mark.parametrize("source, suffix, looks", [
    (DATA / "veg_pizza.ttl", ".owl", "turtle"),       # Turtle named .owl
    (FORMATS / "zoo.owx", ".ttl", "owlxml"),          # OWL/XML named .ttl
    (FORMATS / "zoo.omn", ".owl", "manchester"),      # Manchester syntax named .owl
    (FORMATS / "zoo.ofn", ".rdf", "functional"),
    (FORMATS / "zoo.obo", ".ttl", "obo"),
])
def test_misnamed_file_names_its_syntax_and_the_fix(tmp_path, source, suffix, looks):
    path = tmp_path / f"onto{suffix}"
    shutil.copy(source, path)
    err = refused(tmp_path, str(path))
    assert f"--format {looks}" in err and suffix in err


def test_format_overrides_the_suffix(tmp_path):
    path = tmp_path / "onto.owl"
    shutil.copy(DATA / "veg_pizza.ttl", path)
    triples = load(tmp_path, str(path), "--format", "turtle")
    assert ("http://ex.org/pizza#Margherita", SUB, "http://ex.org/pizza#Pizza") in triples


def test_bad_inputs_are_one_line(tmp_path):
    (tmp_path / "bad.obo").write_text("[Term]\nid: X:1\n\n[Term]\nid: \n", encoding="utf-8")
    assert "bad.obo: line 5: malformed OBO id line" in refused(tmp_path, str(tmp_path / "bad.obo"))
    (tmp_path / "bad.owx").write_text('<?xml version="1.0"?>\n<Ontology xmlns="http://www.w3.org'
                                      '/2002/07/owl#"><SubClassOf><Class IRI=', encoding="utf-8")
    assert "malformed OWL/XML" in refused(tmp_path, str(tmp_path / "bad.owx"))
    (tmp_path / "z.ttl.gz").write_bytes(b"not gzip")
    assert "gzip" in refused(tmp_path, str(tmp_path / "z.ttl.gz"))
    (tmp_path / "bad.ttl").write_text("@prefix ex: <http://ex.org/> .\nex:a ex:b", encoding="utf-8")
    assert "line 2" in refused(tmp_path, str(tmp_path / "bad.ttl"))
    err = refused(tmp_path, str(tmp_path / "bad.ttl"), str(tmp_path / "z.ttl.gz"), "--format", "turtle")
    assert "one file" in err


def test_sniff():
    assert sniff(b"@prefix ex: <http://ex.org/> .") == "turtle"
    assert sniff(b"# comment\n<http://a> <http://b> <http://c> .\n") == "ntriples"
    assert sniff(b'<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/'
                 b'22-rdf-syntax-ns#">') == "rdfxml"
    assert sniff((FORMATS / "zoo.owx").read_bytes()) == "owlxml"
    assert sniff(b"Prefix(:=<http://x/>)") == "functional"
    assert sniff(b"Prefix: : <http://x/>") == "manchester"
    assert sniff(b"format-version: 1.2\n") == "obo"
    assert sniff(b"\x00\x01garbage") is None
