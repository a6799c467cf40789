"""The premise-ablation study end to end on a tiny model and a tiny ontology."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from kgprobe.studies.options import ModelSettings
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.items import RULE_RELATIONS
from kgprobe.reasoning.rdfs import RULES
from kgprobe.studies.premise_ablation.columns import COLUMNS
from kgprobe.studies.premise_ablation.contrasts import CONTRASTS
from kgprobe.studies.premise_ablation.family import CONFIRMATORY
from kgprobe.studies.premise_ablation.report import console_table, finding, write_report
from kgprobe.studies.premise_ablation.study import (
    SETTINGS,
    AblationConfig,
    build_setup,
    classify_premises,
    reasoning_prompt,
    run_premise_ablation,
)

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"))


def read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_end_to_end_all_rules_settings_and_template_kinds(tmp_path, zoo, tiny_gpt2_dir):
    config = AblationConfig(str(tiny_gpt2_dir), templates=("manual", "soft"), limit=None,
                            soft_epochs=2, settings=ModelSettings(batch_size=16), ontology=zoo)
    rows = run_premise_ablation(config, tmp_path, progress=False)
    templates = load_templates()
    manual = {rule: len(templates[RULE_RELATIONS[rule][2]].manual) for rule in RULES}
    assert manual["rdfs9"] == 3 and manual["rdfs5"] == 1  # every manual template is scored
    assert len(rows) == sum(9 * (manual[rule] + 1) for rule in RULES)  # + the soft template
    table = read(tmp_path / "results.csv")
    assert list(table[0]) == COLUMNS
    assert {"n_items", "n_prompts", "MRR_lo", "MRR_hi", "R@1_lo", "R@5_hi", "MRRa_lo"} <= set(COLUMNS)
    assert {r["protocol"] for r in table} == {"all"}
    for rule in RULES:
        for kind in ("manual", "soft"):
            cells = {(r["p1"], r["p2"]): int(r["n"]) for r in table
                     if r["rule"] == rule and r["template"] == kind and r["variant"] == "mean"}
            assert set(cells) == {(a, b) for a in SETTINGS for b in SETTINGS}
            # Every item is in the both-explicit cell, and in exactly four cells in all.
            assert cells[("explicit", "explicit")] > 0
            assert sum(cells.values()) == 4 * cells[("explicit", "explicit")]
            for r in table:
                if r["rule"] == rule and int(r["n"]) == 0:
                    assert r["MRR"] == ""  # empty, not a made-up zero
    by_key = {(r["rule"], r["p1"], r["p2"], r["template"], r["variant"]): r for r in table}
    for r in table:
        if int(r["n"]):
            assert 0 <= float(r["MRR"]) <= 1 and float(r["MRRa"]) <= float(r["MRR"]) + 1e-9
            for m in ("R@1", "R@5", "MRR", "MRRa"):
                assert float(r[f"{m}_lo"]) <= float(r[m]) + 1e-9 <= float(r[f"{m}_hi"]) + 2e-9
            if r["rule"] != "mean":
                assert (r["low_n"] == "yes") == (int(r["n_items"]) < 10)
            elif int(r["n_items"]) < 10:
                assert r["low_n"] == "yes"  # (also flagged: a rule average over a 1-item rule)
        if r["variant"] == "mean" and r["rule"] != "mean" and int(r["n"]):
            # The template average: the mean of the templates' cells (same prompts under each).
            parts = [float(by_key[(r["rule"], r["p1"], r["p2"], r["template"], str(v))]["MRR"])
                     for v in range(manual[r["rule"]] if r["template"] == "manual" else 1)]
            assert float(r["MRR"]) == pytest.approx(sum(parts) / len(parts), abs=2e-4)
    # Each unit's own numbers are what results.csv reports for its template.
    for unit in (tmp_path / "units").glob("*.jsonl"):
        head = json.loads(unit.read_text().splitlines()[0])["row"]
        row = by_key[(head["rule"], head["p1"], head["p2"], head["template"], str(head["variant"]))]
        assert int(row["n"]) == head["n"]
        if head["n"]:
            assert row["MRR"] == f"{head['MRR']:.4f}" and row["R@1"] == f"{head['R@1']:.4f}"
    found = read(tmp_path / "comparisons.csv")
    tests = {(c["comparison"], c["test"]) for c in found if c["role"] == "descriptive"
             and c["test"] != "one-sided vs every control"}
    # the grid's level rows are tested like the family's and read descriptively (a copier
    # passes them): no grid row is confirmatory
    levels = {c["comparison"] for c in found if c["test"] == "one-sided vs every control"}
    assert levels == {d.label for d in CONFIRMATORY if d.family == "grid"}
    assert not [c for c in found if c["role"] == "confirmatory"]
    assert tests == {("P1 explicit vs unwritten (P2 not given)", "paired"),
                     ("P1 implicit vs not given (P2 not given)", "unpaired"),
                     ("P2 explicit vs unwritten (P1 not given)", "paired"),
                     ("P2 implicit vs not given (P1 not given)", "unpaired"),
                     ("both explicit vs 100", "target"),
                     # the contrasts a control cannot fake (tests/test_pa_controls.py)
                     (CONTRASTS[0], "interaction"), (CONTRASTS[1], "paired"),
                     (CONTRASTS[2], "paired"), (CONTRASTS[3], "paired"),
                     (CONTRASTS[4], "paired")}
    assert (tmp_path / "soft" / "vectors.pt").exists()
    report = (tmp_path / "report.md").read_text()
    assert report.count("| P1 \\ P2 |") == 2 * (len(RULES) + 1)
    assert "[" in report and "†" in report and "MRR per manual template" in report
    printed = console_table(table, "manual")  # what `kgprobe demo` prints
    assert re.search(r"\d+\.\d \[\d+\.\d, \d+\.\d\] \(n=\d+\)", printed)
    assert all((tmp_path / f"heatmap_{rule}.png").stat().st_size > 1000 for rule in RULES)
    assert (tmp_path / "summary.png").exists()
    preds = [json.loads(l) for l in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert {p["rule"] for p in preds} == set(RULES)
    assert all(min(p["gold_ranks"]) == p["gold_rank"] for p in preds)
    # `kgprobe report DIR` rebuilds the tables and the report from the prompts on disk.
    before = (tmp_path / "results.csv").read_text(), (tmp_path / "comparisons.csv").read_text()
    (tmp_path / "report.md").unlink()
    write_report(tmp_path)
    assert "Premise-ablation" in (tmp_path / "report.md").read_text()
    assert ((tmp_path / "results.csv").read_text(), (tmp_path / "comparisons.csv").read_text()) == before


def test_a_finding_is_stated_only_when_its_interval_supports_it():
    row = {"template": "manual", "rule": "mean", "comparison": "P1 explicit vs unwritten "
           "(P2 not given)", "test": "paired", "n_items": "24", "difference": "0.12",
           "difference_lo": "0.05", "difference_hi": "0.19", "p": "0.0001", "p_holm": "0.002",
           "finding": "yes"}
    assert finding(row, "Writing P1").startswith("Writing P1 raises the MRR by +12.0 points [+5.0, +19.0]")
    # The same difference with an interval that crosses zero: no finding.
    crossing = {**row, "difference_lo": "-0.02", "p_holm": "0.3", "finding": "no"}
    assert finding(crossing, "Writing P1").startswith("Writing P1: no detectable difference (n = 24")
    # And the decision itself: stats.Comparison.supported needs the interval off zero.
    from kgprobe.studies.comparisons import Comparison

    assert Comparison("x", "paired", 0.12, 0.05, 0.19, 1e-4, "24", 0.002).supported()
    assert not Comparison("x", "paired", 0.12, -0.02, 0.19, 1e-4, "24", 0.002).supported()


def test_settings_follow_memorization_and_prompts_keep_the_conjunction(tmp_path, zoo, tiny_gpt2_dir):
    config = AblationConfig(str(tiny_gpt2_dir), limit=None, settings=ModelSettings(batch_size=16),
                            ontology=zoo)
    setup = build_setup(config)
    data = setup.data
    premises = classify_premises(setup, tmp_path)
    by_kind = Counter((k.role, k.relation, m.known) for k, m in premises.items())
    # memorized.json holds one record a premise, and a rerun reads back the same outcomes
    rows = json.loads((tmp_path / "memorized.json").read_text())["premises"]
    assert len(rows) == len(premises) and {r["pair"] for r in rows if r["role"] == "P1"} == {None}
    assert classify_premises(setup, tmp_path) == premises
    assert by_kind  # every kind classified; known is absolute, not a share of the kind:
    # the model ranks the gold first and the frequency control, on the same candidates, does not
    assert all(m.known == (m.rank == 1 and m.null_rank > 1) for m in premises.values())
    assert all(m.rr == (1 / m.rank if m.rank else 0.0) for m in premises.values())
    item = data.items["rdfs9"][0]
    assert reasoning_prompt(data, item, "not", "not", "manual") == "Therefore , " + item.conclusion["text"]
    both = reasoning_prompt(data, item, "explicit", "explicit", "manual")
    assert both == f"{item.premises[0].text} {item.premises[1].text} Therefore , {item.conclusion['text']}"
    assert reasoning_prompt(data, item, "implicit", "explicit", "manual").startswith(item.premises[1].text)
    # Every manual template: the relation's hypothesis template gives the prompt as before.
    hyp = data.templates["type"].hypothesis
    prompts = [reasoning_prompt(data, item, "not", "not", "manual", variant=v) for v in range(3)]
    assert prompts[hyp] == reasoning_prompt(data, item, "not", "not", "manual")
    assert len(set(prompts)) == 3 and all(p.startswith("Therefore , ") for p in prompts)


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
    assert not (tmp_path / "b" / "comparisons.csv").exists()
    again = subprocess.run(cmd + ["--out", str(tmp_path / "b")], capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 0, again.stderr
    for name, stamp in done_before.items():
        assert (units / name).stat().st_mtime_ns == stamp  # finished units were not redone
    # Same numbers, intervals and tests included: they are recomputed from the stored prompts
    # with seeds that depend only on the run's seed and the cell.
    for name in ("results.csv", "comparisons.csv", "report.md"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    table = read(tmp_path / "b" / "results.csv")
    assert any(r["MRR_lo"] != r["MRR_hi"] for r in table if r["MRR_lo"])
    # --pairs 3: a cell's prompts are (item, pair, template) observations nested in items.
    both = [r for r in table if r["rule"] == "rdfs9" and r["variant"] == "mean"
            and r["p1"] == r["p2"] == "explicit" and r["template"] == "manual"][0]
    assert int(both["n_prompts"]) == 3 * 3 * int(both["n_items"])


def test_report_settings_do_not_pin_the_run_folder(tmp_path):
    """--resamples and --min-items change only the report: a rerun with other values resumes
    (and the report reads the new values); a setting that changes units is still refused."""
    from kgprobe.errors import StudyError
    from kgprobe.studies.settings import pin_settings

    first = AblationConfig("m", resamples=2000, min_items=10)
    pin_settings(tmp_path, first.pinned(), report=first.report_settings())
    again = AblationConfig("m", resamples=1000, min_items=3)
    pin_settings(tmp_path, again.pinned(), report=again.report_settings())
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["resamples"] == 1000 and written["min_items"] == 3 and written["model"] == "m"
    other = AblationConfig("m", seed=1)
    with pytest.raises(StudyError, match="other settings.*seed"):
        pin_settings(tmp_path, other.pinned(), report=other.report_settings())


@pytest.mark.parametrize("settings, option, fix", [
    ({"templates": ("manual", "soft"), "depth": (1, 2)}, "--depth", {"templates": ("manual",)}),
    ({"premise_order": "sideways"}, "--premise-order", {"premise_order": "shuffled"}),
    ({"distractor_kind": "loud"}, "--distractor-kind", {"distractor_kind": "unrelated"}),
    ({"answers": "generate", "premises": ("true", "counterfactual")}, "--answers generate",
     {"premises": ("true",)}),
    ({"protocol": "paper", "templates": ("soft",)}, "--soft-recipe", {"soft_recipe": "paper"}),
    ({"resamples": 10}, "--resamples", {"resamples": 1000}),
    ({"memorized_fraction": 0.3}, "--fraction", {"memorized_fraction": 0.5}),
])
def test_a_config_built_in_code_is_checked_whole_on_construction(settings, option, fix):
    """`AblationConfig` checks every field together when it is built, as `config_from_args`
    builds it: a config made in code (`kgprobe.run`, a test) cannot skip a check the
    command line has, and the refusal is one line naming the option; fixed, it is built."""
    from kgprobe.errors import StudyError

    with pytest.raises(StudyError, match=option) as err:
        AblationConfig("m", **settings)
    assert "\n" not in str(err.value)
    assert AblationConfig("m", **{**settings, **fix}).model == "m"
