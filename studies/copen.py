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

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..atomic import write_json, write_text
from ..errors import KgprobeError
from .copen_analysis import (
    METRICS, baselines, chain_sizes, gold_levels, markdown_table, mean_std, pct, task_metrics, wilson,
)
from .copen_data import SPLITS, TASK_DIRS, TASKS, by_split, load_official, select, write_official
from .copen_methods import (
    PARTS, Batchable, finetune, frozen_features, hyperparameters, linear_probe, zero_shot,
)
from .options import threads_option
from .runner import Unit, read_unit, run_units, unit_path

METHODS = ("zero-shot", "linear", "finetune")
COLUMNS = ["task", "method", "variant", "seed", "n", "n_unlabeled", *METRICS,
           "dev_accuracy", "best_epoch"]
DEFAULT_SEEDS = (42, 43, 44)


@dataclass
class CopenConfig:
    """Everything that decides the numbers of a run (pinned in OUT/config.json)."""

    model: str
    method: str
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    data: str | None = None  # official data folder or zip
    from_kg: bool = False
    store: str | None = None
    norms: str | None = None
    limit: int | dict | None = None  # test items per task (one number, or {task: number})
    train_limit: int | dict | None = None  # train items per task (dev: a quarter of it)
    seed: int = 0  # data generation and item selection
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    parts: list[str] | None = None  # zero-shot text parts (default: all of the task's)
    pooling: str = "auto"
    hparams: dict = field(default_factory=dict)
    device: str = "cpu"

    def limit_for(self, task: str, train: bool = False) -> int | None:
        value = self.train_limit if train else self.limit
        return value.get(task) if isinstance(value, dict) else value

    def pinned(self) -> dict:
        d = asdict(self)
        d.pop("device")
        return d


# ----------------------------------------------------------------------------- data


def _warn(message: str) -> None:
    print(f"kgprobe: warning: {message}", file=sys.stderr)


def kg_ontology(store: str | None):
    """The store's ontology; the bundled OntoProbe ontology when the store is missing or empty."""
    from ..kg.store import KnowledgeGraph, default_store_path
    from ..ontology.loaders import bundled_source

    path = Path(store) if store else default_store_path()
    if path.exists():
        with KnowledgeGraph(path, create=False) as kg:
            if kg.count():
                return kg.ontology(), str(path)
    _warn(f"store {path} is missing or empty; generating from the bundled OntoProbe ontology "
          "(run `kgprobe kg load` to use another)")
    return bundled_source().ontology, "bundled OntoProbe ontology"


def generate_sets(cfg: CopenConfig, out: Path, tasks: Sequence[str]) -> dict[str, dict]:
    """Write generated sets for `tasks` that OUT/data does not hold yet; return their reports."""
    from .copen_kg import Taxonomy, generate_cic, generate_csj
    from .copen_norms import generate_cpj, read_norms

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
            from ..prompts.models import load_model

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
    from .copen_scoring import default_pooling

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


def check_config(out: Path, cfg: CopenConfig) -> None:
    path = out / "config.json"
    pinned = cfg.pinned()
    if path.exists():
        before = json.loads(path.read_text(encoding="utf-8"))
        diff = sorted(k for k in set(before) | set(pinned) if before.get(k) != pinned.get(k))
        if diff:
            raise KgprobeError(f"{out}: holds a run with other settings ({', '.join(diff)}); "
                               "pass another --out or delete that folder")
    else:
        write_json(path, pinned)


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
    check_config(out, cfg)
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


# ----------------------------------------------------------------------------- CLI


def register_cli(sub) -> None:
    p = sub.add_parser("copen", help="COPEN: CSJ, CPJ, CiC by zero-shot, linear probing or fine-tuning",
                       description=__doc__.splitlines()[0])
    p.add_argument("--task", default="all", help="csj, cpj, cic or all (comma-separated list allowed)")
    p.add_argument("--method", required=True, choices=METHODS)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path, help="the official COPEN data (folder with task1/ task2/ "
                     "task3/, or copen_data.zip)")
    src.add_argument("--from-kg", action="store_true",
                     help="generate CSJ and CiC from the knowledge graph (CPJ from --norms)")
    p.add_argument("--norms", type=Path, default=None, help="McRae feature norms folder (CPJ with --from-kg)")
    p.add_argument("--store", type=Path, default=None,
                   help="store directory (default: $KGPROBE_STORE, else .kgprobe/store)")
    p.add_argument("--model", required=True, help="a preset (smollm2-135m, gemma3-270m), HF directory, "
                   "hub id or .gguf file")
    p.add_argument("--limit", type=_limit_arg, default=None,
                   help="test items per task: N, or per task as csj=N,cpj=N,cic=N (default: all)")
    p.add_argument("--train-limit", type=_limit_arg, default=None,
                   help="train items per task for linear/finetune, N or csj=N,…; dev gets a quarter "
                        "of it (default: all)")
    threads_option(p)
    p.add_argument("--seed", type=int, default=0, help="seed of data generation and item selection")
    p.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)),
                   help="training seeds of linear probing and fine-tuning (default 42,43,44)")
    p.add_argument("--parts", default=None, help="zero-shot scored parts, comma-separated: query, "
                   "candidate, concept, answer, all (default: every part of each task)")
    p.add_argument("--pooling", default="auto", choices=["auto", "first", "last", "mean"],
                   help="feature token (auto: first for masked LMs, last for causal LMs)")
    p.add_argument("--hparams", type=Path, default=None,
                   help="JSON overriding hyperparameters, e.g. {\"finetune\": {\"epochs\": 2, "
                        "\"cpj\": {\"lr\": 1e-5}}}")
    p.add_argument("--epochs", type=int, default=None, help="shortcut for the method's epochs")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=run_cli)


def _limit_arg(text: str) -> int | dict:
    """``200`` or ``csj=60,cpj=400,cic=200`` (tasks not named: no limit)."""
    try:
        if "=" not in text:
            return int(text)
        out = {}
        for part in text.split(","):
            task, n = part.split("=")
            task = task.strip().lower()
            if task not in TASKS:
                raise ValueError(task)
            out[task] = int(n)
        return out
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give N or csj=N,cpj=N,cic=N") from None


def parse_tasks(text: str) -> list[str]:
    tasks = list(TASKS) if text == "all" else [t.strip().lower() for t in text.split(",") if t.strip()]
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks:
        raise KgprobeError(f"--task {text}: use csj, cpj, cic or all")
    return tasks


def config_from_args(args: argparse.Namespace) -> CopenConfig:
    hparams: dict = {}
    if args.hparams:
        try:
            hparams = json.loads(Path(args.hparams).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise KgprobeError(f"{args.hparams}: cannot read hyperparameters as JSON ({err})") from None
    if args.epochs is not None:
        hparams.setdefault(args.method, {})["epochs"] = args.epochs
    try:
        seeds = [int(s) for s in str(args.seeds).split(",") if s.strip()]
    except ValueError:
        raise KgprobeError(f"--seeds {args.seeds}: give integers separated by commas") from None
    return CopenConfig(
        model=args.model, method=args.method, tasks=parse_tasks(args.task),
        data=str(args.data) if args.data else None, from_kg=args.from_kg,
        store=str(args.store) if args.store else os.environ.get("KGPROBE_STORE"),
        norms=str(args.norms) if args.norms else None, limit=args.limit,
        train_limit=args.train_limit, seed=args.seed, seeds=seeds,
        parts=[p.strip() for p in args.parts.split(",")] if args.parts else None,
        pooling=args.pooling, hparams=hparams, device=args.device)


def run_cli(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    rows = run_copen(cfg, args.out)
    for r in rows:
        extra = f"  chain {pct(r['chain_accuracy'])}" if r["task"] == "cpj" else ""
        print(f"{r['task']:4s} {r['method']:9s} {str(r['variant']):10s} seed {str(r['seed']):3s} "
              f"n {r['n']:>5}  accuracy {pct(r['accuracy'])}{extra}")
    print(f"wrote {args.out}/results.csv, predictions.jsonl and report.md")
    return 0
