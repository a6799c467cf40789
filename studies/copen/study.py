"""The COPEN study (Peng et al., EMNLP 2022): CSJ, CPJ and CiC probes of conceptual knowledge.

``kgprobe study copen`` runs on the official data or on sets generated from the knowledge
graph and feature norms.

    kgprobe study copen --task all --method zero-shot --from-kg --norms ../shared/data/mcrae \\
        --model smollm2-135m --limit 200 --out out/copen-zs

One run is one method and one model over one or all tasks. It is a list of resumable units
(`studies.runner`): zero-shot one unit per (task, scored text part), linear probing and
fine-tuning one unit per (task, seed). Expensive intermediate results (zero-shot scores,
frozen features) are cached under ``OUT/cache``, and generated data sets are written once to
``OUT/data`` in the official layout, so a rerun continues with the same items and numbers.
``OUT/config.json`` pins the settings: a rerun with different ones is refused.

Outputs: ``results.csv`` (one row per unit), ``predictions.jsonl`` (one record per item and
unit), ``report.md`` (the paper's tables for this run) and ``OUT/data`` (generated sets with
provenance, plus ``summary.json``: what the generators kept and skipped).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
from kgprobe.atomic import write_json, write_text
from kgprobe.errors import KgprobeError
from kgprobe.reasoning.copen_items import (
    SPLITS,
    TASK_DIRS,
    TASKS,
    by_split,
    load_official,
    select,
    write_official,
)
from kgprobe.studies.copen.analysis import (
    METRICS,
    baselines,
    chain_sizes,
    gold_levels,
    markdown_table,
    mean_std,
    pct,
    task_metrics,
    wilson,
)
from kgprobe.studies.copen.methods import (
    PARTS,
    Batchable,
    finetune,
    frozen_features,
    hyperparameters,
    linear_probe,
    zero_shot,
)
from kgprobe.studies.runner import Unit, read_unit, run_units, unit_path
from kgprobe.studies.settings import pin_settings

from .config import DEFAULT_SEEDS, METHODS, CopenConfig  # noqa: F401

COLUMNS = ["task", "method", "variant", "seed", "n", "n_unlabeled", *METRICS,
           "dev_accuracy", "best_epoch"]


# ----------------------------------------------------------------------------- data


def _warn(message: str) -> None:
    print(f"kgprobe: warning: {message}", file=sys.stderr)


def kg_ontology(store: str | None):
    """The store's ontology; the bundled OntoProbe ontology when the store is missing or empty."""
    from kgprobe.kg.store import KnowledgeGraph, default_store_path
    from kgprobe.ontology.loaders import bundled_source

    path = Path(store) if store else default_store_path()
    if path.exists():
        with KnowledgeGraph(path, create=False, read_only=True) as kg:
            if kg.count():
                return kg.ontology(), str(path)
    _warn(f"store {path} is missing or empty; generating from the bundled OntoProbe ontology "
          "(run `kgprobe kg load` to use another)")
    return bundled_source().ontology, "bundled OntoProbe ontology"


def generate_sets(cfg: CopenConfig, out: Path, tasks: Sequence[str]) -> dict[str, dict]:
    """Write generated sets for `tasks` that OUT/data does not hold yet; return their reports."""
    from kgprobe.reasoning.copen_kg import Taxonomy, generate_cic, generate_csj
    from kgprobe.reasoning.copen_norms import generate_cpj, read_norms

    summary_path = out / "data" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    todo = [t for t in tasks if not (out / "data" / TASK_DIRS[t] / "test.json").exists()]
    onto = tax = None
    for task in todo:
        t0 = time.perf_counter()
        if task == "cpj":
            items, report = generate_cpj(read_norms(cfg.norms), seed=cfg.seed)
            source = str(cfg.norms)
        else:
            if onto is None:
                onto, source_kg = kg_ontology(cfg.store)
                tax = Taxonomy.of(onto)
            gen = generate_csj if task == "csj" else generate_cic
            items, report = gen(onto, seed=cfg.seed, tax=tax)
            source = source_kg
        write_official(out / "data", task, by_split(items))
        summary[task] = {"source": source, "seed": cfg.seed, **report.to_json(),
                         "splits": {s: len(v) for s, v in by_split(items).items()},
                         "seconds": round(time.perf_counter() - t0, 1)}
        write_json(summary_path, summary)
    return summary


def load_sets(cfg: CopenConfig, out: Path) -> tuple[dict[str, dict[str, list]], dict]:
    """task → split → items (all items, before any limit), and the generation summary."""
    tasks = list(cfg.tasks)
    summary: dict = {}
    if cfg.from_kg:
        if "cpj" in tasks and not cfg.norms:
            if len(tasks) == 1:
                raise KgprobeError("CPJ from the knowledge graph needs feature norms: pass --norms "
                                   "the McRae norms folder (e.g. ../shared/data/mcrae)")
            _warn("no --norms: skipping CPJ (pass --norms the McRae norms folder to include it)")
            tasks.remove("cpj")
        summary = generate_sets(cfg, out, tasks)
        root = out / "data"
    else:
        root = Path(cfg.data)
    sets = {}
    for task in tasks:
        try:
            sets[task] = load_official(root, task)
        except KgprobeError:
            if len(cfg.tasks) == 1:
                raise
            _warn(f"{root}: no {TASK_DIRS[task]}/ files; skipping {task.upper()}")
    if not sets:
        raise KgprobeError(f"{root}: no COPEN task files; pass the folder holding task1/ task2/ task3/")
    return sets, summary


# ----------------------------------------------------------------------------- runner


class _Lazy:
    """The model, loaded on first use (a resumed run whose units are all done never loads it)."""

    def __init__(self, cfg: CopenConfig, loaded=None):
        self.cfg, self._loaded = cfg, loaded

    def __call__(self):
        if self._loaded is None:
            from kgprobe.models.loading import load_model

            self._loaded = load_model(self.cfg.model, device=self.cfg.device)
        return self._loaded


def _cached_json(path: Path, compute):
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    value = compute()
    write_json(path, value)
    return value


def _cached_arrays(path: Path, compute) -> dict[str, np.ndarray]:
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    value = compute()
    tmp = path.with_name(f".{path.name}.part.npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(tmp, **value)
    os.replace(tmp, path)
    return value


def _pooling(cfg: CopenConfig, model) -> str:
    from kgprobe.models.segments import default_pooling

    return cfg.pooling if cfg.pooling != "auto" else default_pooling(model())


def build_units(cfg: CopenConfig, out: Path, sets: dict, model: _Lazy) -> list[Unit]:
    units: list[Unit] = []
    for task, splits in sets.items():
        test = select(splits.get("test", []), cfg.limit_for(task), cfg.seed)
        sizes = chain_sizes(splits.get("test", [])) if task == "cpj" else None
        if not test:
            raise KgprobeError(f"{task.upper()}: no test items; pass data with a test split")
        if cfg.method == "zero-shot":
            parts = [p for p in (cfg.parts or PARTS[task]) if p in PARTS[task]]
            if not parts:
                raise KgprobeError(f"--parts {','.join(cfg.parts or [])}: none applies to {task.upper()} "
                                   f"(its parts: {', '.join(PARTS[task])})")

            def scores(task=task, test=test, parts=parts):
                return _cached_json(out / "cache" / f"zero-shot-{task}.json",
                                    lambda: zero_shot(model(), task, test, parts))

            for part in parts:
                def run(task=task, part=part, scores=scores, sizes=sizes):
                    recs = scores()[part]
                    return task_metrics(task, recs, sizes), recs

                units.append(Unit({"task": task, "method": cfg.method, "variant": part, "seed": "-"},
                                  run, len(test)))
            continue
        train, dev = _train_dev(task, splits, cfg)
        data = {"train": Batchable.of(task, train), "dev": Batchable.of(task, dev),
                "test": Batchable.of(task, test)}
        ooc = Batchable.of(task, test, context=False) if task == "cic" else None
        cfg_t = hyperparameters(cfg.method, task, cfg.hparams)
        if cfg.method == "linear":
            kept: dict[str, dict] = {}

            def feats(task=task, data=data, ooc=ooc, kept=kept):
                # Keyed by the configured pooling, so a resumed run with cached features never
                # loads the model just to resolve "auto"; read once for all seeds.
                if "f" not in kept:
                    def compute():
                        pooling = _pooling(cfg, model)
                        f = frozen_features(model(), data, pooling)
                        if ooc is not None:
                            f["ooc"] = frozen_features(model(), {"ooc": ooc}, pooling)["ooc"]
                        return f

                    kept["f"] = _cached_arrays(out / "cache" / f"features-{task}-{cfg.pooling}.npz", compute)
                return kept["f"]

            for seed in cfg.seeds:
                def run(task=task, seed=seed, data=data, feats=feats, cfg_t=cfg_t, sizes=sizes):
                    f = feats()
                    recs, info = linear_probe(task, data["train"], data["dev"], data["test"],
                                              {k: f[k] for k in ("train", "dev", "test")}, seed,
                                              cfg_t, f.get("ooc"))
                    return {**task_metrics(task, recs, sizes), **info}, recs

                units.append(Unit({"task": task, "method": cfg.method, "variant": cfg.pooling,
                                   "seed": seed}, run, len(test)))
        else:
            for seed in cfg.seeds:
                def run(task=task, seed=seed, data=data, ooc=ooc, cfg_t=cfg_t, sizes=sizes):
                    recs, info = finetune(model(), task, data["train"], data["dev"], data["test"], seed,
                                          cfg_t, _pooling(cfg, model), ooc)
                    return {**task_metrics(task, recs, sizes), **info}, recs

                units.append(Unit({"task": task, "method": cfg.method, "variant": cfg.pooling,
                                   "seed": seed}, run, len(test)))
    return units


def _train_dev(task: str, splits: dict, cfg: CopenConfig) -> tuple[list, list]:
    train = [it for it in splits.get("train", []) if it.label is not None]
    dev = [it for it in splits.get("dev", []) if it.label is not None]
    if not train or not dev:
        raise KgprobeError(f"{task.upper()}: {cfg.method} needs labeled train and dev items "
                           f"(found {len(train)} and {len(dev)}); pass data with train.json and dev.json")
    limit = cfg.limit_for(task, train=True)
    dev_limit = max(1, limit // 4) if limit else None
    return select(train, limit, cfg.seed), select(dev, dev_limit, cfg.seed)


def run_copen(cfg: CopenConfig, out: str | Path, *, loaded=None, progress: bool = True) -> list[dict]:
    """Run (or resume) the study; returns the result rows and writes the report."""
    if cfg.method not in METHODS:
        raise KgprobeError(f"unknown method '{cfg.method}'; use one of {', '.join(METHODS)}")
    unknown = [t for t in cfg.tasks if t not in TASKS]
    if unknown:
        raise KgprobeError(f"unknown task(s) {unknown}; use csj, cpj, cic or all")
    if bool(cfg.data) == bool(cfg.from_kg):
        raise KgprobeError("give exactly one data source: --data PATH or --from-kg")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pin_settings(out, cfg.pinned())
    sets, summary = load_sets(cfg, out)
    model = _Lazy(cfg, loaded)
    units = build_units(cfg, out, sets, model)
    rows = run_units(out, units, COLUMNS, progress=progress)
    write_text(out / "report.md", build_report(cfg, out, sets, summary, units))
    return rows


# ----------------------------------------------------------------------------- report

TASK_NAMES = {"csj": "CSJ", "cpj": "CPJ", "cic": "CiC"}


def build_report(cfg: CopenConfig, out: Path, sets: dict, summary: dict, units: Sequence[Unit]) -> str:
    done = [(u, *read_unit(unit_path(out, u))) for u in units if unit_path(out, u).exists()]
    rows = [r for _, r, _ in done]
    source = (f"generated from {summary.get('csj', summary.get('cic', {})).get('source', 'the knowledge graph')}"
              + (f" and the norms at {cfg.norms}" if cfg.norms and "cpj" in sets else "")
              if cfg.from_kg else f"official data at {cfg.data}")
    lines = [f"# COPEN — {cfg.method} — {cfg.model}", "",
             f"Data: {source} (seed {cfg.seed}); test items per task: "
             f"{_limit_text(cfg.limit)}"
             + (f"; seeds {', '.join(map(str, cfg.seeds))}" if cfg.method != "zero-shot" else "")
             + f". {len(done)}/{len(units)} units finished.", ""]
    lines += ["## Data", "", _data_table(cfg, sets), ""]
    if cfg.from_kg and summary:
        for task in sets:
            info = summary.get(task)
            if info:
                counts = ", ".join(f"{k} {v}" for k, v in info["counts"].items())
                lines.append(f"- {TASK_NAMES[task]} generation: {counts}.")
        lines.append("")
    if "cic" in sets:
        test = select(sets["cic"].get("test", []), cfg.limit_for("cic"), cfg.seed)
        lv = gold_levels(test)
        lines += ["CiC gold concept level in its chain (0 = most specific), evaluated items: "
                  + ", ".join(f"level {k}: {v}" for k, v in lv.items()) + ".", ""]
    lines += ["## Accuracy (%)", "", _accuracy_table(cfg, rows), ""]
    lines += _analysis_tables(cfg, rows)
    lines += _examples(done)
    return "\n".join(lines) + "\n"


def _limit_text(limit) -> str:
    if isinstance(limit, dict):
        return ", ".join(f"{TASK_NAMES[t]} {n}" for t, n in limit.items())
    return str(limit) if limit else "all"


def _data_table(cfg: CopenConfig, sets: dict) -> str:
    body = []
    for task, splits in sets.items():
        test_all = splits.get("test", [])
        test = select(test_all, cfg.limit_for(task), cfg.seed)
        base = baselines(task, test)
        body.append([TASK_NAMES[task], *(str(len(splits.get(s, []))) for s in SPLITS),
                     str(len(test)), str(sum(it.label is None for it in test)),
                     ", ".join(f"{k} {pct(v)}" for k, v in base.items()) or "–"])
    return markdown_table(["task", "train", "dev", "test", "evaluated", "unlabeled",
                           "baselines on the evaluated items (%)"], body)


def _by(rows, task):
    return [r for r in rows if r["task"] == task]


def _accuracy_table(cfg: CopenConfig, rows) -> str:
    if cfg.method == "zero-shot":
        body = []
        for task in TASKS:
            trs = _by(rows, task)
            if not trs:
                continue
            tied = {id(r) for r in trs if (r.get("tie_share") or 0) >= 0.99}
            informative = [r for r in trs if id(r) not in tied] or trs
            best = max(informative, key=lambda r: -1 if r["accuracy"] is None else r["accuracy"])
            for r in trs:
                mark = " (every choice ties)" if id(r) in tied else " (best)" if r is best and len(trs) > 1 else ""
                chain = f"{pct(r['chain_accuracy'])} ({r['n_chains']} chains)" if task == "cpj" else "–"
                body.append([TASK_NAMES[task], r["variant"] + mark, str(r["n"]), pct(r["accuracy"]),
                             wilson(r["accuracy"], r["n"]), chain])
        note = ("\n\nA causal model reads the CSJ query and the CPJ concept before anything that differs "
                "between the choices, so those parts tie for every choice; ties count against the "
                "gold (CSJ) or predict *false* (CPJ), as in the authors' code.")
        return markdown_table(["task", "scored part", "n", "accuracy", "95% interval", "CPJ chain-level"],
                              body) + note
    body = []
    for task in TASKS:
        trs = _by(rows, task)
        if not trs:
            continue
        per_seed = ", ".join(f"{r['seed']}: {pct(r['accuracy'])}" for r in trs)
        chain = mean_std([r["chain_accuracy"] for r in trs]) if task == "cpj" else "–"
        body.append([TASK_NAMES[task], str(trs[0]["n"]), mean_std([r["accuracy"] for r in trs]),
                     chain, per_seed, mean_std([r.get("dev_accuracy") for r in trs])])
    return markdown_table(["task", "n", "accuracy (mean ± std)", "CPJ chain-level", "per seed",
                           "dev accuracy"], body)


def _analysis_tables(cfg: CopenConfig, rows) -> list[str]:
    out: list[str] = []

    def variants(task):
        trs = _by(rows, task)
        if cfg.method == "zero-shot":
            return [(r["variant"], [r]) for r in trs]
        return [(f"seeds {', '.join(str(r['seed']) for r in trs)}", trs)] if trs else []

    csj = variants("csj")
    if csj:
        out += ["## CSJ: mean reciprocal rank of hard and easy distractors (%, Table 3)", "",
                markdown_table(["run", "answer", "hard distractors", "easy distractors"],
                               [[v, mean_std([r["mrr_answer"] for r in rs]),
                                 mean_std([r["mrr_hard"] for r in rs]),
                                 mean_std([r["mrr_easy"] for r in rs])] for v, rs in csj]), ""]
    cpj = variants("cpj")
    if cpj:
        out += ["## CPJ: false positives among the errors (%, Table 4)", "",
                markdown_table(["run", "errors", "false-positive share", "chain-level accuracy"],
                               [[v, ", ".join(str(r["n_errors"]) for r in rs),
                                 mean_std([r["fp_share"] for r in rs]),
                                 mean_std([r["chain_accuracy"] for r in rs])] for v, rs in cpj]), ""]
    cic = variants("cic")
    if cic:
        out += ["## CiC: out-of-context predictions and error types (%, Tables 5 and 13)", "",
                "Out-of-context: the error equals the prediction made without the sentence. "
                "Disambiguation vs wrong level: errors on entities with more than one chain.", "",
                markdown_table(["run", "errors", "out-of-context share", "errors with 2+ chains",
                                "disambiguation", "wrong level"],
                               [[v, ", ".join(str(r["n_errors"]) for r in rs),
                                 mean_std([r["ooc_share"] for r in rs]),
                                 ", ".join(str(r.get("n_multi_chain_errors", "–")) for r in rs),
                                 mean_std([r["disambiguation_share"] for r in rs]),
                                 mean_std([r["wrong_level_share"] for r in rs])] for v, rs in cic]), ""]
    return out


def _examples(done) -> list[str]:
    """A few errors per task, like the paper's Table 6 (from the task's most accurate unit)."""
    out = ["## Example errors", ""]
    best: dict[str, tuple] = {}
    for unit, row, preds in done:
        task = unit.key["task"]
        acc = row.get("accuracy") if row.get("accuracy") is not None else -1
        if task not in best or acc > best[task][1].get("accuracy", -1):
            best[task] = (unit, {**row, "accuracy": acc}, preds)
    for task in TASKS:
        if task not in best:
            continue
        unit, _row, preds = best[task]
        errs = [p for p in preds if p.get("correct") is False][:3]
        for p in errs:
            if task == "csj":
                out.append(f"- CSJ ({unit.key['variant']}): *{p['query']}* → predicted "
                           f"{p['candidates'][p['pred']]} ({p['kinds'][p['pred']] or '?'}), answer "
                           f"{p['candidates'][p['label']]}")
            elif task == "cpj":
                out.append(f"- CPJ ({unit.key['variant']}): \"{p['text']}\" is "
                           f"{'true' if p['label'] else 'false'}, predicted {'true' if p['pred'] else 'false'}")
            else:
                ooc = f"; without context: {p['candidates'][p['ooc_pred']]}" if "ooc_pred" in p else ""
                out.append(f"- CiC ({unit.key['variant']}): \"{p['sentence']}\" *{p['entity']}* "
                           f"(chains {' / '.join(' → '.join(c) for c in p['chains'])}): predicted "
                           f"{p['candidates'][p['pred']]}, gold {p['candidates'][p['label']]}{ooc}")
    return out + [""] if len(out) > 2 else []
