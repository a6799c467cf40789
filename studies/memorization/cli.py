"""`kgprobe study memorization` (alias `kgprobe probe memorizing`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.options import (
    candidates_option,
    finish,
    scale_options,
    threads_option,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a baseline: frequency, random")
    p.add_argument("--task", default="all",
                   help="type|subClassOf|subPropertyOf|domain|range (or TP|SCO|SPO|DM|RG) or all")
    p.add_argument("--template", default="all", help="manual template index, or all")
    p.add_argument("--masks", choices=["multi", "single"], default="multi",
                   help="masked LMs: one [MASK] per candidate token, or a single one")
    p.add_argument("--pooling", choices=["mean", "max", "first", "sum"], default=None,
                   help="pool the candidate's token log-probabilities (default: mean for masked, "
                        "sum for causal; a causal LM adds the log-probability of the text after "
                        "the slot where it is more than punctuation, docs/scoring.md)")
    p.add_argument("--split", choices=["train", "dev", "test"], default="test")
    p.add_argument("--limit", type=int, default=None,
                   help="records per task (default: the paper's, 500 for TP and SCO, all others)")
    p.add_argument("--probes", type=Path, default=None,
                   help="a directory from `kgprobe generate memorizing` (default: the paper's sets)")
    p.add_argument("--seed", type=int, default=0)
    candidates_option(p)
    scale_options(p)
    p.add_argument("--batch-size", type=int, default=64)
    threads_option(p)
    p.add_argument("--out", required=True, type=Path)


def run_cli(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.memorizing import RELATIONS

    from .report import write_report
    from .study import format_table, run_memorization

    tasks = list(RELATIONS) if args.task == "all" else [args.task]
    rows = run_memorization(args.model, args.out, tasks=tasks, templates=args.template,
                            masks=args.masks, pooling=args.pooling, split=args.split,
                            limit=args.limit, seed=args.seed, probes=args.probes,
                            device=args.device, batch_size=args.batch_size,
                            dtype=args.dtype, cache=not args.no_cache,
                            candidates=args.candidates)
    return finish(args.out, format_table(rows), write_report)


def register_cli(sub, name: str = "memorization") -> None:
    p = sub.add_parser(name, help="the memorization study (TP, SCO, SPO, DM, RG)")
    add_arguments(p)
    p.set_defaults(func=run_cli)
