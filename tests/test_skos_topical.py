"""Issue 33: thesauri read honestly, small ontologies split with a test split, excluded
terms listed.

* `--skos auto` maps `skos:broader` to `rdfs:subClassOf` only where the data shows a
  taxonomy (ISO 25964 generic relations, or labels that specialise their broader term's head
  noun); `generate` refuses a topical thesaurus in one line naming `--skos classes`;
* `reason` stores the same reading, so `kg query` sees the subclass triples `generate
  reasoning` derives;
* a relation with few records keeps a test split; an empty memorization cell is NaN, "no
  items" in the report;
* `generate` lists every excluded term in `excluded.tsv`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.ontology.from_triples import BuildOptions, build_ontology
from kgprobe.ontology.model import RDF_TYPE, RDFS_LABEL, SKOS, literal
from kgprobe.ontology.skos import ISO_THES, SKOS_CONCEPT, skos_mapping
from kgprobe.reasoning.memorizing import split_sizes

EX = "http://example.org/t/"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
#: A topical thesaurus (the Unified Astronomy Thesaurus's way): narrower terms are topics
#: studied under their broader term, not kinds of it.
TOPICAL = [("Space station", "Observational astronomy"), ("Telescope", "Observational astronomy"),
           ("Greenhouse gas", "Solar system astronomy"), ("Comet", "Solar system astronomy"),
           ("Observational astronomy", "Astronomy"), ("Solar system astronomy", "Astronomy"),
           ("Radio telescope", "Telescope")]
#: A taxonomic one: narrower terms name kinds of their broader term.
TAXONOMIC = [("Public libraries", "Libraries"), ("School libraries", "Libraries"),
             ("Rural libraries", "Public libraries"), ("Mobile libraries", "Public libraries"),
             ("Libraries", "Institutions"), ("Research institutions", "Institutions")]


def thesaurus(edges, predicate=SKOS + "broader") -> str:
    """Turtle for a concept scheme with English prefLabels and the given broader edges."""
    labels = sorted({x for edge in edges for x in edge})
    iri = {label: f"<{EX}{label.replace(' ', '_')}>" for label in labels}
    lines = [f"{iri[x]} a <{SKOS_CONCEPT}> ; <{SKOS}prefLabel> \"{x}\"@en ." for x in labels]
    lines += [f"{iri[a]} <{predicate}> {iri[b]} ." for a, b in edges]
    return "\n".join(lines) + "\n"


def triples(edges, predicate=SKOS + "broader"):
    out = []
    for a, b in edges:
        for x in (a, b):
            out += [(EX + x, RDF_TYPE, SKOS_CONCEPT), (EX + x, SKOS + "prefLabel", literal(x, "en"))]
        out.append((EX + a, predicate, EX + b))
    return out


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ taxonomic or topical


def test_auto_tells_a_topical_thesaurus_from_a_taxonomy_by_its_labels():
    topical = skos_mapping(triples(TOPICAL))
    assert topical.topical and not topical.triples
    assert topical.summary()["evidence"] == "labels" and not topical.summary()["taxonomic"]
    taxonomic = skos_mapping(triples(TAXONOMIC))
    assert taxonomic.mode == "classes" and len(taxonomic.triples) == len(TAXONOMIC)
    assert taxonomic.summary()["taxonomic"] and taxonomic.summary()["head_noun_share"] >= 2 / 3
    forced = skos_mapping(triples(TOPICAL), "classes")  # --skos classes reads it anyway
    assert len(forced.triples) == len(TOPICAL) and forced.kind is None


def test_iso_thes_generic_relations_decide_and_only_they_are_read():
    # topical labels, but the data says which edges are generic: those, and only those
    data = triples(TOPICAL) + [(EX + "Radio telescope", ISO_THES + "broaderGeneric", EX + "Telescope"),
                               (EX + "Telescope", ISO_THES + "narrowerGeneric", EX + "Reflector")]
    mapping = skos_mapping(data)
    assert mapping.mode == "classes" and mapping.summary()["evidence"] == "iso-thes"
    assert {(s, o) for s, _, o in mapping.triples} == {
        (EX + "Radio telescope", EX + "Telescope"), (EX + "Reflector", EX + "Telescope")}
    partitive = triples(TAXONOMIC) + [(EX + "Libraries", ISO_THES + "broaderPartitive", EX + "Institutions")]
    assert skos_mapping(partitive).topical  # parts and instances, no kinds: no taxonomy


def test_generate_refuses_a_topical_thesaurus_in_one_line(tmp_path, capsys):
    path = write(tmp_path, "uat.ttl", thesaurus(TOPICAL))
    store = tmp_path / "store"
    assert main(["kg", "load", str(path), "--store", str(store)]) == 0
    assert "read as topical" in capsys.readouterr().err
    for command in ("memorizing", "reasoning"):
        out = tmp_path / command
        assert main(["generate", command, "--store", str(store), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "topical SKOS thesaurus" in err[0] and "--skos classes" in err[0]
        assert not out.exists()
    # forced, the reading is the user's: "X is a Y" records, and summary.json says how it was read
    out = tmp_path / "forced"
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out),
                 "--skos", "classes"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skos"]["mode"] == "classes" and summary["skos"]["subclass_edges"] == len(TOPICAL)
    subjects = {json.loads(line)["subject"] for line in (out / "subClassOf.jsonl").open()}
    assert "space station" in {s.lower() for s in subjects}


# ------------------------------------------------------------- the store agrees with generate


def query_count(store: Path, sparql: str, capsys) -> int:
    capsys.readouterr()
    assert main(["kg", "query", sparql, "--store", str(store), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    return int(rows[1][0])


INFERRED_SUBCLASS = ("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:kgprobe:inferred> "
                     "{ ?a <%s> ?b } }" % SUB)


def test_reason_stores_what_generate_reasons_with(tmp_path, capsys):
    path = write(tmp_path, "libraries.ttl", thesaurus(TAXONOMIC))
    store, out = tmp_path / "store", tmp_path / "items"
    assert main(["kg", "load", str(path), "--store", str(store)]) == 0
    assert main(["reason", "--store", str(store)]) == 0
    assert main(["generate", "reasoning", "--store", str(store), "--out", str(out)]) == 0
    skos = json.loads((out / "summary.json").read_text())["skos"]
    assert skos["mode"] == "classes" and skos["derived_subclass"] > 0
    # the mapped edges and the subclass triples derived from them, both in the inferred graph
    assert query_count(store, INFERRED_SUBCLASS, capsys) == (
        skos["subclass_edges"] + skos["derived_subclass"])
    # reasoned with another reading, the store is named in a warning by generate
    assert main(["reason", "--store", str(store), "--skos", "off"]) == 0
    assert query_count(store, INFERRED_SUBCLASS, capsys) == 0
    assert main(["generate", "reasoning", "--store", str(store), "--out", str(tmp_path / "o2")]) == 0
    assert "reasoned with --skos off" in capsys.readouterr().err
    # `--reason` reruns the reading the store was last reasoned with
    assert main(["reason", "--store", str(store)]) == 0
    assert main(["kg", "load", str(write(tmp_path, "more.ttl", thesaurus([("Music libraries", "Libraries")]))),
                 "--store", str(store)]) == 0
    assert main(["generate", "reasoning", "--store", str(store), "--out", str(tmp_path / "o3"),
                 "--reason"]) == 0
    assert query_count(store, INFERRED_SUBCLASS, capsys) > skos["subclass_edges"] + skos["derived_subclass"]


def test_kg_load_reason_reads_the_skos_mode_it_was_given(tmp_path, capsys):
    """`kg load --skos classes --reason` stores what `generate --skos classes` reads (a
    materials scheme the labels call topical: "Frozen water" under "Natural solid material")."""
    path = write(tmp_path, "materials.ttl", thesaurus(
        [("Natural solid material", "Material"), ("Frozen water", "Natural solid material"),
         ("Rock", "Natural solid material"), ("Granite", "Rock")]))
    store = tmp_path / "store"
    assert main(["kg", "load", str(path), "--store", str(store), "--reason",
                 "--skos", "classes"]) == 0
    assert query_count(store, INFERRED_SUBCLASS, capsys) > 0
    assert main(["kg", "load", str(path), "--store", str(tmp_path / "auto"), "--reason"]) == 0
    assert query_count(tmp_path / "auto", INFERRED_SUBCLASS, capsys) == 0


def test_a_topical_store_reasons_to_nothing_and_generate_refuses(tmp_path, capsys):
    path = write(tmp_path, "uat.ttl", thesaurus(TOPICAL))
    store = tmp_path / "store"
    assert main(["kg", "load", str(path), "--store", str(store)]) == 0
    assert main(["reason", "--store", str(store)]) == 0
    assert query_count(store, INFERRED_SUBCLASS, capsys) == 0
    assert main(["reason", "--store", str(store), "--skos", "classes"]) == 0
    assert query_count(store, INFERRED_SUBCLASS, capsys) >= len(TOPICAL)


# ------------------------------------------------------------------------ small ontologies


def small_ontology(n: int = 15) -> str:
    """`n` classes in a tree (class i under class (i - 1) // 2), each labelled."""
    owl = "http://www.w3.org/2002/07/owl#Class"
    words = ["animal", "mammal", "bird", "dog", "cat", "eagle", "owl", "terrier", "poodle",
             "lion", "tiger", "hawk", "falcon", "sparrow", "robin", "crow", "wolf"]
    lines = []
    for i in range(n):
        lines.append(f"<{EX}c{i}> a <{owl}> ; <{RDFS_LABEL}> \"{words[i]}\"@en .")
        if i:
            lines.append(f"<{EX}c{i}> <{SUB}> <{EX}c{(i - 1) // 2}> .")
    return "\n".join(lines) + "\n"


def test_split_sizes_scale_down_only_for_small_relations():
    assert split_sizes(14, 10, 10) == (3, 3)  # 8 test records, not none
    assert split_sizes(39, 10, 10) == (9, 9)
    assert split_sizes(40, 10, 10) == (10, 10)  # the bundled ontology's sizes: as asked
    assert split_sizes(5000, 10, 10) == (10, 10)
    assert split_sizes(14, 0.1, 0.1) == (1, 1)  # fractions leave a test split already


def test_a_fifteen_class_ontology_keeps_a_test_split(tmp_path, capsys):
    path = write(tmp_path, "small.ttl", small_ontology())
    out = tmp_path / "mem"
    assert main(["generate", "memorizing", "--ontology", str(path), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    sco = summary["tasks"]["subClassOf"]
    assert sco["test"] >= sum(sco.values()) / 2 and sco["train"] == sco["dev"] > 0
    assert summary["split_scaled"]["sizes"]["subClassOf"] == [sco["train"], sco["dev"]]
    assert "scaled down" in capsys.readouterr().err


def test_empty_memorization_cells_are_nan_and_say_no_items():
    from kgprobe.studies.memorization.study import format_table, score_unit

    metrics, preds = score_unit(None, [], [], ["a", "b"], 8)
    assert preds == [] and metrics["n"] == 0
    assert all(math.isnan(metrics[k]) for k in ("R@1", "R@5", "R@10", "MRR", "MRRa"))
    table = format_table([{"task": "subClassOf", "template": 0, "n": "0", "R@1": "nan",
                           "R@5": "nan", "R@10": "nan", "MRR": "nan", "MRRa": "nan"},
                          {"task": "type", "template": 0, "n": "3", "R@1": "0.5000",
                           "R@5": "1.0000", "R@10": "1.0000", "MRR": "0.7500", "MRRa": "0.7500"}])
    empty, full = table.splitlines()[1:]
    assert empty.count("no items") == 5 and "0.0" not in empty
    assert "50.0" in full and "no items" not in full


# --------------------------------------------------------------------- excluded terms listed


def test_excluded_terms_are_listed_with_label_and_reason(tmp_path, capsys):
    owl = "http://www.w3.org/2002/07/owl#Class"
    text = "\n".join([
        f"<{EX}Liquid> a <{owl}> ; <{RDFS_LABEL}> \"liquid\"@en .",
        f"<{EX}Viscous> a <{owl}> ; <{RDFS_LABEL}> \"viscous\"@en ; <{SUB}> <{EX}Liquid> .",
        f"<{EX}Honey> a <{owl}> ; <{RDFS_LABEL}> \"honey\"@en ; <{SUB}> <{EX}Viscous> .",
        f"<{EX}X_0001> a <{owl}> ; <{SUB}> <{EX}Liquid> .",
        f"<{EX}Old> a <{owl}> ; <{RDFS_LABEL}> \"old liquid\"@en ; "
        "<http://www.w3.org/2002/07/owl#deprecated> true ."]) + "\n"
    path = write(tmp_path, "liquids.ttl", text)
    store, out = tmp_path / "store", tmp_path / "mem"
    assert main(["kg", "load", str(path), "--store", str(store)]) == 0
    assert "excluded.tsv" in capsys.readouterr().err  # kg load says where the list is
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "excluded.tsv").open(encoding="utf-8"), delimiter="\t"))
    by_iri = {r["iri"]: r for r in rows}
    assert by_iri[EX + "Viscous"]["label"] == "viscous"
    assert by_iri[EX + "Viscous"]["reason"] == "adjective" and by_iri[EX + "Viscous"]["kind"] == "class"
    assert by_iri[EX + "Old"]["reason"] == "deprecated"
    assert by_iri[EX + "X_0001"]["reason"] == "id-like"
    assert all(r["why"] for r in rows) and list(rows[0]) == ["iri", "kind", "label", "reason", "why"]
    counts = json.loads((out / "summary.json").read_text())["skipped"]["terms"]
    assert len(rows) == sum(n for kinds in counts.values() for n in kinds.values())


@pytest.mark.parametrize("edges", [TOPICAL, TAXONOMIC])
def test_build_ontology_warns_how_the_thesaurus_was_read(edges):
    onto = build_ontology("t", triples(edges), BuildOptions())
    line = next(w for w in onto.warnings if w.startswith("SKOS thesaurus"))
    assert ("topical" in line) == (edges is TOPICAL)
    assert bool(onto.classes) == (edges is TAXONOMIC)
