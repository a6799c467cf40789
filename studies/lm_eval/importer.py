"""`kgprobe import lm-eval`: lm-evaluation-harness's logged samples back into kgprobe run folders.

lm-eval's ``--log_samples`` writes, per task, ``samples_<task>_<time>.jsonl``: each line holds
the exported document and one log-likelihood per choice (``filtered_resps``). Those scores are
ranked the way kgprobe ranks its own (`kgprobe.studies.metrics`), and written as the studies
write theirs (one unit file per task, ``results.csv``, ``predictions.jsonl``), so a run on vLLM,
several GPUs or an API model gets the same tables and figures:

* memorizing tasks → ``RUN/memorization/`` (the memorization study's columns),
* reasoning tasks → ``RUN/premise-ablation/`` (its explicit/explicit cell, manual templates;
  the pseudowords were the letters X and Y).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kgprobe.atomic import write_json
from kgprobe.errors import KgprobeError
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.items import RULE_RELATIONS
from kgprobe.studies.metrics import evaluate, ranks_of
from kgprobe.studies.run_lock import run_folder_lock
from kgprobe.studies.runner import Unit, run_units, unit_path
from kgprobe.studies.settings import STUDY_KEY

#: The unit rows of the memorization and premise-ablation studies (tested equal; a study
#: package is not imported here: studies never import each other).
MEMORIZATION_COLUMNS = ["task", "template", "masks", "pooling", "split", "n", "R@1", "R@5",
                        "R@10", "MRR", "MRRa", "protocol", "study_protocol",
                        "ranking"]
ABLATION_COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", "R@1", "R@5", "MRR", "MRRa",
                    "protocol", "ranking"]
FOLDERS = {"memorizing": "memorization", "reasoning": "premise-ablation"}
_SAMPLES = re.compile(r"^samples_(kgprobe_.+)_(\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


@dataclass
class Sample:
    """One logged document and the log-likelihood of each of its choices."""

    doc: dict
    scores: list[float]


def find_samples(results: Path) -> dict[str, Path]:
    """The newest samples file of every kgprobe task under `results` (one model's output)."""
    newest: dict[str, tuple[str, Path]] = {}
    folders = set()
    for path in sorted(Path(results).rglob("samples_kgprobe_*.jsonl")):
        m = _SAMPLES.match(path.name)
        if not m:
            continue
        folders.add(path.parent)
        task, stamp = m.groups()
        if task not in newest or stamp > newest[task][0]:
            newest[task] = (stamp, path)
    if not newest:
        raise KgprobeError(f"{results}: no samples_kgprobe_*.jsonl; run lm_eval with "
                           "--log_samples --output_path on an exported task folder")
    if len(folders) > 1:
        raise KgprobeError(f"{results}: samples of several models ({', '.join(sorted(p.name for p in folders))}); "
                           "pass one model's folder")
    return {task: path for task, (_, path) in sorted(newest.items())}


def read_samples(path: Path) -> list[Sample]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        resps = row.get("filtered_resps") or [r[0] for r in row["resps"]]
        out.append((row["doc_id"], Sample(row["doc"], [float(r[0]) for r in resps])))
    return [s for _, s in sorted(out, key=lambda pair: pair[0])]


def unit_result(samples: list[Sample], ks: tuple[int, ...]) -> tuple[dict, list[dict]]:
    """(metrics, predictions) of one task, as a study unit returns them."""
    scores = [np.asarray(s.scores, dtype=np.float64) for s in samples]
    golds = [s.doc["gold"] for s in samples]
    filtered = samples[0].doc.get("ranking") == "filtered" if samples else False
    metrics = evaluate(scores, golds, ks=ks, filtered=filtered)
    preds = []
    for s, row, gold in zip(samples, scores, golds):
        order = np.argsort(-row, kind="stable")[:10]
        preds.append({"id": s.doc["id"], "item": s.doc["id"], "pair": 0, "subject": s.doc["subject"],
                      "prompt": f"{s.doc['text']}[MASK]{s.doc['suffix']}",
                      "answers": s.doc["answers"],
                      "gold_ranks": [int(r) for r in ranks_of(row, gold, filtered=filtered)],
                      "top10": [[s.doc["choices"][i], round(float(row[i]), 4)] for i in order]})
    return metrics, preds


def _unit(study: str, samples: list[Sample]) -> Unit:
    doc = samples[0].doc

    protocol = doc.get("protocol", "all")  # written by `kgprobe export lm-eval`

    def run(samples=samples):
        metrics, preds = unit_result(samples, (1, 5, 10) if study == "memorizing" else (1, 5))
        # `export lm-eval --protocol paper` names its documents "<task>-paper-…"
        recipe = "paper" if "-paper-" in str(doc.get("id", "")) else "default"
        return {**metrics, "protocol": protocol, "study_protocol": recipe,
                "ranking": doc.get("ranking", "raw")}, preds

    if study == "memorizing":
        key = {"task": doc["task"], "template": int(doc["template"]), "masks": "-", "pooling": "sum",
               "split": doc.get("split", "test")}
    else:
        # The exported hypothesis is written under its relation's hypothesis template.
        relation = RULE_RELATIONS[doc["task"]][2]
        key = {"rule": doc["task"], "p1": "explicit", "p2": "explicit", "template": "manual",
               "variant": load_templates()[relation].hypothesis}
    return Unit(key, run, len(samples))


def import_lm_eval(results: str | Path, out: str | Path) -> dict[str, Path]:
    """Write one kgprobe run folder per study found; returns {study folder name: path}."""
    results, out = Path(results), Path(out)
    if not results.is_dir():
        raise KgprobeError(f"{results}: not a folder; pass lm_eval's --output_path")
    by_study: dict[str, list[Unit]] = {}
    docs: dict[str, dict] = {}
    files = find_samples(results)
    for task, path in files.items():
        samples = read_samples(path)
        if not samples:
            continue
        study = samples[0].doc.get("study")
        if study not in FOLDERS:
            raise KgprobeError(f"{path}: its documents were not written by `kgprobe export "
                               "lm-eval`; export the tasks again")
        by_study.setdefault(study, []).append(_unit(study, samples))
        docs.setdefault(study, samples[0].doc)
    written = {}
    for study, units in by_study.items():
        folder = out / FOLDERS[study]
        with run_folder_lock(folder):  # one writer per run folder, as the studies
            if not (folder / "config.json").exists():
                # the study that reads the folder (`kgprobe report`, `Results.from_path`); for
                # premise ablation, what its report reads to name the protocol and the ranking
                doc = docs[study]
                pinned = {STUDY_KEY: FOLDERS[study]}  # the folders are named after the studies
                if study == "reasoning":
                    pinned.update(candidates=doc.get("protocol", "all"),
                                  ranking=doc.get("ranking", "raw"))
                write_json(folder / "config.json", pinned)
            columns = MEMORIZATION_COLUMNS if study == "memorizing" else ABLATION_COLUMNS
            for unit in units:  # a re-import replaces what an earlier one wrote
                unit_path(folder, unit).unlink(missing_ok=True)
            # premise ablation's results.csv is its report's (cells with intervals): `kgprobe
            # import` rebuilds the report next, so the runner writes only the unit files
            run_units(folder, units, columns, progress=False, results=study != "reasoning")
            write_json(folder / "lm_eval.json", {
                "imported_from": str(results.resolve()),
                "samples": {t: str(p.resolve()) for t, p in files.items()},
                "model": _model_of(files), "note": "scores are lm-eval's summed log-likelihoods"})
        written[FOLDERS[study]] = folder
    return written


def _model_of(files: dict[str, Path]) -> dict:
    """The model lm-eval ran, from the results file beside the samples (if any)."""
    folder = next(iter(files.values())).parent
    for path in sorted(folder.glob("results_*.json"), reverse=True):
        config = json.loads(path.read_text(encoding="utf-8")).get("config", {})
        return {"model": config.get("model"), "model_args": config.get("model_args")}
    return {}
