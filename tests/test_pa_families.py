"""Depth and counterfactual tests as rows of premise ablation's one comparisons.csv: each with
the controls' estimates on their own prompts; the descriptive rows Holm-adjusted among
themselves and never claimed, the confirmatory rows (the family's depth and counterfactual
cells) claimed for a model above every control and its unwritten self, never for a control
model run against the other controls."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import kgprobe
import numpy as np
import pytest
from kgprobe.studies.comparisons import holm
from kgprobe.studies.premise_ablation.cells import Prompt
from kgprobe.studies.premise_ablation.contrasts import (
    CHAINED,
    CHAINED_LEVEL,
    FOLLOWS,
    Family,
    comparison_table,
)
from kgprobe.studies.premise_ablation.counterfactual_report import counterfactual_tests
from kgprobe.studies.premise_ablation.settings import ReportSettings

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402


def _read(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(text: str) -> float:
    return float(text) if text not in ("", None) else math.nan


def test_a_control_model_claims_no_depth_or_counterfactual_row(tmp_path, monkeypatch):
    """`--model copy` with `--depth 1,2 --distractors 0,2` and `--premises true,counterfactual`
    (on the zoo: the bundled ontology is the documented manual check): the depth and
    counterfactual tests are rows of comparisons.csv beside the grid's, with every control's
    estimate and `claimed`; nothing is claimed; Holm runs over the descriptive rows, and
    separately over the confirmatory family."""
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    kgprobe.run("premise-ablation", model="copy", templates="manual", pairs=1, limit=4,
                candidates="5", rules="rdfs9,rdfs11", depth="1,2", distractors="0,2",
                premises="true,counterfactual", ontology=write_zoo(tmp_path), out=out,
                resamples=1000)
    rows = _read(out / "comparisons.csv")
    assert {r["family"] for r in rows} == {"grid", "depth", "counterfactual"}
    labels = {(r["family"], r["comparison"]) for r in rows}
    assert {("depth", f"{label} (depth {d}, {n} distractors)") for d in (1, 2) for n in (0, 2)
            for label in (CHAINED, CHAINED_LEVEL)} <= labels
    assert {("counterfactual", f"{FOLLOWS} (P2 {p2})") for p2 in ("explicit", "not given")} <= labels
    assert {r["claimed"] for r in rows} == {"False"}
    assert any(r["comparison"].endswith("model − copy") and r["n_items"] != "0" for r in rows)
    family = [r for r in rows if r["role"] == "confirmatory"]
    assert {(r["family"], r["depth"], r["distractors"]) for r in family if r["family"] == "depth"
            } == {("depth", "1", "2"), ("depth", "2", "2")}
    assert {r["family"] for r in family} == {"depth"}  # a copier passes the other level rows
    read = {r["family"] for r in rows if r["role"] == "descriptive"
            and r["test"] == "one-sided vs every control"}
    assert read == {"grid", "counterfactual"}
    rows = [r for r in rows
            if r["role"] == "descriptive" and r["test"] != "one-sided vs every control"]
    # Holm over the whole descriptive file, not per family; the family's own
    for part in (rows, family):
        p = np.array([_num(r["p"]) for r in part])
        assert np.allclose(holm(p), [_num(r["p_holm"]) for r in part], equal_nan=True)
    for r in rows:
        for control in ("frequency", "copy", "random"):
            assert f"control_estimate_{control}" in r and f"control_hi_{control}" in r
        # the run's model is copy: its own control, the same prompts, the same numbers
        assert _num(r["estimate"]) == pytest.approx(_num(r["control_estimate_copy"]), nan_ok=True)
        if (r["comparison"].startswith((CHAINED, CHAINED_LEVEL, FOLLOWS))
                or r["comparison"].endswith("model − copy")) \
                and r["n_items"] != "0":
            assert _num(r["control_estimate_copy"]) == pytest.approx(0)  # copy minus itself
    by = {(r["family"], r["comparison"]): r for r in rows}
    follows = by[("counterfactual", f"{FOLLOWS} (P2 explicit)")]
    # frequency recalls and never follows the written false premise: below copy
    assert _num(follows["control_estimate_frequency"]) < -0.2
    # results.csv: a counterfactual cell shows the controls' counterfactual values, not the
    # true grid's cell of the same P1 and P2
    table = _read(out / "results.csv")
    twins = [r for r in table if r["premises"] == "counterfactual" and r["MRR"]]
    assert twins and all(r["MRR_copy"] == r["MRR"] for r in table if r["MRR"])
    grid = {(r["rule"], r["p1"], r["p2"], r["variant"]): r["MRR"] for r in table
            if r["premises"] == "true" and not r["depth"]}
    assert any(grid.get((r["rule"], r["p1"], r["p2"], r["variant"])) != r["MRR"] for r in twins)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "is itself a control" in report
    depth = report[report.index("## Depth and distraction"):report.index("## Counterfactual")]
    assert "<br>frequency " in depth and f"{CHAINED} (depth 2, 2 distractors)" in depth
    assert "<br>frequency " in report[report.index("## Counterfactual"):]
    assert not list(out.glob("*_comparisons.csv"))


def _twins(item: str, written: float, unwritten: float, p2: str = "explicit") -> list[Prompt]:
    return [Prompt("rdfs9", p1, p2, "manual", 0, item, 0, (v, v, v, v))
            for p1, v in (("explicit", written), ("not", unwritten))]


def _data(written: float, unwritten: float, n: int = 16):
    """n items' counterfactual prompts: the false term's MRR with P1 written and without, with
    item noise that sums to zero; the true grid's P1-written prompts at 1."""
    twins = [p for i in range(n)
             for p in _twins(f"i{i}", written + 0.02 * (i - (n - 1) / 2), unwritten)]
    true = [Prompt("rdfs9", "explicit", "explicit", "manual", 0, f"i{i}", 0, (1.0,) * 4)
            for i in range(n)]
    return twins, true


def test_following_a_false_premise_beyond_every_control_is_claimed_and_only_then(monkeypatch):
    """The rule's mechanics on the counterfactual row, declared confirmatory here (the bundled
    design reads it descriptively: copy run as the model passes it, `family.COPIER_PASSES`)."""
    import kgprobe.studies.premise_ablation.family as declared
    from kgprobe.studies.premise_ablation.counterfactual_report import levels
    from kgprobe.studies.premise_ablation.family import FALSE_P1

    monkeypatch.setattr(declared, "is_confirmatory", lambda label: True)

    config = ReportSettings(model="some-lm", rules=("rdfs9",), templates=("manual",),
                            resamples=1000, controls=("frequency", "copy"))
    recall, copier = _data(0.2, 0.2), _data(0.5, 0.2)

    def table(model):
        family = Family("counterfactual", model, {"frequency": recall, "copy": copier},
                        lambda mine, copy: counterfactual_tests(mine, copy, config), levels)
        rows, _ = comparison_table([], {"frequency": [], "copy": []}, config, [family])
        return {r["comparison"]: r for r in rows if r["family"] == "counterfactual"}

    rows = table(_data(1.0, 0.2))
    follows = rows[f"{FOLLOWS} (P2 explicit)"]  # descriptive: read, not claimed
    assert follows["estimate"] == pytest.approx(0.5)  # 0.8 − copy's 0.3
    assert follows["control_estimate_copy"] == pytest.approx(0)
    assert follows["control_estimate_frequency"] == pytest.approx(-0.3)
    assert follows["role"] == "descriptive" and follows["claimed"] is False
    claim = rows[FALSE_P1]
    assert claim["role"] == "confirmatory" and claim["claimed"] is True
    assert claim["control_diff_copy"] == pytest.approx(0.5)
    assert claim["control_diff_unwritten"] == pytest.approx(0.8)
    # a model that follows the premise only as far as copying does: nothing beyond copy
    rows = table(_data(0.5, 0.2))
    assert not any(r["claimed"] for r in rows.values())
    assert rows[FALSE_P1]["stopped_by"] == "copy"


def test_a_written_chained_cell_above_every_control_on_the_same_prompts_is_claimed():
    """With naming distractors copy misses the gold; a model that picks it on the same prompts
    is claimed by the family's depth row, one at copy's level is not."""
    from kgprobe.studies.premise_ablation.columns import UNWRITTEN
    from kgprobe.studies.premise_ablation.depth_report import depth_levels, depth_tests
    from kgprobe.studies.premise_ablation.family import depth_label

    config = ReportSettings(model="some-lm", rules=("rdfs9",), templates=("manual",),
                            resamples=1000, controls=("copy",), depth=(1,), distractors=(0, 2))

    def chained(written2: float, n: int = 20):
        out = []
        for i in range(n):
            noise = 0.01 * (i - (n - 1) / 2)
            for k, p1, v in ((0, UNWRITTEN, 0.3), (0, "explicit", 1.0),
                             (2, "explicit", written2 + noise)):
                out.append((1, k, Prompt("rdfs9", p1, p1, "manual", 0, f"i{i}", 0, (v,) * 4)))
        return out

    copy = chained(0.5)
    for model, expected in ((chained(0.9), True), (chained(0.5), False)):
        family = Family("depth", model, {"copy": copy}, lambda mine, c: depth_tests(mine, c, config),
                        lambda data: depth_levels(data, config))
        rows, _ = comparison_table([], {"copy": []}, config, families=[family])
        row = next(r for r in rows if r["comparison"] == depth_label(1, 2))
        assert (row["depth"], row["distractors"]) == (1, 2)
        assert row["control_diff_copy"] == pytest.approx(0.9 - 0.5 if expected else 0.0, abs=1e-9)
        assert row["claimed"] is expected
        level = next(r for r in rows if r["comparison"] == f"{CHAINED_LEVEL} (depth 1, 2 distractors)")
        assert level["role"] == "descriptive" and level["claimed"] is False
