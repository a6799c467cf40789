"""The memorization study runner: baselines, outputs, resume."""

from __future__ import annotations

import csv
import json

import pytest

from kgprobe.studies.memorization.study import COLUMNS, reference_sets, run_memorization


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_frequency_baseline_on_the_paper_sets(tmp_path):
    rows = run_memorization("frequency", tmp_path, tasks=["subPropertyOf", "domain"], progress=False)
    by_task = {r["task"]: r for r in rows}
    # The baseline ranks the train golds first: the paper reports R@1 25.6 (SPO) and 43.3 (DM)
    # for it, and those depend on the train split only, not on the random order after it.
    assert round(100 * by_task["subPropertyOf"]["R@1"], 1) == 25.6
    assert round(100 * by_task["domain"]["R@1"], 1) == 43.3
    assert by_task["subPropertyOf"]["n"] == 39 and by_task["domain"]["n"] == 30
    table = read_rows(tmp_path / "results.csv")
    assert list(table[0]) == COLUMNS
    assert all(0.0 <= float(r[m]) <= 1.0 for r in table for m in ("R@1", "R@5", "R@10", "MRR", "MRRa"))
    preds = [json.loads(l) for l in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 39 + 30
    assert all(len(p["top10"]) == 10 and p["gold_ranks"] for p in preds)


def test_default_limits_follow_the_paper(tmp_path):
    rows = run_memorization("random", tmp_path, tasks=["type", "range"], templates="0", progress=False)
    assert {r["task"]: r["n"] for r in rows} == {"type": 500, "range": 28}


def test_every_gold_is_a_candidate():
    for mset in reference_sets().values():
        cands = set(mset.candidates)
        assert all(a in cands for r in mset.records for a in r.answers)


def test_a_rerun_skips_finished_units_and_gives_the_same_numbers(tmp_path):
    first = run_memorization("random", tmp_path, tasks=["domain", "range"], progress=False)
    before = (tmp_path / "results.csv").read_text()
    # Simulate a crash after the first unit: its file stays, the second is gone.
    units = sorted((tmp_path / "units").iterdir())
    stamp = units[0].stat().st_mtime_ns
    units[1].unlink()
    again = run_memorization("random", tmp_path, tasks=["domain", "range"], progress=False)
    assert units[0].stat().st_mtime_ns == stamp  # not recomputed
    assert (tmp_path / "results.csv").read_text() == before and again == first


def test_a_rerun_with_another_limit_redoes_only_the_units_it_changes(tmp_path):
    run_memorization("random", tmp_path, tasks=["type", "domain"], templates="0", limit=5, progress=False)
    domain = next(p for p in (tmp_path / "units").iterdir() if "domain" in p.name)
    stamp = domain.stat().st_mtime_ns
    # domain has 30 test records: limits 5 and 40 differ, so both units are stale...
    rows = run_memorization("random", tmp_path, tasks=["type", "domain"], templates="0", limit=40,
                            progress=False)
    assert {r["task"]: r["n"] for r in rows} == {"type": 40, "domain": 30}
    assert domain.stat().st_mtime_ns != stamp
    # ...while limits 40 and 50 give domain the same 30 items: it is kept.
    stamp = domain.stat().st_mtime_ns
    rows = run_memorization("random", tmp_path, tasks=["type", "domain"], templates="0", limit=50,
                            progress=False)
    assert {r["task"]: r["n"] for r in rows} == {"type": 50, "domain": 30}
    assert domain.stat().st_mtime_ns == stamp
    assert [r["n"] for r in read_rows(tmp_path / "results.csv")] == ["50", "30"]


def test_a_rerun_with_another_seed_or_model_is_refused(tmp_path):
    from kgprobe.errors import StudyError

    run_memorization("random", tmp_path, tasks=["domain"], templates="0", limit=5, progress=False)
    before = (tmp_path / "results.csv").read_text()
    for other in ({"model": "random", "seed": 1}, {"model": "frequency", "seed": 0}):
        with pytest.raises(StudyError, match="other settings"):
            run_memorization(other["model"], tmp_path, tasks=["domain"], templates="0", limit=5,
                             seed=other["seed"], progress=False)
    assert (tmp_path / "results.csv").read_text() == before
    assert json.loads((tmp_path / "config.json").read_text())["seed"] == 0


@pytest.mark.parametrize("bad", [{"templates": "x"}, {"masks": "two"}, {"split": "val"},
                                 {"limit": -1}, {"tasks": ["colour"]}])
def test_bad_settings_are_refused_before_any_work(tmp_path, bad):
    from kgprobe.errors import KgprobeError

    with pytest.raises(KgprobeError):
        run_memorization("random", tmp_path / "out", progress=False, **bad)
    assert not (tmp_path / "out").exists()


def test_k_candidates_rank_golds_among_seeded_distractors(tmp_path):
    rows = run_memorization("random", tmp_path, tasks=["range"], candidates="20", progress=False)
    assert rows[0]["protocol"] == "K=20" and rows[0]["n"] == 28
    preds = [json.loads(l) for l in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert all(max(p["gold_ranks"]) <= 20 for p in preds)
    # Chance against 20 candidates is far above chance against 785.
    full = run_memorization("random", tmp_path / "all", tasks=["range"], progress=False)
    assert full[0]["protocol"] == "all" and rows[0]["MRR"] > full[0]["MRR"]
