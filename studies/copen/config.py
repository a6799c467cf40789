"""The COPEN study's settings: everything that decides its numbers (pinned in OUT/config.json)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.reasoning.copen_items import TASKS
from kgprobe.studies.ontology_source import SOURCE_OPTIONS, OntologySource, add_ontology_options
from kgprobe.studies.options import (
    ModelSettings,
    comma_list,
    dry_run_option,
    model_options,
    no_chat_template,
)

#: `kgprobe study copen`: the name its run folders' config.json records (`pin_settings`).
NAME = "copen"
#: The columns of results.csv and predictions that name a cell (`Study.cell_columns`).
CELL_COLUMNS = ("task", "method", "variant", "seed")

METHODS = ("zero-shot", "linear", "finetune")
DEFAULT_SEEDS = (42, 43, 44)


@dataclass
class CopenConfig:
    """Everything that decides the numbers of a run (pinned in OUT/config.json)."""

    model: str | None  # None: no model (a dry run); pinned as "-"
    method: str
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    data: str | None = None  # official data folder or zip
    from_kg: bool = False
    store: str | None = None
    endpoint: str | None = None  # a SPARQL endpoint read instead of the store (--endpoint)
    norms: str | None = None
    limit: int | dict | None = None  # test items per task (one number, or {task: number})
    train_limit: int | dict | None = None  # train items per task (dev: a quarter of it)
    seed: int = 0  # data generation and item selection
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    parts: list[str] | None = None  # zero-shot text parts (default: all of the task's)
    pooling: str = "auto"
    hparams: dict = field(default_factory=dict)
    #: where and how the model computes (never pinned): device, dtype, batch size (linear
    #: and fine-tuning, given as a hyperparameter; None: each task's, Appendix A) and the
    #: chat template, none only: COPEN reads segments (`no_chat_template`)
    settings: ModelSettings = ModelSettings(batch_size=None)
    reason: bool = False  # --reason: re-run stale inferences first (not pinned: same items)
    wait: bool = False  # --wait: for another writer, with --reason (not pinned)
    #: --from-kg's source (`studies.ontology_source`): pinned as `store`/`endpoint` above, and
    #: as `source` when it is a file or the bundled ontology, or reads the model otherwise
    ontology: OntologySource | None = None

    def __post_init__(self) -> None:
        no_chat_template(self.settings.chat_template, NAME)
        if self.method not in METHODS:
            raise KgprobeError(f"unknown method '{self.method}'; use one of {', '.join(METHODS)}")
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise KgprobeError(f"unknown task(s) {unknown}; use csj, cpj, cic or all")
        if bool(self.data) == bool(self.from_kg):
            raise KgprobeError("give exactly one data source: --data PATH or --from-kg")

    def limit_for(self, task: str, train: bool = False) -> int | None:
        value = self.train_limit if train else self.limit
        return value.get(task) if isinstance(value, dict) else value

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "CopenConfig":
        return config_from_args(args)

    def pinned(self) -> dict:
        d = asdict(self)
        d["model"] = self.model or "-"
        for key in ("settings", "reason", "wait", "ontology"):
            d.pop(key)
        source = self.ontology
        if source is not None and (source.origin not in ("store", "endpoint")
                                   or source.model_changed()):
            # generated data is kept in OUT/data, so a store's later changes never mix in;
            # a file, the bundled ontology or other model options make other items
            d["source"] = source.pinned()
        return d


DOC = "COPEN: conceptual knowledge (CSJ, CPJ, CiC) by zero-shot, linear probing or fine-tuning."



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="all", help="csj, cpj, cic or all (comma-separated list allowed)")
    p.add_argument("--method", required=True, choices=METHODS)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path, help="the official COPEN data (folder with task1/ task2/ "
                     "task3/, or copen_data.zip)")
    src.add_argument("--from-kg", action="store_true",
                     help="generate CSJ and CiC from the knowledge graph (CPJ from --norms)")
    p.add_argument("--norms", type=Path, default=None, help="McRae feature norms folder (CPJ with --from-kg)")
    p.add_argument("--reason", action="store_true", help="with --from-kg: re-run `kgprobe reason` "
                   "first if the store's inferences are stale (as it last ran)")
    p.add_argument("--wait", action="store_true", help="with --reason: if another kgprobe process "
                   "is writing to the store, wait for it to finish (default: exit 2)")
    p.add_argument("--model", default=None, help="a preset (smollm2-135m, gemma3-270m), HF directory, "
                   "hub id or .gguf file; required unless --dry-run")
    p.add_argument("--limit", type=_limit_arg, default=None,
                   help="test items per task: N, or per task as csj=N,cpj=N,cic=N (0 or none: all)")
    p.add_argument("--train-limit", type=_limit_arg, default=None,
                   help="train items per task for linear/finetune, N or csj=N,…; dev gets a quarter "
                        "of it (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of data generation and item selection")
    p.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)),
                   help="training seeds of linear probing and fine-tuning (default 42,43,44)")
    p.add_argument("--parts", default=None, help="zero-shot scored parts, comma-separated: query, "
                   "candidate, concept, answer, all (default: every part of each task)")
    p.add_argument("--feature-token", dest="pooling", default="auto",
                   choices=["auto", "first", "last", "mean"],
                   help="feature token (auto: first for masked LMs, last for causal LMs)")
    p.add_argument("--hparams", type=Path, default=None,
                   help="JSON overriding hyperparameters, e.g. {\"finetune\": {\"epochs\": 2, "
                        "\"cpj\": {\"lr\": 1e-5}}}")
    p.add_argument("--epochs", type=int, default=None, help="shortcut for the method's epochs")
    model_options(p, batch_size=None,
                  batch_help="training batch size of linear probing and fine-tuning "
                             "(default: each task's, as the paper's Appendix A)")
    p.add_argument("--out", required=True, type=Path)
    dry_run_option(p)
    add_ontology_options(p, default="store")


def _limit_arg(text: str) -> int | dict:
    """``200`` or ``csj=60,cpj=400,cic=200`` (tasks not named: no limit)."""
    try:
        if "=" not in text:
            if int(text) < 0:
                raise ValueError(text)
            return int(text) or None  # 0: all, as on every study
        out = {}
        for part in text.split(","):
            task, n = part.split("=")
            task = task.strip().lower()
            if task not in TASKS or int(n) < 0:
                raise ValueError(task)
            if int(n):  # 0: all of that task's items
                out[task] = int(n)
        return out or None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give N or csj=N,cpj=N,cic=N (N ≥ 0)") from None


def parse_tasks(text: str) -> list[str]:
    if text == "all":
        return list(TASKS)
    return comma_list(text, choices=TASKS, option="--task", lower=True)


def config_from_args(args: argparse.Namespace) -> CopenConfig:
    """`CopenConfig.from_args`: every option checked before data is read or a model loads."""
    if args.model is None and not args.dry_run:
        raise KgprobeError("kgprobe study copen needs --model NAME (or --dry-run to write the "
                           "prompts without one)")
    hparams: dict = {}
    if args.hparams:
        try:
            hparams = json.loads(Path(args.hparams).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise KgprobeError(f"{args.hparams}: cannot read hyperparameters as JSON ({err})") from None
    if args.epochs is not None:
        hparams.setdefault(args.method, {})["epochs"] = args.epochs
    if getattr(args, "batch_size", None) is not None and args.method != "zero-shot":
        hparams.setdefault(args.method, {})["batch_size"] = args.batch_size  # as --epochs
    try:
        seeds = [int(s) for s in comma_list(args.seeds)]
    except ValueError:
        raise KgprobeError(f"--seeds {args.seeds}: give integers separated by commas") from None
    if (args.reason or args.wait) and not args.from_kg:
        raise KgprobeError(f"{'--reason' if args.reason else '--wait'} applies to the store "
                           "read with --from-kg; drop it with --data")
    if args.wait and not args.reason:
        raise KgprobeError("--wait applies to --reason (the only write to the store); add "
                           "--reason or drop --wait")
    named = [flag for key, flag in SOURCE_OPTIONS if getattr(args, key, None)]
    if named and not args.from_kg:
        raise KgprobeError(f"{named[0]} applies to --from-kg (the knowledge graph COPEN "
                           "generates from); drop it with --data")
    source = OntologySource.from_args(args, default="store") if args.from_kg else None
    return CopenConfig(
        model=args.model, method=args.method, tasks=parse_tasks(args.task),
        data=str(args.data) if args.data else None, from_kg=args.from_kg,
        store=None if args.endpoint else str(args.store) if args.store else os.environ.get("KGPROBE_STORE"),
        endpoint=args.endpoint,
        norms=str(args.norms) if args.norms else None, limit=args.limit,
        train_limit=args.train_limit, seed=args.seed, seeds=seeds,
        parts=comma_list(args.parts) if args.parts else None,
        pooling=args.pooling, hparams=hparams, settings=ModelSettings.from_args(args),
        reason=args.reason, wait=args.wait, ontology=source)
