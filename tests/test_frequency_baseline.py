"""The memorization study's frequency baseline reproduces OntoProbe's Table 4 baseline row.

The reference numbers below are the paper's, not ours: Wu et al. (ACL 2023), "Do PLMs Know and
Understand Ontological Knowledge?", Table 4, row "Frequency Baseline" (percent). The rule that
reproduces them (README, memorization section): count every gold of every train record (records
0–9), rank by count, ties by first appearance in the train split, then the rest in seeded random
order.
"""

from __future__ import annotations

import csv

import pytest
from kgprobe.cli import main
from kgprobe.studies.memorization.study import reference_sets, run_memorization
from kgprobe.models.baselines import FrequencyBaseline

# OntoProbe (ACL 2023) Table 4, "Frequency Baseline" column: R@1, R@5, MRR in percent.
PAPER_TABLE4_BASELINE = {
    "type": {"R@1": 15.4, "R@5": 15.6, "MRR": 19.6},           # TP
    "subClassOf": {"R@1": 8.1, "R@5": 38.9, "MRR": 23.7},      # SCO
    "subPropertyOf": {"R@1": 25.6, "R@5": 28.2, "MRR": 31.2},  # SPO
    "domain": {"R@1": 43.3, "R@5": 60.0, "MRR": 50.9},         # DM
    "range": {"R@1": 10.7, "R@5": 53.6, "MRR": 31.2},          # RG
}
TOLERANCE = 1.5  # points (issue 13)
ALL_TEST_RECORDS = 100_000  # a --limit above every set's size: records 20+ of each file


def test_the_command_matches_table_4_within_tolerance(tmp_path):
    """`kgprobe probe memorizing --model frequency --task all`, default settings, every template."""
    out = tmp_path / "freq"
    assert main(["probe", "memorizing", "--model", "frequency", "--task", "all", "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({r["task"] for r in rows}) == sorted(PAPER_TABLE4_BASELINE)
    assert len(rows) == 3 + 3 + 1 + 1 + 1  # TP and SCO have three manual templates
    for row in rows:
        for metric, paper in PAPER_TABLE4_BASELINE[row["task"]].items():
            ours = 100 * float(row[metric])
            assert abs(ours - paper) <= TOLERANCE, f"{row['task']} t{row['template']} {metric}: {ours:.1f} vs {paper}"


def test_the_full_test_split_gives_the_papers_recalls_exactly(tmp_path):
    """The paper's baseline row was computed on every test record (TP 8,839, SCO 701), not on the
    500 its models saw: there R@1 and R@5, which depend on the train split only, are exact."""
    rows = run_memorization("frequency", tmp_path, templates="0", limit=ALL_TEST_RECORDS, progress=False)
    by_task = {r["task"]: r for r in rows}
    assert {t: r["n"] for t, r in by_task.items()} == {
        "type": 8839, "subClassOf": 701, "subPropertyOf": 39, "domain": 30, "range": 28}
    for task, paper in PAPER_TABLE4_BASELINE.items():
        assert round(100 * by_task[task]["R@1"], 1) == paper["R@1"], task
        assert round(100 * by_task[task]["R@5"], 1) == paper["R@5"], task
        assert abs(100 * by_task[task]["MRR"] - paper["MRR"]) <= TOLERANCE, task


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_other_seeds_stay_within_tolerance(tmp_path, seed):
    """Only the random tail after the train golds depends on the seed, so only MRR moves."""
    rows = run_memorization("frequency", tmp_path, templates="0", seed=seed, progress=False)
    for row in rows:
        for metric, paper in PAPER_TABLE4_BASELINE[row["task"]].items():
            assert abs(100 * row[metric] - paper) <= TOLERANCE, (row["task"], metric, seed)


def test_ties_go_to_the_first_appearance():
    base = FrequencyBaseline([["b"], ["a", "c"], ["a"], ["b"]], seed=0)
    cands = ["a", "b", "c", "d", "e"]
    order = [cands[i] for i in base.ranking(cands)]
    assert order[:3] == ["b", "a", "c"]  # b and a twice each, b first; then c
    assert set(order[3:]) == {"d", "e"}
    mapping = FrequencyBaseline({"x": 1, "y": 2, "z": 1}, seed=0)
    assert [["x", "y", "z", "w"][i] for i in mapping.ranking(["x", "y", "z", "w"])] == ["y", "x", "z", "w"]


def test_the_tie_rule_decides_range_r_at_1():
    """RG's train split has "place" and "person" twice each, "place" first. Breaking the tie the
    other way (as a random tie-break may) gives 39.3 R@1 instead of the paper's 10.7."""
    mset = reference_sets(["range"])["range"]
    train = [r.answers for r in mset.records if r.split == "train"]
    test = [r for r in mset.records if r.split == "test"]

    def r_at_1(golds):
        top = mset.candidates[FrequencyBaseline(golds).ranking(mset.candidates)[0]]
        return round(100 * sum(top in r.answers for r in test) / len(test), 1)

    assert r_at_1(train) == PAPER_TABLE4_BASELINE["range"]["R@1"]
    assert r_at_1(train[::-1]) == 39.3  # "person" now appears first
