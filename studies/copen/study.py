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

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
from kgprobe.atomic import atomic_path, write_json, write_text
from kgprobe.errors import KgprobeError
from kgprobe.reasoning.copen_items import (
    TASK_DIRS,
    by_split,
    load_official,
    write_official,
)
from kgprobe.studies.copen.analysis import (
    METRICS,
    chain_sizes,
    task_metrics,
)
from kgprobe.studies.copen.methods import (
    PARTS,
    finetune,
    frozen_features,
    hyperparameters,
    linear_probe,
    zero_shot,
)
from kgprobe.studies.copen.report import build_report
from kgprobe.studies.ontology_source import OntologySource
from kgprobe.studies.runner import Unit

from .config import NAME, DEFAULT_SEEDS, METHODS, CopenConfig  # noqa: F401
from .requests import plan, train_dev  # noqa: F401

NAMES = {"csj": "CSJ", "cpj": "CPJ", "cic": "CiC"}
#: what a run folder's config.json holds of a `CopenConfig` (the rest: the study's name, the
#: ontology's ``source``)
CONFIG_FIELDS = {f.name for f in dataclasses.fields(CopenConfig)}
COLUMNS = ["task", "method", "variant", "seed", "n", "n_unlabeled", *METRICS,
           "dev_accuracy", "best_epoch"]


# ----------------------------------------------------------------------------- data


def _warn(message: str) -> None:
    print(f"kgprobe: warning: {message}", file=sys.stderr)


def kg_ontology(store: str | None, endpoint: str | None = None, *, reason: bool = False,
                wait: bool = False, source: OntologySource | None = None):
    """The model COPEN generates from and a description of where it came from: the source
    the options name (`studies.ontology_source`; `store`/`endpoint` build one), a store's or
    endpoint's asserted graphs with HermiT's conclusions after `reason --owl`; the bundled
    OntoProbe ontology, said in one line, when the store is missing or empty. An endpoint
    that cannot be read is an error, never silently replaced.

    The RDFS inferred graph is left out: the generators walk the subClassOf chains and apply
    the domain/range rules themselves (`reasoning.copen_kg`), so a reasoned store gives the
    same items as the unreasoned one. Stale inferences are refused as by every command that
    reads the store (`reason`: re-run reasoning first, as `generate memorizing --reason`)."""
    from kgprobe.ontology.loaders import bundled_source
    from kgprobe.studies.ontology_source import read_model

    if source is None:
        source = OntologySource("endpoint", endpoint) if endpoint else OntologySource("store", store)
    if reason and source.origin != "store":
        raise KgprobeError("--reason writes the store; with --endpoint, run `kgprobe reason` "
                           "on the store behind the endpoint instead" if source.origin == "endpoint"
                           else "--reason writes the store; drop it with --ontology")
    if source.origin == "endpoint":
        return source.load().ontology, str(source.location)
    if source.origin != "store":
        return source.load().ontology, source.describe()
    path = source.store_path()
    if path.exists():
        if reason:
            _reason_if_stale(path, wait)
        with source.open_reader() as kg:
            if kg.count():  # `study copen` has --reason
                fix = "run `kgprobe reason` (or pass --reason)"
                return read_model(kg, source.options(), stale_fix=fix).ontology, str(path)
    _warn(f"store {path} is missing or empty; generating from the bundled OntoProbe ontology "
          "(run `kgprobe kg load` to use another, or pass --ontology bundled)")
    return bundled_source().ontology, "bundled OntoProbe ontology"


def _reason_if_stale(path: Path, wait: bool) -> None:
    """`--reason`: re-run reasoning as the store was last reasoned when its inferences are stale."""
    from kgprobe.kg.store import KnowledgeGraph
    from kgprobe.reasoning.materialize import reason_again

    with KnowledgeGraph(path, create=False, wait=wait) as kg:
        if kg.inferred_state() == "stale":
            report = reason_again(kg)
            print(f"reasoned over {report.asserted} asserted triples with "
                  f"{', '.join(report.rules)} in {report.seconds:.2f} s (the inferences were stale)")


def generate_sets(cfg: CopenConfig, out: Path, tasks: Sequence[str], *,
                  progress: bool = False) -> dict[str, dict]:
    """Write generated sets for `tasks` that OUT/data does not hold yet; return their reports."""
    from kgprobe.ontology.norms import load_mcrae
    from kgprobe.reasoning.copen_kg import generate_cic, generate_csj
    from kgprobe.reasoning.copen_norms import generate_cpj
    from kgprobe.reasoning.copen_taxonomy import Taxonomy

    summary_path = out / "data" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    todo = [t for t in tasks if not (out / "data" / TASK_DIRS[t] / "test.json").exists()]
    onto = tax = source_kg = None
    # the norms are read first: a wrong --norms is refused before minutes of CSJ generation
    norms = load_mcrae(cfg.norms) if "cpj" in todo else None
    if {"csj", "cic"} & set(todo):  # first: a stale store is refused before anything is written
        onto, source_kg = kg_ontology(cfg.store, cfg.endpoint, reason=cfg.reason, wait=cfg.wait,
                                      source=cfg.ontology)
        tax = Taxonomy.of(onto)
    for task in todo:
        t0 = time.perf_counter()
        if progress:
            print(f"kgprobe: generating {NAMES[task]} items", file=sys.stderr, flush=True)
        if task == "cpj":
            items, report = generate_cpj(norms, seed=cfg.seed)
            source = str(cfg.norms)
        else:
            if task == "csj":
                items, report = generate_csj(onto, seed=cfg.seed, tax=tax, progress=progress)
            else:
                items, report = generate_cic(onto, seed=cfg.seed, tax=tax)
            source = source_kg
        write_official(out / "data", task, by_split(items))
        summary[task] = {"source": source, "seed": cfg.seed, **report.to_json(),
                         "splits": {s: len(v) for s, v in by_split(items).items()},
                         "seconds": round(time.perf_counter() - t0, 1)}
        write_json(summary_path, summary)
    return summary


def load_sets(cfg: CopenConfig, out: Path, *, progress: bool = False, warn: bool = True
              ) -> tuple[dict[str, dict[str, list]], dict]:
    """task → split → items (all items, before any limit), and the generation summary;
    `progress`: say on stderr what is being generated, with a bar for CSJ; `warn`: say which
    tasks are skipped (the run says it; its report, rebuilt from the same files, does not)."""
    tasks = list(cfg.tasks)
    summary: dict = {}
    if cfg.from_kg:
        if "cpj" in tasks and not cfg.norms:
            if len(tasks) == 1:
                raise KgprobeError("CPJ from the knowledge graph needs feature norms: pass --norms "
                                   "the McRae norms folder (e.g. ../shared/data/mcrae)")
            if warn:
                _warn("no --norms: skipping CPJ (pass --norms the McRae norms folder to include it)")
            tasks.remove("cpj")
        summary = generate_sets(cfg, out, tasks, progress=progress)
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
            if warn:
                _warn(f"{root}: no {TASK_DIRS[task]}/ files; skipping {task.upper()}")
    if not sets:
        raise KgprobeError(f"{root}: no COPEN task files; pass the folder holding task1/ task2/ task3/")
    return sets, summary


# ----------------------------------------------------------------------------- runner


class LazyModel:
    """The model, loaded on first use (a resumed run whose units are all done never loads it):
    what `cli.Copen.load` hands the run; `loaded`: a model already loaded (the tests')."""

    def __init__(self, cfg: CopenConfig, loaded=None):
        self.cfg, self._loaded = cfg, loaded

    def __call__(self):
        if self._loaded is None:
            from kgprobe.models.loading import load_model

            self._loaded = load_model(self.cfg.model, device=self.cfg.settings.device,
                                      dtype=self.cfg.settings.dtype)
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
    with atomic_path(path) as tmp:  # suffix .npz kept: np.savez would append one
        np.savez(tmp, **value)
    return value


def _pooling(cfg: CopenConfig, model) -> str:
    return cfg.pooling if cfg.pooling != "auto" else model().feature_pooling


def build_units(cfg: CopenConfig, out: Path, sets: dict, model: LazyModel) -> list[Unit]:
    """The run's units: zero-shot one per (task, part), linear and fine-tuning one per (task, seed)."""
    units: list[Unit] = []
    for task_plan in plan(cfg, sets):  # the items the dry run lists
        task, test = task_plan.task, task_plan.test
        sizes = chain_sizes(sets[task].get("test", [])) if task == "cpj" else None
        if cfg.method == "zero-shot":
            units += _zero_shot_units(cfg, out, model, task, test, sizes)
            continue
        trained = _linear_units if cfg.method == "linear" else _finetune_units
        units += trained(cfg, out, model, task, task_plan.batches(), task_plan.ooc(), sizes)
    return units


def _zero_shot_units(cfg: CopenConfig, out: Path, model: LazyModel, task: str, test: list,
                     sizes: dict | None) -> list[Unit]:
    parts = [p for p in (cfg.parts or PARTS[task]) if p in PARTS[task]]
    if not parts:
        raise KgprobeError(f"--parts {','.join(cfg.parts or [])}: none applies to {task.upper()} "
                           f"(its parts: {', '.join(PARTS[task])})")

    def scores():
        return _cached_json(out / "cache" / f"zero-shot-{task}.json",
                            lambda: zero_shot(model(), task, test, parts))

    units = []
    for part in parts:
        def run(part=part):
            recs = scores()[part]
            return task_metrics(task, recs, sizes), recs

        units.append(Unit({"task": task, "method": cfg.method, "variant": part, "seed": "-"},
                          run, len(test)))
    return units


def _linear_units(cfg: CopenConfig, out: Path, model: LazyModel, task: str, data: dict,
                  ooc, sizes: dict | None) -> list[Unit]:
    cfg_t = hyperparameters(cfg.method, task, cfg.hparams)
    kept: dict[str, dict] = {}

    def feats():
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

    units = []
    for seed in cfg.seeds:
        def run(seed=seed):
            f = feats()
            recs, info = linear_probe(task, data["train"], data["dev"], data["test"],
                                      {k: f[k] for k in ("train", "dev", "test")}, seed,
                                      cfg_t, f.get("ooc"))
            return {**task_metrics(task, recs, sizes), **info}, recs

        units.append(Unit({"task": task, "method": cfg.method, "variant": cfg.pooling,
                           "seed": seed}, run, len(data["test"].items)))
    return units


def _finetune_units(cfg: CopenConfig, out: Path, model: LazyModel, task: str, data: dict,
                    ooc, sizes: dict | None) -> list[Unit]:
    cfg_t = hyperparameters(cfg.method, task, cfg.hparams)
    units = []
    for seed in cfg.seeds:
        def run(seed=seed):
            recs, info = finetune(model(), task, data["train"], data["dev"], data["test"], seed,
                                  cfg_t, _pooling(cfg, model), ooc)
            return {**task_metrics(task, recs, sizes), **info}, recs

        units.append(Unit({"task": task, "method": cfg.method, "variant": cfg.pooling,
                           "seed": seed}, run, len(data["test"].items)))
    return units


def run_copen(cfg: CopenConfig, out: str | Path, *, loaded=None, progress: bool = True) -> list[dict]:
    """Run (or resume) the study through its lifecycle (`contract.Study.execute`) and return
    the result rows; `loaded`: a model already loaded, used instead of loading `cfg.model`."""
    from kgprobe.studies.registry import get_study

    return type(get_study(NAME))(loaded=loaded).run_rows(cfg, out, progress=progress)


def write_report(out: str | Path) -> Path:
    """Rebuild ``report.md`` of a run folder from its pinned settings, data and unit files."""
    out = Path(out)
    try:
        pinned = json.loads((out / "config.json").read_text(encoding="utf-8"))
        # the settings a config holds (``source`` describes its ontology, which the report
        # does not read)
        cfg = CopenConfig(**{k: v for k, v in pinned.items() if k in CONFIG_FIELDS})
    except (OSError, ValueError, TypeError) as err:
        raise KgprobeError(f"{out}: no readable config.json of a COPEN run ({err})") from None
    sets, summary = load_sets(cfg, out, warn=False)
    units = build_units(cfg, out, sets, LazyModel(cfg))
    path = out / "report.md"
    write_text(path, build_report(cfg, out, sets, summary, units))
    return path
