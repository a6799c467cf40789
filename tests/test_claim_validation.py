"""The premise-ablation claim rule validated both ways on the demo design (bundled ontology,
`--preset demo`): a model that reasons by construction is claimed, models that read no
premise as a reasoner does are not.

* `reader` (`models/reader.py`) applies the RDFS rules to the written premises: it must be
  claimed beyond every control on the rows where the design can show reasoning, the cells
  with every premise written beside naming distractors, at depth 1 (the both-written cell)
  and depth 2;
* premise-blind heuristics that are no controls (`heuristic:copy-random`,
  `heuristic:copy-wording`) and every control run as the model (read against the other
  controls, never itself) must claim nothing.

Each case is one weightless run of the whole design (no network, no torch model), about a
minute on one core; the power figures (`reader:Q`) are bench/claim_power.py's.
"""

from __future__ import annotations

import csv

import pytest

from kgprobe.cli import main
from kgprobe.studies.premise_ablation.family import depth_label

NON_REASONERS = ["heuristic:copy-random", "heuristic:copy-wording", "frequency", "copy",
                 "random", "general", "test-prior"]


def confirmatory(model: str, out) -> list[dict]:
    assert main(["study", "premise-ablation", "--ontology", "bundled", "--preset", "demo",
                 "--model", model, "--out", str(out), "--threads", "1"]) == 0
    with open(out / "comparisons.csv", encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["role"] == "confirmatory"]
    assert rows, "the run has a confirmatory family"
    return rows


def test_the_reader_is_claimed_on_every_cell_with_naming_distractors(tmp_path):
    rows = {r["comparison"]: r for r in confirmatory("reader", tmp_path / "reader")}
    for depth in (1, 2):
        row = rows[depth_label(depth, 2)]
        assert row["claimed"] == "True", row
        assert row["stopped_by"] in ("", "no control"), row
        # beyond each control by a margin, not a tie: every one-sided lower bound above 0
        bounds = [float(v) for k, v in row.items() if k.startswith("control_lo_") and v]
        assert bounds and min(bounds) > 0, row
    with open(tmp_path / "reader" / "report.md", encoding="utf-8") as fh:
        report = fh.read()
    assert "beyond every control" in report


@pytest.mark.parametrize("model", NON_REASONERS)
def test_a_model_that_reads_no_premise_as_a_reasoner_claims_nothing(tmp_path, model):
    rows = confirmatory(model, tmp_path / "run")
    assert [r["comparison"] for r in rows if r["claimed"] == "True"] == []
    tested = [r for r in rows if r["n_items"] not in ("", "0")]
    assert tested, "some confirmatory row had prompts to test"
    # a control's run is read against the other controls, never against itself
    own = f"control_diff_{model}"
    assert all(not r.get(own) for r in rows)
