"""The premise-ablation claim rule validated both ways on the demo design (bundled ontology,
`--preset demo`): a model that reasons by construction is claimed, models that read no
premise as a reasoner does are not.

* `reader` (`models/reader.py`) applies the RDFS rules to the written premises: it must be
  claimed beyond every control on the rows where the design can show reasoning, the cells
  with every premise written beside naming distractors, at depth 1 (the both-written cell)
  and depth 2;
* premise-blind heuristics that are no controls (`heuristic:copy-random`,
  `heuristic:copy-wording`), each a run of its own, must claim nothing;
* `reader:50`, reading half the items, is claimed exactly where its paired tests beat every
  control (bench/claim_power.py: at the demo's size the smallest Q claimed is 75);
* every control run as the model, read against the other controls (never itself), must
  claim nothing. The confirmatory rows do not depend on a run's premise split (their cells
  write every premise), so a control's run of them is its predictions in the reader's run
  folder, read by the report's own code with the control as the model: the same requests,
  the same scores, the same tables, without scoring them again.

Each run is one weightless run of the whole design (no network, no torch model), about a
minute on one idle core; the power figures (`reader:Q`) are bench/claim_power.py's.
"""

from __future__ import annotations

import csv
import math
from dataclasses import replace

import pytest

from kgprobe.cli import main
from kgprobe.studies.controls import parse_controls
from kgprobe.studies.premise_ablation.cells import load_prompts
from kgprobe.studies.premise_ablation.contrasts import comparison_table
from kgprobe.studies.premise_ablation.family import CONFIRMATORY_ROLE, depth_label
from kgprobe.studies.premise_ablation.settings import ReportSettings
from kgprobe.studies.premise_ablation.tables import control_folders, families

HEURISTICS = ["heuristic:copy-random", "heuristic:copy-wording"]


def run(model: str, out) -> list[dict]:
    """The confirmatory rows of a demo run of `model` into `out`."""
    assert main(["study", "premise-ablation", "--ontology", "bundled", "--preset", "demo",
                 "--model", model, "--out", str(out), "--threads", "1"]) == 0
    with open(out / "comparisons.csv", encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["role"] == CONFIRMATORY_ROLE]
    assert rows, "the run has a confirmatory family"
    return rows


@pytest.fixture(scope="module")
def reader_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("claims") / "reader"
    return out, run("reader", out)


def test_the_reader_is_claimed_on_every_cell_with_naming_distractors(reader_run):
    out, rows = reader_run
    by = {r["comparison"]: r for r in rows}
    for depth in (1, 2):
        row = by[depth_label(depth, 2)]
        assert row["claimed"] == "True", row
        # beyond each control by a margin, not a tie: every one-sided lower bound above 0
        bounds = [float(v) for k, v in row.items() if k.startswith("control_lo_") and v]
        assert len(bounds) == len(parse_controls(None, "reader")) + 1 and min(bounds) > 0
    assert "beyond every control" in (out / "report.md").read_text(encoding="utf-8")


def test_a_half_reader_is_claimed_exactly_where_its_paired_tests_beat_every_control(tmp_path,
                                                                                  reader_run):
    """`reader:50` reads the premises of a seeded half of the items: a row is claimed when, and
    only when, each paired one-sided test (every control and its unwritten self) has its lower
    bound above 0 and the row's Holm p is below 0.05; it gains less over copy than `reader`."""
    rows = run("reader:50", tmp_path / "half")
    full = {r["comparison"]: r for r in reader_run[1]}
    for row in rows:
        bounds = [float(v) for k, v in row.items() if k.startswith("control_lo_") and v]
        assert bounds, row
        beats = min(bounds) > 0 and float(row["p_holm"]) < 0.05
        assert (row["claimed"] == "True") == beats, row
        assert (float(row["control_diff_copy"])
                < float(full[row["comparison"]]["control_diff_copy"])), row


@pytest.mark.parametrize("model", HEURISTICS)
def test_a_heuristic_that_reads_no_premise_as_a_reasoner_claims_nothing(tmp_path, model):
    rows = run(model, tmp_path / "run")
    assert [r["comparison"] for r in rows if r["claimed"] == "True"] == []
    assert [r for r in rows if r["n_items"] not in ("", "0")], "the rows had prompts to test"


@pytest.mark.parametrize("control", parse_controls(None, "reader"))
def test_a_control_read_against_the_other_controls_claims_nothing(reader_run, control):
    out, _ = reader_run
    settings = ReportSettings.read(out)
    folders = control_folders(out, settings)
    mine = folders[control]
    others = {c: f for c, f in folders.items() if c != control}
    config = replace(settings, model=control)
    rows, _ = comparison_table(load_prompts(mine), {c: load_prompts(f) for c, f in others.items()},
                               config, families(mine, others, config))
    family = [r for r in rows if r["role"] == CONFIRMATORY_ROLE]
    assert [r["comparison"] for r in family] == [depth_label(1, 2), depth_label(2, 2)]
    assert all(r["n_items"] for r in family)
    assert [r["comparison"] for r in family if r["claimed"]] == []
    # read against the others and its own unwritten prompts, never against itself
    assert all(f"control_diff_{control}" not in r for r in family)
    assert all(math.isfinite(r[f"control_diff_{c}"]) for r in family for c in others)
