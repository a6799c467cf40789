"""`generate`'s prompts.tsv is what the studies ask, and `kgprobe review` reads a sample of it
back as a defect rate and as exclusions the next `generate` applies.

One small ontology (dogs, cats, birds and their owners), generated once per module: the
sentences are compared with each study's own dry run, record by record, and a review round
trip (sample → verdicts → read → generate again) is driven as a researcher would.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from kgprobe.cli import main
from kgprobe.studies.probe_prompts import PROMPTS_FILE, read_probe_prompts
from kgprobe.studies.review import allocate, sample_prompts, wilson

EX = "http://example.org/pets#"
TTL = f"""@prefix ex: <{EX}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Animal a owl:Class ; rdfs:label "animal" .
ex:Mammal a owl:Class ; rdfs:label "mammal" ; rdfs:subClassOf ex:Animal .
ex:Dog a owl:Class ; rdfs:label "dog" ; rdfs:subClassOf ex:Mammal .
ex:Cat a owl:Class ; rdfs:label "cat" ; rdfs:subClassOf ex:Mammal .
ex:Bird a owl:Class ; rdfs:label "bird" ; rdfs:subClassOf ex:Animal .
ex:Person a owl:Class ; rdfs:label "person" .
ex:hasOwner a owl:ObjectProperty ; rdfs:label "has owner" ; rdfs:domain ex:Animal ;
    rdfs:range ex:Person .
ex:rex a ex:Dog ; rdfs:label "Rex" ; ex:hasOwner ex:alice .
ex:fido a ex:Dog ; rdfs:label "Fido" ; ex:hasOwner ex:bob .
ex:tom a ex:Cat ; rdfs:label "Tom" .
ex:tweety a ex:Bird ; rdfs:label "Tweety" .
ex:alice a ex:Person ; rdfs:label "Alice" .
ex:bob a ex:Person ; rdfs:label "Bob" .
"""


def run(*argv: str) -> int:
    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("review")
    onto = root / "pets.ttl"
    onto.write_text(TTL)
    assert run("generate", "memorizing", "--ontology", onto, "--out", root / "m",
               "--split-sizes", "1,1") == 0
    assert run("generate", "reasoning", "--ontology", onto, "--out", root / "r") == 0
    return {"root": root, "onto": onto, "m": root / "m", "r": root / "r"}


def dry_lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "prompts.jsonl").read_text().splitlines()]


def test_memorizing_sentences_are_the_memorization_dry_runs(world, tmp_path):
    prompts = {p.id: p for p in read_probe_prompts(world["m"])}
    assert {p.split for p in prompts.values()} == {"train", "dev", "test"}  # every split
    compared = 0
    for split in ("train", "dev", "test"):
        out = tmp_path / split
        assert run("study", "memorization", "--dry-run", "--probes", world["m"], "--template",
                   "0", "--split", split, "--limit", "0", "--out", out) == 0
        for line in dry_lines(out):
            mine = prompts[line["extra"]["id"]]
            assert (mine.prompt, list(mine.golds), mine.split) == (line["text"], line["golds"], split)
            compared += 1
    assert compared == len(prompts) > 10  # every record, each once


def test_reasoning_sentences_are_the_premise_ablation_dry_runs_both_written(world, tmp_path):
    prompts = read_probe_prompts(world["r"])
    assert {p.kind for p in prompts} >= {"rdfs2", "rdfs3", "rdfs9"}
    assert run("study", "premise-ablation", "--dry-run", "--ontology", world["onto"],
               "--limit", "0", "--out", tmp_path / "pa") == 0
    both = {(line["extra"]["item"], line["template"]): line for line in dry_lines(tmp_path / "pa")
            if line["extra"].get("kind") == "reasoning" and line["p1"] and line["p2"]}
    for p in prompts:
        line = both[(p.id, p.template)]
        assert p.prompt == line["text"] and list(p.golds) == line["golds"]
        assert p.prompt.startswith(line["p1"] + " " + line["p2"])  # both premises written


def test_allocation_is_proportional_with_one_per_kind_and_sums_to_n():
    sizes = {"type": 900, "subClassOf": 90, "domain": 9, "range": 1}
    alloc = allocate(sizes, 60)
    assert sum(alloc.values()) == 60 and set(alloc) == set(sizes)
    assert alloc["range"] == 1 and alloc["type"] > alloc["subClassOf"] > alloc["domain"] >= 1
    assert abs(alloc["type"] - 60 * 900 / 1000) <= 2
    assert allocate(sizes, 5000) == sizes  # more than there are: all of them
    assert sum(allocate(sizes, 2).values()) == 2  # fewer than kinds: still n


def test_the_sample_is_seeded(world):
    prompts = read_probe_prompts(world["m"])
    first = [p.id for p in sample_prompts(prompts, 6, seed=0)]
    assert first == [p.id for p in sample_prompts(prompts, 6, seed=0)]
    assert len(first) == len(set(first)) == 6 < len(prompts)
    assert any(first != [p.id for p in sample_prompts(prompts, 6, seed=s)] for s in (1, 2, 3))


def read_sheet(path: Path) -> list[list[str]]:
    return list(csv.reader(path.open(encoding="utf-8"), delimiter="\t"))


def write_sheet(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter="\t", lineterminator="\n").writerows(rows)


def test_a_review_round_trip_rates_the_sheet_and_the_next_generate_leaves_the_term_out(
        world, tmp_path, capsys):
    import shutil

    probes = tmp_path / "m"
    shutil.copytree(world["m"], probes)
    sheet = tmp_path / "sheet.tsv"
    assert run("review", "sample", probes, "--size", "12", "--seed", "0", "--out", sheet) == 0
    rows = read_sheet(sheet)
    header = rows[0]
    assert header == ["id", "kind", "prompt", "golds", "codes", "exclude_term", "note"]
    assert all(r[4:] == ["", "", ""] for r in rows[1:])
    # the reviewer: TP records about Rex are false (G and F on them), one prompt's case is off,
    # and Rex is marked to exclude, by its label as the prompt writes it
    rex = [r for r in rows[1:] if r[2].startswith("Rex ")]
    assert rex, "the seeded sample holds a record about Rex"
    rex[0][4:] = ["gf", "Rex", "not a dog"]
    other = next(r for r in rows[1:] if r is not rex[0])
    other[4] = "C"
    write_sheet(sheet, rows)
    assert run("review", "read", sheet, "--probes", probes) == 0
    review = json.loads((probes / "summary.json").read_text())["review"]
    rates = review["rates"]
    n = len(rows) - 1
    assert rates["any"]["n"] == n == review["prompts"] and rates["any"]["defects"] == 2
    assert (rates["G"]["defects"], rates["F"]["defects"], rates["C"]["defects"],
            rates["D"]["defects"]) == (1, 1, 1, 0)
    lo, hi = rates["any"]["ci95"]
    assert lo < 2 / n < hi and (lo, hi) == pytest.approx(wilson(2, n))
    assert sum(v["n"] for v in rates["by_kind"].values()) == n
    assert review["excluded"] == [EX + "rex"]
    exclusions = probes / "exclusions.toml"
    assert "not a dog" in exclusions.read_text()
    # generating without the list: a warning names it; with it, Rex is gone everywhere
    capsys.readouterr()
    assert run("generate", "memorizing", "--ontology", world["onto"], "--out", probes,
               "--split-sizes", "1,1") == 0
    assert "exclusions.toml lists 1 reviewed term" in capsys.readouterr().err
    assert "Rex" in (probes / PROMPTS_FILE).read_text()
    assert run("generate", "memorizing", "--ontology", world["onto"], "--out", probes,
               "--split-sizes", "1,1", "--exclusions", exclusions) == 0
    assert "reviewed term" not in capsys.readouterr().err
    texts = (probes / PROMPTS_FILE).read_text() + "".join(
        p.read_text() for p in probes.glob("*.jsonl"))
    assert "Rex" not in texts and f'"{EX}rex"' not in texts
    assert "Fido" in texts  # the other dog stays
    excluded = (probes / "excluded.tsv").read_text()
    assert f"{EX}rex\tinstance\trex\treviewed" in excluded.replace("Rex", "rex")
    # a second review appends to the same list, keeping the first
    sheet2 = tmp_path / "sheet2.tsv"
    assert run("review", "sample", probes, "--size", "30", "--out", sheet2) == 0
    rows = read_sheet(sheet2)
    fido = next(r for r in rows[1:] if r[2].startswith("Fido "))
    fido[5] = EX + "fido"
    write_sheet(sheet2, rows)
    assert run("review", "read", sheet2, "--probes", probes) == 0
    text = exclusions.read_text()
    assert text.count(EX + "rex") == 1 and text.count(EX + "fido") == 1
    assert Counter(text.splitlines())["[reviewed]"] == 1


def one_error(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("kgprobe: error:"), err
    return err[0]


def filled(world, tmp_path, codes: str = "", term: str = "") -> Path:
    sheet = tmp_path / "s.tsv"
    assert run("review", "sample", world["m"], "--size", "6", "--out", sheet) == 0
    rows = read_sheet(sheet)
    rows[2][4], rows[2][5] = codes, term
    write_sheet(sheet, rows)
    return sheet


def test_a_bad_code_is_one_line_naming_the_row_and_the_codes(world, tmp_path, capsys):
    sheet = filled(world, tmp_path, codes="GX")
    before = (world["m"] / "summary.json").read_text()
    assert run("review", "read", sheet, "--probes", world["m"]) == 2
    line = one_error(capsys)
    assert "line 3" in line and "'X'" in line and "GCTFDAM" in line
    assert (world["m"] / "summary.json").read_text() == before  # nothing written
    assert not (world["m"] / "exclusions.toml").exists()


def test_a_term_the_prompt_does_not_name_is_one_line(world, tmp_path, capsys):
    sheet = filled(world, tmp_path, term="unicorn")
    assert run("review", "read", sheet, "--probes", world["m"]) == 2
    line = one_error(capsys)
    assert "line 3" in line and "unicorn" in line


def test_a_sheet_from_another_folder_and_a_missing_folder_are_one_line(world, tmp_path, capsys):
    sheet = filled(world, tmp_path)
    assert run("review", "read", sheet, "--probes", world["r"]) == 2
    assert "no prompt of the probe folder has this id" in one_error(capsys)
    assert run("review", "sample", tmp_path / "nowhere", "--out", tmp_path / "x.tsv") == 2
    assert "nowhere" in one_error(capsys)


def test_sample_keeps_a_sheet_being_filled(world, tmp_path, capsys):
    sheet = filled(world, tmp_path, codes="G")
    before = sheet.read_text()
    assert run("review", "sample", world["m"], "--out", sheet) == 2
    assert "--force" in one_error(capsys)
    assert sheet.read_text() == before
