"""`kgprobe export lm-eval` / `import lm-eval`, and lm-eval's hf backend against kgprobe's scorer."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kgprobe.cli import main
from kgprobe.prompts.lm_eval_tasks import choose_candidates, with_letters
from kgprobe.reasoning.items import sample_items
from kgprobe.studies.lm_eval import harness_utils
from kgprobe.studies.lm_eval.export import ExportSettings, export_lm_eval
from kgprobe.studies.lm_eval.importer import (
    _SAMPLES,
    ABLATION_COLUMNS,
    MEMORIZATION_COLUMNS,
    import_lm_eval,
    read_samples,
)
from kgprobe.studies.memorization.study import COLUMNS as MEMORIZATION_STUDY_COLUMNS
from kgprobe.studies.metrics import evaluate, item_metrics
from kgprobe.studies.premise_ablation.columns import (
    UNIT_COLUMNS as ABLATION_STUDY_COLUMNS,
)

HAS_LM_EVAL = importlib.util.find_spec("lm_eval") is not None
needs_lm_eval = pytest.mark.skipif(not HAS_LM_EVAL, reason="lm-eval is not installed: "
                                   "pip install -e '.[lmeval]' (make test installs it)")


def test_the_harness_metrics_are_kgprobes():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 12))
        scores = rng.integers(-4, 2, size=n).astype(float)  # many ties
        if rng.random() < 0.2:
            scores[rng.integers(n)] = np.nan
        gold = sorted(set(rng.integers(0, n, size=int(rng.integers(1, 3))).tolist()))
        got = harness_utils.process_results({"gold": gold}, [(s, False) for s in scores])
        want = item_metrics(scores, gold, ks=(1, 5))
        assert got == {"r@1": want["R@1"], "r@5": want["R@5"], "mrr": want["MRR"]}


def test_the_imported_tables_are_the_studies_tables():
    assert MEMORIZATION_COLUMNS == MEMORIZATION_STUDY_COLUMNS
    assert ABLATION_COLUMNS == ABLATION_STUDY_COLUMNS


def test_candidates_are_the_gold_and_seeded_distractors():
    from kgprobe.reasoning.distractors import Protocol

    cands = [f"c{i}" for i in range(50)]
    answers = ["c7", "c3", "c30"]
    choices, gold = choose_candidates(cands, answers, Protocol(10), "1:a")
    # every answer is a gold (as the memorization study ranks a record), never a distractor
    assert len(choices) == 10 and sorted(choices[g] for g in gold) == ["c3", "c30", "c7"]
    assert choices == Protocol(10).candidates(cands, answers, seed="1:a")
    assert choices == sorted(choices, key=cands.index)
    assert choose_candidates(cands, answers, Protocol(10), "1:a") == (choices, gold)
    assert choose_candidates(cands, answers, Protocol(10), "2:a")[0] != choices
    every, golds = choose_candidates(cands, answers, Protocol(), 0)
    assert every == cands and golds == [3, 7, 30]


def test_reasoning_sample_is_the_premise_ablation_sample():
    from kgprobe.studies.premise_ablation.study import select_items

    items = {"rdfs9": list(range(40)), "rdfs11": list(range(5))}
    assert select_items(items, 7, 3) == {r: sample_items(v, r, 7, 3) for r, v in items.items()}
    assert with_letters("[X] is a [Y] .") == "X is a Y ."


def _export(out: Path, **kw) -> dict:
    settings = dict(studies=("memorizing",), relations=("type",), templates="0", candidates=8,
                    limit=6)
    settings.update(kw)
    return export_lm_eval(out, ExportSettings(**settings))


def test_export_writes_tasks_groups_and_documents(tmp_path):
    counts = export_lm_eval(tmp_path, ExportSettings(relations=("domain",), rules=("rdfs9",),
                                                     candidates=20, limit=4))
    assert counts == {"kgprobe_memorizing_domain_t0": 4, "kgprobe_reasoning_rdfs9": 4}
    docs = [json.loads(line) for line in
            (tmp_path / "kgprobe_reasoning_rdfs9.jsonl").read_text().splitlines()]
    for doc in docs:
        assert len(doc["choices"]) == 20 and doc["choices"][doc["target"]] == doc["answers"][0]
        assert "[X]" not in doc["text"] and " X " in f" {doc['text']}"
        assert doc["text"].endswith("Therefore , X is a particular ")
        assert doc["suffix"] == " ." and doc["continuations"] == doc["choices"]  # only a full stop
    yaml_text = (tmp_path / "kgprobe_reasoning_rdfs9.yaml").read_text()
    assert "output_type: multiple_choice" in yaml_text and "letters X and Y" in yaml_text
    assert "doc_to_choice: continuations" in yaml_text
    assert "process_results: !function utils.process_results" in yaml_text
    assert "kgprobe_reasoning_rdfs9" in (tmp_path / "kgprobe_reasoning.yaml").read_text()
    # a memorizing document ranks what the memorization study ranks for its record (the
    # same seeded distractors, every answer a gold); lm-eval's target is the first answer
    from kgprobe.reasoning.distractors import Protocol
    from kgprobe.reasoning.memorizing_sets import reference_sets

    pool = reference_sets()["domain"].candidates
    for line in (tmp_path / "kgprobe_memorizing_domain_t0.jsonl").read_text().splitlines():
        doc = json.loads(line)
        record = doc["id"].rsplit("-t", 1)[0]
        assert doc["choices"] == Protocol(20).candidates(pool, doc["answers"], seed=f"0:{record}")
        assert {doc["choices"][g] for g in doc["gold"]} == set(doc["answers"]) & set(doc["choices"])
        assert doc["choices"][doc["target"]] == doc["answers"][0]
    assert (tmp_path / "utils.py").read_text() == Path(harness_utils.__file__).read_text()


def _fake_samples(folder: Path, export: Path, task: str, scores_of) -> None:
    """A samples file shaped like lm-eval 0.4's --log_samples output."""
    lines = []
    for i, line in enumerate((export / f"{task}.jsonl").read_text().splitlines()):
        doc = json.loads(line)
        resps = [[str(s), "False"] for s in scores_of(doc)]
        lines.append(json.dumps({"doc_id": i, "doc": doc, "target": str(doc["target"]),
                                 "resps": [[r] for r in resps], "filtered_resps": resps}))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"samples_{task}_2026-01-01T00-00-00.000001.jsonl").write_text("\n".join(lines))


def test_import_ranks_logged_scores_like_kgprobe_and_reports(tmp_path, capsys):
    export = tmp_path / "tasks"
    _export(export, studies=("memorizing", "reasoning"), rules=("rdfs11",), limit=5)
    results = tmp_path / "results" / "model"
    rng = np.random.default_rng(0)
    _fake_samples(results, export, "kgprobe_memorizing_type_t0",
                  lambda d: rng.normal(size=len(d["choices"])).round(3))
    _fake_samples(results, export, "kgprobe_reasoning_rdfs11", lambda d: [0.0] * len(d["choices"]))
    assert main(["import", "lm-eval", str(results.parent), "--out", str(tmp_path / "run")]) == 0
    memo = tmp_path / "run" / "memorization"
    rows = (memo / "results.csv").read_text().splitlines()
    assert rows[0].split(",") == MEMORIZATION_COLUMNS and rows[1].startswith("type,0,-,sum,test,5,")
    samples = read_samples(next(results.glob("samples_kgprobe_memorizing*")))
    want = evaluate([s.scores for s in samples], [s.doc["gold"] for s in samples], filtered=True)
    # the export's candidate protocol, the study protocol (default prompts) and ranking (filtered: each gold ranked without the other golds)
    assert rows[1].split(",")[-4:] == [f"{want['MRRa']:.4f}", "K=8", "default", "filtered"]
    assert (memo / "report.md").exists() and len((memo / "predictions.jsonl").read_text().splitlines()) == 5
    # All choices tied: pessimistic ranks, so every gold is last of its 8 choices.
    with open(tmp_path / "run" / "premise-ablation" / "results.csv", newline="") as fh:
        ablation = [r for r in csv.DictReader(fh) if r["n_items"] not in ("", "0")]
    assert {(r["rule"], r["p1"], r["p2"], r["template"]) for r in ablation} == {
        (rule, "explicit", "explicit", "manual") for rule in ("rdfs11", "mean")}
    assert all(float(r["MRR"]) == pytest.approx(0.125) and r["n_items"] == "5" for r in ablation)
    assert {(r["protocol"], r["ranking"]) for r in ablation} == {("K=8", "filtered")}
    assert "premise-ablation" in capsys.readouterr().out


def test_import_without_samples_is_a_one_line_error(tmp_path, capsys):
    assert main(["import", "lm-eval", str(tmp_path), "--out", str(tmp_path / "run")]) == 2
    assert "--log_samples" in capsys.readouterr().err


@needs_lm_eval
@pytest.mark.slow
def test_lm_eval_hf_backend_ranks_like_kgprobe(tmp_path):
    """lm-eval (hf backend) and kgprobe's own scorer on the same exported prompts and choices:
    the same log-likelihood per choice (to 1e-3) and the same R@1 and MRR; DM documents score
    the sentence after the slot too (continuation = choice + suffix), TP and rdfs9 do not."""
    from kgprobe.models.loading import load_model

    model = load_model("smollm2-135m")
    export = tmp_path / "tasks"
    _export(export, studies=("memorizing", "reasoning"), relations=("type", "domain"),
            rules=("rdfs9",), limit=4)
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
         f"pretrained={model.source},dtype=float32", "--device", "cpu", "--batch_size", "16",
         "--include_path", str(export), "--tasks", "kgprobe_memorizing,kgprobe_reasoning",
         "--log_samples", "--output_path", str(out)],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    scorer = model.scorer(pooling="sum")
    files = sorted(out.rglob("samples_kgprobe_*.jsonl"))
    assert len(files) == 3
    suffixed = {_SAMPLES.match(p.name).group(1): any(len(c) > len(ch) for s in read_samples(p)
                                          for c, ch in zip(s.doc["continuations"], s.doc["choices"]))
                for p in files}
    assert suffixed == {"kgprobe_memorizing_domain_t0": True, "kgprobe_memorizing_type_t0": False,
                        "kgprobe_reasoning_rdfs9": False}
    for path in files:
        samples = read_samples(path)
        assert len(samples) == 4
        ours = [scorer.score([f"{s.doc['text']}[MASK]{s.doc['suffix']}"], s.doc["choices"])[0]
                for s in samples]
        for s, row in zip(samples, ours):
            assert np.max(np.abs(np.asarray(s.scores) - row)) <= 1e-3, (path.name, s.doc["id"])
        golds = [s.doc["gold"] for s in samples]
        theirs, mine = evaluate([s.scores for s in samples], golds), evaluate(ours, golds)
        assert theirs["R@1"] == mine["R@1"] and math.isclose(theirs["MRR"], mine["MRR"])
    written = import_lm_eval(out, tmp_path / "run")
    assert set(written) == {"memorization", "premise-ablation"}


def test_export_command(tmp_path, capsys):
    out = tmp_path / "tasks"
    assert main(["export", "lm-eval", "--out", str(out), "--tasks", "memorizing", "--task", "DM",
                 "--candidates", "5", "--limit", "3"]) == 0
    assert "kgprobe_memorizing_domain_t0" in capsys.readouterr().out
    doc = json.loads((out / "kgprobe_memorizing_domain_t0.jsonl").read_text().splitlines()[0])
    assert len(doc["choices"]) == 5 and doc["text"].startswith("One has to be a particular ")
    # a DM slot is followed by a clause: lm-eval scores each choice with it, as kgprobe does
    assert doc["suffix"].startswith(" if ") and doc["continuations"] == [c + doc["suffix"] for c in doc["choices"]]
    assert main(["export", "lm-eval", "--out", str(out), "--studies", "memorising"]) == 2
    assert "--studies memorising" in capsys.readouterr().err
    assert main(["export", "lm-eval", "--out", str(out), "--candidates", "1"]) == 2
