"""Issue 25: probes from the ontologies people publish (slices in tests/data/ontologies/).

Each slice is cut from a published file (`make_slices.py`, sources and licences in
`LICENSES.md`) and goes through what a user runs: `kg load --reason`, `generate memorizing`,
`generate reasoning` with and without pseudowords. No record or item may involve the
ontology header, an annotation property, a deprecated term, an OWL/RDF/RDFS/SKOS term as
answer, an IRI or underscore in its text, or an answer its other premise already gives; and
every command counts what it skipped the same way.

The defect checks read the published triples themselves (what is declared an annotation
property, marked deprecated, typed owl:Ontology), not the model under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.exclusions import load_exclusions
from kgprobe.ontology.from_triples import BuildOptions
from kgprobe.ontology.loaders import load_rdf, parse_rdf
from kgprobe.ontology.model import OWL, RDF, RDF_TYPE, RDFS, SKOS, parse_literal

DATA = Path(__file__).parent / "data" / "ontologies"
FIXTURES = sorted(p.name for p in DATA.glob("*.ttl"))
OBO_OBSOLETE = "http://www.geneontology.org/formats/oboInOwl#is_obsolete"
#: schema.org marks a retired term by naming its replacement, not by owl:deprecated
SUPERSEDED = ("http://schema.org/supersededBy", "https://schema.org/supersededBy")
#: ... and FOAF by its vocabulary status
TERM_STATUS = "http://www.w3.org/2003/06/sw-vocab-status/ns#term_status"
LABELS = (RDFS + "label", SKOS + "prefLabel")
META = (OWL, RDF, RDFS, SKOS)
#: SKOS thesauri (tests/test_skos_languages.py): a concept scheme, no owl:Ontology header
THESAURI = {"unesco-thesaurus-slice.ttl"}
#: published with no owl:Ontology header at all: the thesauri and schema.org's RDFS schema
NO_HEADER = THESAURI | {"schemaorg.ttl"}


class Published:
    """What the published triples say about their own terms."""

    def __init__(self, path: Path):
        triples = parse_rdf(path)
        self.header = {s for s, p, o in triples if p == RDF_TYPE and o == OWL + "Ontology"}
        table = load_exclusions().iris["annotation"]
        prefixes = load_exclusions().prefixes["annotation"]
        declared = {s for s, p, o in triples
                    if p == RDF_TYPE and o == OWL + "AnnotationProperty"}
        # punned: an object property too is a relation (PROV's wasRevisionOf); a datatype
        # property stays an annotation (QUDT's dcterms:description)
        declared -= {s for s, p, o in triples if p == RDF_TYPE and o == OWL + "ObjectProperty"}
        used = {p for _, p, _ in triples}
        self.annotation = declared | {p for p in used if p in table or p.startswith(prefixes)}
        self.deprecated = {s for s, p, o in triples if p in (OWL + "deprecated", OBO_OBSOLETE)
                           and o.startswith('"true"')}
        self.deprecated |= {s for s, p, o in triples if p in SUPERSEDED or (
            p == TERM_STATUS and o.startswith('"archaic"'))}
        self.deprecated |= {s for s, p, o in triples if p in LABELS and o.startswith('"')
                            and parse_literal(o)[0].lower().startswith("obsolete")}

    def defects(self, iris: list[str], texts: list[str], answer_iris: list[str]) -> list[str]:
        out = []
        if self.header & set(iris):
            out.append("ontology header")
        if self.annotation & set(iris):
            out.append("annotation property")
        if self.deprecated & set(iris):
            out.append("deprecated term")
        if any(a.startswith(META) for a in answer_iris):
            out.append("meta-vocabulary answer")
        if any("://" in t or "_" in t for t in texts):
            out.append("IRI or underscore")
        return out


def record_defects(pub: Published, rec: dict) -> list[str]:
    out = pub.defects([rec["subject_iri"], *rec["answer_iris"]],
                      [rec["subject"], *rec["answers"]], rec["answer_iris"])
    if rec["task"] in ("subClassOf", "subPropertyOf") and \
            rec["subject"].lower() in {a.lower() for a in rec["answers"]}:
        out.append("answer in its own premise")  # DCAT's "first implies first"
    return out


def item_defects(pub: Published, item: dict) -> list[str]:
    triples = [p["triple"] for p in item["premises"]] + [item["conclusion"]["triple"]]
    iris = [t for triple in triples for t in triple] + [v for v in item["slots"].values() if v]
    texts = [p["text"] for p in item["premises"]] + item["hypotheses"] + item["answers"]
    conclusion = item["conclusion"]["triple"]
    answer_iri = conclusion[1] if item["rule"] == "rdfs7" else conclusion[2]
    out = pub.defects(iris, texts, [answer_iri])
    given = {p["answer"].lower() for p in item["premises"] if p["role"] == "P2"}
    if any(a.lower() in given for a in item["answers"]):
        out.append("answer in its own premise")
    return out


def generate(path: Path, out: Path, capsys) -> dict[str, str]:
    """What a user runs; returns each command's stderr."""
    store = str(out / "store")
    err = {}
    # UNESCO is a topical thesaurus, refused under --skos auto (tests/test_skos_topical.py):
    # its probes are checked as a user who forces the reading gets them
    skos = ["--skos", "classes"] if path.name in THESAURI else []
    for name, args in (
            ("load", ["kg", "load", str(path), "--store", store, "--reason"]),
            ("mem", ["generate", "memorizing", "--store", store, "--out", str(out / "mem"),
                     "--split-sizes", "0.2,0.2"]),
            ("rsn", ["generate", "reasoning", "--store", store, "--out", str(out / "rsn")]),
            ("np", ["generate", "reasoning", "--store", store, "--out", str(out / "np"),
                    "--no-pseudowords"])):
        assert main(args + skos) == 0, name
        err[name] = capsys.readouterr().err
    return err


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_no_defective_probe(fixture, tmp_path, capsys):
    path = DATA / fixture
    pub = Published(path)
    err = generate(path, tmp_path, capsys)
    records = rows(tmp_path / "mem")
    items = rows(tmp_path / "rsn") + rows(tmp_path / "np")
    assert records, "no memorizing record at all"
    bad = [(r["id"], d) for r in records if (d := record_defects(pub, r))]
    bad += [(i["id"], d) for i in items if (d := item_defects(pub, i))]
    assert not bad, bad[:10]
    # one count of what was skipped: kg load, both generate commands and summary.json agree
    skipped = {name: sorted(line[line.index("skipped "):] for line in text.splitlines()
                            if "skipped " in line and "held back" not in line)
               for name, text in err.items()}
    assert skipped["load"] == skipped["mem"] == skipped["rsn"] == skipped["np"]
    assert skipped["load"] or fixture in NO_HEADER  # every OWL slice has a header to skip
    options = BuildOptions(skos="classes") if fixture in THESAURI else None  # as generated
    onto = load_rdf(path, options=options).ontology
    # no annotation property is a property candidate (QUDT's dcterms:description)
    assert not pub.annotation & set(onto.properties), pub.annotation & set(onto.properties)
    terms = onto.excluded_counts
    for folder in ("mem", "rsn", "np"):
        summary = json.loads((tmp_path / folder / "summary.json").read_text())
        assert summary["skipped"]["terms"] == terms


def test_the_published_defects_are_in_the_slices():
    """The slices still hold what went wrong, so the test above tests something."""
    found = {name: Published(DATA / name) for name in FIXTURES if name not in THESAURI}
    assert all(p.header for name, p in found.items() if name not in NO_HEADER)
    assert sum(bool(p.annotation) for p in found.values()) >= 6
    assert found["pato.ttl"].deprecated and found["iao.ttl"].deprecated
    assert found["ro.ttl"].deprecated and found["schemaorg.ttl"].deprecated  # supersededBy
    assert found["foaf.ttl"].deprecated  # vs:term_status "archaic"
    # SKOS vocabulary as an answer: QUDT's "organized under" is a subproperty of skos:broader
    assert any(p == RDFS + "subPropertyOf" and o.startswith(SKOS)
               for _, p, o in parse_rdf(DATA / "qudt-schema.ttl"))


def test_keep_flags_bring_them_back():
    onto = load_rdf(DATA / "iao.ttl").ontology
    assert onto.excluded_counts["deprecated"] and onto.excluded_counts["annotation"]
    from kgprobe.ontology.from_triples import BuildOptions

    kept = load_rdf(DATA / "iao.ttl", options=BuildOptions(
        keep_annotations=True, keep_deprecated=True)).ontology
    assert "deprecated" not in kept.excluded_counts
    assert "annotation" not in kept.excluded_counts
    assert len(kept.properties) > len(onto.properties)
    assert any(c.label.startswith("obsolete") for c in kept.classes.values())
