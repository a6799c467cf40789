"""The premise-ablation study end to end on a tiny model and a tiny ontology."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kgprobe.ontology.loaders import load_rdf
from kgprobe.reasoning.rdfs import RULES
from kgprobe.studies.premise_ablation.report import write_report
from kgprobe.studies.premise_ablation.study import (
    SETTINGS, AblationConfig, build_study, classify_premises, reasoning_prompt,
    run_premise_ablation,
)

ZOO = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
ex:Dog rdfs:subClassOf ex:Mammal . ex:Cat rdfs:subClassOf ex:Mammal .
ex:Mammal rdfs:subClassOf ex:Animal . ex:Animal rdfs:subClassOf ex:Agent .
ex:ZooKeeper rdfs:subClassOf ex:Person . ex:Person rdfs:subClassOf ex:Agent .
ex:caresFor rdfs:domain ex:ZooKeeper ; rdfs:range ex:Animal ; rdfs:subPropertyOf ex:knows ;
    kgp:pattern "[X] takes care of [Y] ."@en .
ex:feeds rdfs:domain ex:Person ; rdfs:range ex:Mammal ; rdfs:subPropertyOf ex:caresFor .
ex:knows rdfs:subPropertyOf ex:relatedTo ; kgp:pattern "[X] knows [Y] ."@en .
ex:rex a ex:Dog . ex:tom a ex:Cat . ex:ann a ex:ZooKeeper .
ex:ann ex:caresFor ex:rex . ex:bob ex:feeds ex:tom .
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoo") / "zoo.ttl"
    path.write_text(ZOO)
    return path


def read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_end_to_end_all_rules_settings_and_template_kinds(tmp_path, zoo, tiny_gpt2_dir):
    config = AblationConfig(str(tiny_gpt2_dir), templates=("manual", "soft"), limit=None,
                            soft_epochs=2, batch_size=16)
    rows = run_premise_ablation(config, tmp_path, source=load_rdf(zoo), progress=False)
    assert len(rows) == len(RULES) * 2 * 9
    table = read(tmp_path / "results.csv")
    assert list(table[0]) == ["rule", "p1", "p2", "template", "n", "R@1", "R@5", "MRR", "MRRa", "protocol"]
    assert {r["protocol"] for r in table} == {"all"}
    for rule in RULES:
        for kind in ("manual", "soft"):
            cells = {(r["p1"], r["p2"]): int(r["n"]) for r in table
                     if r["rule"] == rule and r["template"] == kind}
            assert set(cells) == {(a, b) for a in SETTINGS for b in SETTINGS}
            # Every item is in the both-explicit cell, and in exactly four cells in all.
            assert cells[("explicit", "explicit")] > 0
            assert sum(cells.values()) == 4 * cells[("explicit", "explicit")]
            for r in table:
                if r["rule"] == rule and int(r["n"]) == 0:
                    assert r["MRR"] == ""  # empty, not a made-up zero
    for r in table:
        if int(r["n"]):
            assert 0 <= float(r["MRR"]) <= 1 and float(r["MRRa"]) <= float(r["MRR"]) + 1e-9
    assert (tmp_path / "soft" / "vectors.pt").exists()
    assert (tmp_path / "report.md").read_text().count("| P1 \\ P2 |") == 2 * (len(RULES) + 1)
    assert all((tmp_path / f"heatmap_{rule}.png").stat().st_size > 1000 for rule in RULES)
    assert (tmp_path / "summary.png").exists()
    preds = [json.loads(l) for l in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert {p["rule"] for p in preds} == set(RULES)
    # `kgprobe report DIR` rebuilds the report from results.csv alone.
    (tmp_path / "report.md").unlink()
    write_report(tmp_path)
    assert "Premise-ablation" in (tmp_path / "report.md").read_text()


def test_settings_follow_memorization_and_prompts_keep_the_conjunction(tmp_path, zoo, tiny_gpt2_dir):
    config = AblationConfig(str(tiny_gpt2_dir), limit=None, batch_size=16)
    study = build_study(config, load_rdf(zoo))
    premises = classify_premises(study, tmp_path)
    by_kind = Counter((k.split("|")[0], k.split("|")[1], v["known"]) for k, v in premises.items())
    for (rule, role, known), n in by_kind.items():
        # Half of each kind (rounded) counts as known.
        total = by_kind[(rule, role, True)] + by_kind[(rule, role, False)]
        assert by_kind[(rule, role, True)] == round(total * 0.5)
    item = study.items["rdfs9"][0]
    assert reasoning_prompt(study, item, "not", "not", "manual") == "Therefore , " + item.conclusion["text"]
    both = reasoning_prompt(study, item, "explicit", "explicit", "manual")
    assert both == f"{item.premises[0].text} {item.premises[1].text} Therefore , {item.conclusion['text']}"
    assert reasoning_prompt(study, item, "implicit", "explicit", "manual").startswith(item.premises[1].text)


def test_same_seed_same_numbers_and_resume_after_kill(tmp_path, zoo, tiny_gpt2_dir):
    cmd = [sys.executable, "-m", "kgprobe.cli", "study", "premise-ablation",
           "--model", str(tiny_gpt2_dir), "--ontology", str(zoo), "--templates", "manual",
           "--limit", "0", "--pairs", "3", "--batch-size", "4", "--no-cache"]
    env = {**os.environ, "KGPROBE_TEST_THREADS": "1"}
    whole = subprocess.run(cmd + ["--out", str(tmp_path / "a")], capture_output=True, text=True,
                           timeout=600, env=env)
    assert whole.returncode == 0, whole.stderr
    proc = subprocess.Popen(cmd + ["--out", str(tmp_path / "b")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    units = tmp_path / "b" / "units"
    deadline = time.time() + 300
    while time.time() < deadline and not (units.exists() and len(list(units.glob("rule-*.jsonl"))) >= 3):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = {p.name: p.stat().st_mtime_ns for p in units.glob("rule-*.jsonl")}
    assert 3 <= len(done_before) < len(RULES) * 9, "the run should have been cut short"
    again = subprocess.run(cmd + ["--out", str(tmp_path / "b")], capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 0, again.stderr
    for name, stamp in done_before.items():
        assert (units / name).stat().st_mtime_ns == stamp  # finished units were not redone
    assert (tmp_path / "a" / "results.csv").read_text() == (tmp_path / "b" / "results.csv").read_text()
