"""Generated probe sets, results and predictions load with Hugging Face `datasets` unchanged
(the README's one-liner): `load_dataset("json", data_files=…)`, `load_dataset("csv", …)`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import datasets

from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.loaders import bundled_source
from kgprobe.reasoning.materialize import materialize


def cli(*args: str, cwd: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_json(files: list[Path], cache: Path) -> None:
    ds = datasets.load_dataset("json", data_files=[str(f) for f in files], split="train",
                               cache_dir=str(cache))
    rows = [r for f in files for r in lines(f)]
    assert ds.num_rows == len(rows) > 0
    assert set(ds.column_names) == {k for r in rows for k in r}
    assert ds[0]["id"] == rows[0]["id"]


def test_probe_sets_results_and_predictions_load_with_datasets(tmp_path):
    datasets.disable_progress_bars()
    with KnowledgeGraph(tmp_path / "store") as kg:
        kg.add_sources([bundled_source()])
        materialize(kg)
    cli("generate", "memorizing", "--store", "store", "--out", "mem", cwd=tmp_path)
    cli("generate", "reasoning", "--store", "store", "--out", "rea", cwd=tmp_path)
    cache = tmp_path / "hf"
    check_json(sorted((tmp_path / "mem").glob("*.jsonl")), cache)
    # every rule at once: `slots` has the same two keys in every file ([Y] "" where a rule
    # has one entity), so Arrow reads one struct shape
    rule_files = sorted((tmp_path / "rea").glob("*.jsonl"))
    assert len(rule_files) == 6
    check_json(rule_files, cache)
    cli("study", "memorization", "--model", "frequency", "--task", "domain", "--template", "0",
        "--limit", "5", "--threads", "1", "--out", "run", cwd=tmp_path)
    check_json([tmp_path / "run" / "predictions.jsonl"], cache)
    results = datasets.load_dataset("csv", data_files=str(tmp_path / "run" / "results.csv"),
                                    split="train", cache_dir=str(cache))
    assert results.num_rows == 1 and results[0]["task"] == "domain" and results[0]["n"] == 5
