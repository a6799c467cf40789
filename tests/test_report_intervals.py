"""The memorization, multiple-choice, COPEN and STA reports give their headline numbers with
95% bootstrap intervals from the stored predictions (kgprobe.studies.stats.grouped_intervals)."""

from __future__ import annotations

import csv
import json
import re

import pytest

from kgprobe.cli import main
from kgprobe.studies.copen.report import _intervals as copen_intervals
from kgprobe.studies.multiple_choice.report import intervals as mc_intervals
from kgprobe.studies.sta.report import intervals as sta_intervals


def write_predictions(out, records):
    out.mkdir(parents=True, exist_ok=True)
    (out / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_memorization_report_gives_mrr_with_its_interval(tmp_path):
    out = tmp_path / "mem"
    assert main(["probe", "memorizing", "--model", "frequency", "--task", "domain",
                 "--out", str(out)]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "95% bootstrap intervals" in report
    with open(out / "results.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    line = next(l for l in report.splitlines() if l.startswith("domain") and "MRR" in l)
    value, lo, hi, n = re.search(r"MRR\s+([\d.]+) \[([\d.]+), ([\d.]+)\]\s+\(n = (\d+)\)", line).groups()
    # The interval is about the very number in the table, over its items.
    assert float(value) == pytest.approx(100 * float(row["MRR"]), abs=0.06)
    assert float(lo) < float(value) < float(hi) and int(n) == int(row["n"])


def test_multiple_choice_intervals_resample_questions(tmp_path):
    records = [{"set": "reasoning", "task": "rdfs9", "p1": "explicit", "answer": "text",
                "gold": "a", "predicted": "a" if k % 4 else "b"} for k in range(40)]
    write_predictions(tmp_path, records)
    text = mc_intervals(tmp_path)
    assert "accuracy  75.0% [" in text and "(n = 40)" in text


def test_sta_intervals_for_retrieval_mrr_and_map(tmp_path):
    records = ([{"task": "retrieval", "condition": "top-dec", "n": 2, "rr": 1 / (1 + k % 5)}
                for k in range(20)]
               + [{"task": "elicitation", "relation": "has", "context": "everyone",
                   "ap_vocab": 0.1 * (k % 4), "ap_sens": 0.5} for k in range(12)])
    write_predictions(tmp_path, records)
    found = sta_intervals(tmp_path)
    assert set(found) == {("MRR", 2), ("mAP_vocab", "has", "everyone"), ("mAP_sens", "has", "everyone")}
    lo, hi = map(float, re.findall(r"[\d.]+", found[("mAP_vocab", "has", "everyone")]))
    assert lo < 0.15 < hi  # the mean AP is 0.15
    assert found[("mAP_sens", "has", "everyone")] == " [0.500, 0.500]"


def test_copen_keeps_wilson_where_predictions_do_not_reproduce_the_accuracy():
    row = {"task": "csj", "variant": "query", "accuracy": 0.5}
    preds = [{"correct": k % 2 == 0} for k in range(10)] + [{"correct": None}]
    assert copen_intervals([(None, row, preds)])[id(row)].startswith("[")
    other = {**row, "accuracy": 0.7}
    assert id(other) not in copen_intervals([(None, other, preds)])
