"""The claim rule of a premise-ablation run: the confirmatory family, model − every control on
the same prompts, one-sided, intersection–union, Holm within the family only
(`studies/premise_ablation/family.py`, `contrasts.comparison_table`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kgprobe.studies.comparisons import Comparison, beyond_every, holm
from kgprobe.studies.premise_ablation.cells import Prompt
from kgprobe.studies.premise_ablation.contrasts import comparison_table
from kgprobe.studies.premise_ablation.control_report import claimed_lines
from kgprobe.studies.premise_ablation.family import BOTH, KNOWN_P1, P1_ONLY, P2_ONLY, verdict
from kgprobe.studies.premise_ablation.settings import ReportSettings

SETTINGS = ReportSettings(model="some-lm", rules=("rdfs9", "rdfs11"), templates=("manual",),
                          resamples=200, controls=("frequency", "copy"))
CELLS = [(p1, p2) for p1 in ("not", "implicit", "explicit") for p2 in ("not", "implicit", "explicit")]
GRID_ROWS = (BOTH, KNOWN_P1, P1_ONLY, P2_ONLY)


def prompts(value, n: int = 14, pairs: int = 1) -> list[Prompt]:
    """Every cell of two rules, n items each, `pairs` pseudoword pairs; `value(cell, i, pair)`
    is the prompt's MRR (the other metrics alike)."""
    out = []
    for rule in ("rdfs9", "rdfs11"):
        for i in range(n):
            for pair in range(pairs):
                for p1, p2 in CELLS:
                    v = float(value((p1, p2), i, pair))
                    out.append(Prompt(rule, p1, p2, "manual", 0, f"{rule}-{i}", pair, (v,) * 4))
    return out


def reasoner(cell, i, pair):
    """Right on every prompt with a written premise, weak elsewhere."""
    return 1.0 if "explicit" in cell else 0.1 + 0.01 * i


def heuristic(cell, i, pair):
    """A model that cannot reason: middling everywhere, varying by item and pair."""
    return 0.3 + 0.03 * (i % 5) + 0.02 * pair


def family(rows):
    """The level rows (model − every control in one cell), confirmatory or read descriptively."""
    return {r["comparison"]: r for r in rows if r["test"] == "one-sided vs every control"}


@pytest.fixture
def grid_confirmatory(monkeypatch):
    """The grid's level rows declared confirmatory, to test the rule's mechanics on grid data
    (the bundled design declares only the cells with naming distractors: a copier passes
    the grid's written cells, `family.COPIER_PASSES`)."""
    import kgprobe.studies.premise_ablation.family as declared

    monkeypatch.setattr(declared, "is_confirmatory", lambda label: True)


def test_the_grid_level_rows_are_tested_but_read_descriptively():
    rows, _ = comparison_table(prompts(reasoner), {"frequency": prompts(heuristic),
                                                   "copy": prompts(heuristic)}, SETTINGS)
    levels = family(rows)
    assert list(levels) == list(GRID_ROWS)
    for label, row in levels.items():
        assert row["role"] == "descriptive" and row["claimed"] is False, label
        assert row["finding"] == "yes" and row["control_lo_copy"] > 0, label
    assert not any(r["claimed"] for r in rows)
    text = "\n".join(claimed_lines([{k: str(v) for k, v in r.items()} for r in rows], SETTINGS))
    assert "a copier passes these cells" in text and "Nothing is claimed" in text


def test_a_reasoner_is_claimed_on_the_family_rows_and_descriptive_rows_never_are(grid_confirmatory):
    rows, columns = comparison_table(prompts(reasoner), {"frequency": prompts(heuristic),
                                                         "copy": prompts(heuristic)}, SETTINGS)
    assert {"role", "control_diff_copy", "control_lo_copy", "control_p_frequency",
            "model_value", "claimed", "control_hi_copy"} <= set(columns)
    rows_of = family(rows)
    assert list(rows_of) == list(GRID_ROWS)  # only the grid's: no depth or counterfactual cells
    for label in GRID_ROWS:
        row = rows_of[label]
        assert row["claimed"] is True and row["stopped_by"] == "", label
        assert row["model_value"] == pytest.approx(1.0)
        assert row["control_lo_copy"] > 0 and row["control_p_frequency"] < 0.05
        assert verdict(row, ["frequency", "copy"]) == "beyond every control"
    assert not any(r["claimed"] for r in rows if r["role"] == "descriptive")
    text = "\n".join(claimed_lines([{k: str(v) for k, v in r.items()} for r in rows], SETTINGS))
    assert "beyond every control" in text and "A control is not a reasoner" in text


def test_family_holm_runs_over_the_family_rows_only(grid_confirmatory):
    rows, _ = comparison_table(prompts(reasoner), {"frequency": prompts(heuristic),
                                                   "copy": prompts(heuristic)}, SETTINGS)
    mine = [r for r in rows if r["role"] == "confirmatory"]
    assert [r["p_holm"] for r in mine] == pytest.approx(list(holm([r["p"] for r in mine])))
    # the row's p is the largest of its per-control p's (intersection–union)
    for r in mine:
        assert r["p"] == max(r["control_p_frequency"], r["control_p_copy"])
    rest = [r for r in rows if r["role"] == "descriptive"]
    finite = [r for r in rest if math.isfinite(r["p"])]
    assert [r["p_holm"] for r in finite] == pytest.approx(list(holm([r["p"] for r in finite])))


def test_a_control_equal_to_the_model_or_a_little_above_it_stops_every_claim(grid_confirmatory):
    model = prompts(reasoner)
    rows, _ = comparison_table(model, {"frequency": prompts(heuristic), "copy": model}, SETTINGS)
    for label, row in family(rows).items():
        assert row["claimed"] is False and row["stopped_by"] == "copy", label
        assert row["control_diff_copy"] == pytest.approx(0.0)
        assert verdict(row, ["frequency", "copy"]).startswith("not beyond copy (+0.0")
    above = prompts(lambda cell, i, pair: min(1.0, reasoner(cell, i, pair)) - 0.02)
    rows, _ = comparison_table(above, {"frequency": prompts(heuristic), "copy": model}, SETTINGS)
    assert not any(r["claimed"] for r in rows)
    assert all(r["control_diff_copy"] < 0 for r in family(rows).values())


def test_a_control_run_is_read_against_the_other_controls_never_itself(grid_confirmatory):
    """`--model frequency`: the frequency control's prompts are the model's own; its rows are
    tested against copy alone, and a copy that is as good claims nothing."""
    settings = ReportSettings(**{**SETTINGS.__dict__, "model": "frequency"})
    model = prompts(reasoner)
    rows, columns = comparison_table(model, {"frequency": model, "copy": prompts(heuristic)},
                                     settings)
    assert "control_diff_copy" in columns and "control_diff_frequency" not in columns
    assert all(r["claimed"] for r in family(rows).values())  # not forced false by its name
    rows, _ = comparison_table(model, {"frequency": model, "copy": model}, settings)
    assert not any(r["claimed"] for r in rows)
    text = "\n".join(claimed_lines([{k: str(v) for k, v in r.items()} for r in rows], settings))
    assert "is itself a control" in text and "Nothing is claimed" in text


def test_an_empty_cell_is_not_testable_and_no_control_claims_nothing(grid_confirmatory):
    nobody_known = [p for p in prompts(reasoner) if p.p1 != "implicit"]
    rows, _ = comparison_table(nobody_known, {"frequency": prompts(heuristic),
                                              "copy": prompts(heuristic)}, SETTINGS)
    row = family(rows)[KNOWN_P1]
    assert row["claimed"] is False and math.isnan(row["p"])
    assert verdict(row, ["frequency", "copy"]) == "not testable: no prompts"
    assert family(rows)[BOTH]["claimed"] is True  # the empty row does not enter Holm
    rows, _ = comparison_table(prompts(reasoner), {}, ReportSettings(
        **{**SETTINGS.__dict__, "controls": ()}))
    assert not any(r["claimed"] for r in rows)


def test_with_several_pairs_the_crossed_test_still_separates_reasoner_from_heuristic(grid_confirmatory):
    settings = ReportSettings(**{**SETTINGS.__dict__, "pairs": 3})
    rows, _ = comparison_table(prompts(reasoner, n=10, pairs=3),
                               {"frequency": prompts(heuristic, n=10, pairs=3),
                                "copy": prompts(heuristic, n=10, pairs=3)}, settings)
    assert all(r["claimed"] for r in family(rows).values())
    rows, _ = comparison_table(prompts(heuristic, n=10, pairs=3),
                               {"frequency": prompts(heuristic, n=10, pairs=3),
                                "copy": prompts(reasoner, n=10, pairs=3)}, settings)
    assert not any(r["claimed"] for r in rows)


def test_beyond_every_is_the_largest_p_and_names_the_controls_that_stop_it():
    up = Comparison("a", "one-sided", 0.2, 0.1, 0.3, 0.001, "20")
    flat = Comparison("b", "one-sided", 0.01, -0.02, 0.04, 0.3, "20")
    assert beyond_every({"frequency": up, "copy": up}) == (0.001, [])
    assert beyond_every({"frequency": up, "copy": flat}) == (0.3, ["copy"])
    p, stopping = beyond_every({})
    assert math.isnan(p) and stopping == []
    assert np.isnan(beyond_every({"copy": Comparison("c", "one-sided", *[math.nan] * 4, "0")})[0])


def test_a_premise_blind_model_above_every_control_is_stopped_by_its_unwritten_self():
    """frequency's own run: above copy where distractors pull copy off the gold, but the same
    ranking whatever is written, so no row is claimed."""
    blind = prompts(lambda cell, i, pair: 0.8 + 0.01 * (i % 3))
    rows, _ = comparison_table(blind, {"frequency": prompts(heuristic),
                                       "copy": prompts(heuristic)}, SETTINGS)
    for row in family(rows).values():
        assert row["claimed"] is False and row["stopped_by"] == "unwritten"
        assert row["control_lo_copy"] > 0 and row["control_diff_unwritten"] == pytest.approx(0)
        assert verdict(row, ["frequency", "copy"]).startswith("not beyond its own unwritten")
