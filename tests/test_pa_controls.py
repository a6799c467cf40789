"""Premise ablation read against its controls: the known-P1 interaction, the claim rule, and
control models that claim nothing. (Each control's own ranking on hand-made prompts is
tests/test_controls.py's and tests/test_baselines.py's.)"""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import replace
from pathlib import Path

import kgprobe
import pytest
from kgprobe.errors import StudyError
from kgprobe.studies.controls import control_model, is_control, parse_controls
from kgprobe.studies.premise_ablation.cells import COMPARISONS, Prompt, compare
from kgprobe.studies.premise_ablation.contrasts import (
    CONTRASTS,
    INTERACTION,
    comparison_table,
    interaction,
)
from kgprobe.studies.premise_ablation.settings import ReportSettings

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

SETTINGS = ReportSettings(model="some-lm", rules=("rdfs9",), templates=("manual",),
                          resamples=1000, controls=("frequency", "copy"))


def _prompt(item: str, p1: str, p2: str, mrr: float) -> Prompt:
    return Prompt("rdfs9", p1, p2, "manual", 0, item, 0, (mrr, mrr, mrr, mrr))


def grid(effect_known: float, effect_unknown: float, n: int = 12) -> list[Prompt]:
    """n items whose P1 the model knows, n whose P1 it does not; every item's level differs
    (known items easier: the selection a control also sees) and writing P2 adds a known
    amount per group, with item noise that sums to zero in each group."""
    prompts = []
    for i in range(n):
        noise = 0.02 * (i - (n - 1) / 2)
        for group, p1, effect, base in (("k", "implicit", effect_known, 0.6),
                                        ("u", "not", effect_unknown, 0.2)):
            level = base + 0.01 * i
            prompts += [_prompt(f"{group}{i}", p1, "not", level),
                        _prompt(f"{group}{i}", p1, "explicit", level + effect + noise)]
    return prompts


def test_parse_controls_defaults_to_the_free_ones_and_refuses_others():
    assert parse_controls(None) == ("frequency", "copy", "random", "general", "test-prior")
    assert parse_controls("random, prior,copy") == ("copy", "random", "prior")
    assert parse_controls("none") == ()
    for bad in ("gpt2", "copy,none", ""):
        with pytest.raises(StudyError, match="--controls"):
            parse_controls(bad)
    # Decided by the model family's registry, not the spelling of a run's name.
    assert is_control("frequency") and is_control("prior:smollm2-135m")
    assert not is_control("smollm2-135m") and not is_control("frequency-model")
    assert control_model("prior", "smollm2-135m") == "prior:smollm2-135m"
    assert control_model("prior", "copy") == "copy"  # a control's prior is itself


def test_the_interaction_is_the_known_difference_and_zero_for_a_reader_of_nothing():
    prompts = grid(0.30, 0.10)
    found = interaction("x", prompts, SETTINGS, stratified=False)
    assert found.estimate == pytest.approx(0.20, abs=1e-9)
    assert found.lo < 0.20 < found.hi and found.lo > 0 and found.p < 0.01
    assert found.test == "interaction" and found.n_items == "12 vs 12"
    # A control that reads nothing: the same number whether P2 is written or not.
    flat = grid(0.0, 0.0)
    none = interaction("x", [p for p in flat], SETTINGS, stratified=False)
    assert none.estimate == pytest.approx(0.0, abs=1e-9)
    # ...whose confounded "known P1 helps" (different items, same text) is large all the same.
    spec = next(s for s in COMPARISONS if s.label.startswith("P1 implicit vs not given"))
    confounded = compare(spec, flat, "y", SETTINGS, stratified=False)
    assert confounded.estimate == pytest.approx(0.40, abs=1e-9) and confounded.lo > 0.3


def test_the_interaction_and_unpaired_rows_are_descriptive_never_claimed():
    """The known-P1 interaction beyond its controls, and an unpaired difference no control
    shows, are findings to read (``finding``), not claims: only the confirmatory family
    (tests/test_pa_claims.py) is claimed."""
    model, flat = grid(0.30, 0.05), grid(0.0, 0.0)
    controls = {"frequency": flat, "copy": flat}
    rows, columns = comparison_table(model, controls, SETTINGS)
    assert {"estimate", "lo", "hi", "p", "p_holm", "claimed", "role", "control_estimate_copy",
            "control_hi_frequency"} <= set(columns)
    labels = [r["comparison"] for r in rows if r["rule"] == "mean" and r["role"] == "descriptive"
              and r["test"] != "one-sided vs every control"]  # the level rows read descriptively
    assert labels == [s.label for s in COMPARISONS] + list(CONTRASTS)
    by = {(r["rule"], r["comparison"]): r for r in rows if r["role"] == "descriptive"}
    row = by[("mean", INTERACTION)]
    assert row["estimate"] == pytest.approx(0.25) and row["control_estimate_frequency"] == pytest.approx(0)
    assert row["finding"] == "yes" and row["claimed"] is False
    assert all(r["p_holm"] >= r["p"] for r in rows if not math.isnan(r["p"]))
    assert not any(r["claimed"] for r in rows if r["role"] == "descriptive")
    level = [replace(p, values=(0.3,) * 4) for p in grid(0.0, 0.0, n=20)]
    rows, _ = comparison_table(grid(0.0, 0.0, n=20), {"frequency": level, "copy": level},
                               SETTINGS)
    apart = next(r for r in rows if r["rule"] == "mean"
                 and r["comparison"] == "P1 implicit vs not given (P2 not given)")
    assert apart["test"] == "unpaired" and apart["finding"] == "yes" and apart["claimed"] is False


@pytest.mark.parametrize("model", ["frequency", "copy", "random"])
def test_a_control_model_claims_nothing(model, tmp_path, monkeypatch):
    """`kgprobe study premise-ablation --model M --preset demo` (on a tiny ontology: the
    bundled one is the documented manual check): the contrast rows are there, with
    `claimed`, and none is claimed; results.csv shows every control beside each cell."""
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    kgprobe.run("premise-ablation", model=model, preset="demo", candidates="5",
                ontology=write_zoo(tmp_path), out=out, resamples=1000)
    with open(out / "comparisons.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert set(CONTRASTS) <= {r["comparison"] for r in rows}
    # read against the other controls, never itself: frequency and random, which do not use
    # what is written, claim nothing; copy may claim rows only copy itself stands in front of
    claimed = [r for r in rows if r["claimed"] == "True"]
    assert all(r["role"] == "confirmatory" and not r["stopped_by"] for r in claimed)
    if model != "copy":
        assert not claimed
    assert f"control_diff_{model}" not in rows[0] and "control_diff_unwritten" in rows[0]
    assert {r["role"] for r in rows} == {"confirmatory", "descriptive"}
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    filled = [r for r in table if r["MRR"]]
    assert filled and all(r["MRR_copy"] and r["MRR_random"] and r["MRR_frequency"] for r in filled)
    # the run's own model is its own control: the same numbers, not scored twice
    assert all(r["MRR"] == r[f"MRR_{model}"] for r in filled)
    assert not (out / "controls" / model).exists()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## What this run claims" in report and "is itself a control" in report
    assert "A control is not a reasoner" in report
    assert "<br>frequency " in report


def test_the_prior_control_runs_beside_a_model_and_resumes(tmp_path, tiny_gpt2_dir, monkeypatch):
    """``--controls copy,prior``: prior:MODEL scores the model's own requests in
    OUT/controls/prior; a rerun with another list scores only the new control (the model's
    units are untouched: the list is not pinned)."""
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    out, zoo = tmp_path / "run", write_zoo(tmp_path)
    common = dict(model=str(tiny_gpt2_dir), ontology=zoo, rules="rdfs9", limit=2,
                  templates="manual", out=out, resamples=1000, threads=1)
    kgprobe.run("premise-ablation", controls="copy,prior", **common)
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        filled = [r for r in csv.DictReader(fh) if r["MRR"]]
    assert filled and all(r["MRR_prior"] and r["MRR_copy"] for r in filled)
    assert "MRR_random" not in filled[0]
    units = {p.name: p.stat().st_mtime_ns for p in (out / "units").glob("*.jsonl")}
    kgprobe.run("premise-ablation", controls="random", **common)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "units").glob("*.jsonl")} == units
    with open(out / "comparisons.csv", newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert "control_hi_random" in header and "control_hi_prior" not in header
