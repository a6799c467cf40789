"""The memorization study's controls: asked the model's own requests, shown beside each cell.

A tiny ontology written here (one subject's label names its class, so copying has something to
copy) and a tiny random GPT-2 (tests/conftest.py) keep every run to seconds.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import kgprobe
from kgprobe.errors import StudyError

TTL = """@prefix : <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
:Agent a owl:Class ; rdfs:label "agent" .
:Person a owl:Class ; rdfs:label "person" ; rdfs:subClassOf :Agent .
:Athlete a owl:Class ; rdfs:label "athlete" ; rdfs:subClassOf :Person .
:Place a owl:Class ; rdfs:label "place" .
:City a owl:Class ; rdfs:label "city" ; rdfs:subClassOf :Place .
:River a owl:Class ; rdfs:label "river" ; rdfs:subClassOf :Place .
"""
RANK = ("R@1", "R@5", "R@10", "MRR", "MRRa")


def ontology(tmp_path: Path) -> Path:
    lines = [TTL]
    for i in range(18):
        kind = ("Athlete", "City", "River")[i % 3]
        name = f"Old Harbour City {i}" if kind == "City" else f"Someone Number {i}"
        lines.append(f':x{i} a :{kind} ; rdfs:label "{name}" .')
    path = tmp_path / "tiny.ttl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def table(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def predictions(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def run(tmp_path: Path, model: str, out: str, **settings) -> Path:
    path = tmp_path / out
    kgprobe.run("memorization", model=model, out=path, task="type", template="0",
                ontology=ontology(tmp_path), batch_size=8, threads=1, **settings)
    return path


def test_the_controls_score_the_models_requests_and_equal_their_own_runs(tmp_path, tiny_gpt2_dir):
    out = run(tmp_path, str(tiny_gpt2_dir), "lm", controls="frequency,copy,random")
    rows = table(out)
    assert rows and all(r["n"] != "0" for r in rows)
    for control in ("frequency", "copy", "random"):
        alone = run(tmp_path, control, control, controls="none")
        by_cell = {(r["task"], r["template"], r["split"]): r for r in table(alone)}
        for row in rows:
            own = by_cell[(row["task"], row["template"], row["split"])]
            for m in RANK:  # the same requests: the very numbers of the control run alone
                assert row[f"{m}_{control}"] == own[m]
                lo, hi = float(row[f"{m}_{control}_lo"]), float(row[f"{m}_{control}_hi"])
                assert lo <= float(own[m]) + 1e-4 and float(own[m]) <= hi + 1e-4
        # ...prompt by prompt, candidates and ranks included
        mine = predictions(out / "controls" / control)
        assert [(p["prompt"], p["gold_ranks"], p["top10"]) for p in mine] == \
            [(p["prompt"], p["gold_ranks"], p["top10"]) for p in predictions(alone)]
    # copy reads the subject's label: the city named in it is ranked first, frequency cannot
    copy = predictions(out / "controls" / "copy")
    cities = [p for p in copy if p["subject"].startswith("Old Harbour City")]
    assert cities and all(p["top10"][0][0] == "city" for p in cities)
    assert [p["prompt"] for p in copy] == [p["prompt"] for p in predictions(out)]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "\n  frequency" in report and "\n  copy" in report and "The controls on the same" in report
    assert json.loads((out / "config.json").read_text())["controls"] == ["frequency", "copy", "random"]


def test_another_list_resumes_the_models_units_and_a_control_model_is_not_scored_twice(
        tmp_path, tiny_gpt2_dir):
    out = run(tmp_path, str(tiny_gpt2_dir), "lm", controls="copy")
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("**/units/*.jsonl")}
    run(tmp_path, str(tiny_gpt2_dir), "lm", controls="copy,random")
    # the model's and copy's units untouched (not pinned: a rerun resumes); random added
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert list((out / "controls" / "random" / "units").glob("*.jsonl"))
    header = list(table(out)[0])
    assert "MRR_random" in header and "MRR_copy_hi" in header and "MRR_frequency" not in header

    # `--model frequency` with the default controls: frequency is its own rows
    own = run(tmp_path, "frequency", "freq")
    rows = table(own)
    assert all(r["MRR"] == r["MRR_frequency"] and r["MRR_copy"] and r["MRR_random"] for r in rows)
    assert not (own / "controls" / "frequency").exists()
    assert "itself a control" in (own / "report.md").read_text(encoding="utf-8")


def test_open_answers_take_the_generative_controls(tmp_path):
    out = run(tmp_path, "random", "gen", answers="generate", controls="frequency,copy")
    alone = run(tmp_path, "frequency", "gen-freq", answers="generate", controls="none")
    (row,), (own,) = table(out), table(alone)
    for m in ("accuracy", "exact", "wrong"):
        for s in ("", "_lo", "_hi"):
            assert row[f"{m}_frequency{s}"] == own[f"{m}{s}"]
    assert row["accuracy_copy"] != "" and "MRR_copy" not in row
    assert "\n  frequency" in (out / "report.md").read_text(encoding="utf-8")
    with pytest.raises(StudyError, match="--controls prior"):
        run(tmp_path, "random", "gen-prior", answers="generate", controls="prior")


# ------------------------------------------------------------------ multiple choice


def mc(tmp_path: Path, model: str, out: str, **settings) -> Path:
    path = tmp_path / out
    kgprobe.run("multiple-choice", model=model, out=path, task="domain,rdfs9", limit=6,
                threads=1, **settings)
    return path


def test_multiple_choice_controls_answer_the_same_questions(tmp_path):
    """Text answers: every control beside each set, equal to its own run; letter answers:
    copy is skipped, said in the report (the option list names every option)."""
    out = mc(tmp_path, "random", "text", answer="text")
    rows = table(out)
    for control in ("frequency", "copy"):
        alone = {r["set"] + r["task"] + r["p1"]: r
                 for r in table(mc(tmp_path, control, f"text-{control}", answer="text",
                                   controls="none"))}
        for row in rows:
            own = alone[row["set"] + row["task"] + row["p1"]]
            assert row[f"accuracy_{control}"] == own["accuracy"]
            assert float(row[f"accuracy_{control}_lo"]) <= float(own["accuracy"]) \
                <= float(row[f"accuracy_{control}_hi"])
    # a written P1 names the answer: copying finds it where the frequency prior does not
    explicit = next(r for r in rows if r["p1"] == "explicit")
    assert float(explicit["accuracy_copy"]) > float(explicit["accuracy_frequency"])
    letter = mc(tmp_path, "frequency", "letter")
    rows = table(letter)
    assert all(r["accuracy_frequency"] == r["accuracy"] and r["accuracy_random"] for r in rows)
    assert "accuracy_copy" not in rows[0] and not (letter / "controls" / "frequency").exists()
    assert "copy is not run" in (letter / "report.md").read_text(encoding="utf-8")
    with pytest.raises(StudyError, match="--controls prior"):
        mc(tmp_path, "random", "prior", controls="prior")
