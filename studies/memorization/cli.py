"""`kgprobe study memorization` (alias `kgprobe probe memorizing`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.options import (
    candidates_option,
    dry_run_done,
    dry_run_option,
    finish,
    ranking_option,
    scale_options,
    threads_option,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a baseline: frequency, random (not needed with --dry-run)")
    p.add_argument("--task", default="all",
                   help="type|subClassOf|subPropertyOf|domain|range (or TP|SCO|SPO|DM|RG) or all")
    p.add_argument("--template", dest="template", default="all",
                   help="manual template index, or all")
    p.add_argument("--templates", dest="template", default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--protocol", choices=["default", "paper"], default="default",
                   help="paper: the paper's prompts, test records and metrics as its official "
                        "code writes them (docs/fidelity.md)")
    dry_run_option(p)
    p.add_argument("--masks", choices=["multi", "single"], default="multi",
                   help="masked LMs: one [MASK] per candidate token, or a single one")
    p.add_argument("--pooling", choices=["mean", "max", "first", "sum"], default=None,
                   help="pool the candidate's token log-probabilities (default: mean for masked, "
                        "sum for causal; a causal LM adds the log-probability of the text after "
                        "the slot where it is more than punctuation, docs/scoring.md)")
    p.add_argument("--split", choices=["train", "dev", "test"], default="test",
                   help="which records of each set are asked")
    p.add_argument("--limit", type=int, default=None,
                   help="records per task (default: the paper's, 500 for TP and SCO, all others)")
    p.add_argument("--probes", type=Path, default=None,
                   help="a directory from `kgprobe generate memorizing` (default: the paper's sets)")
    p.add_argument("--seed", type=int, default=0, help="seed of the distractors and baselines")
    candidates_option(p)
    ranking_option(p)
    scale_options(p)
    p.add_argument("--batch-size", type=int, default=64, help="prompts scored at once")
    threads_option(p)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")


def run_cli(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.filtering import parse_ranking
    from kgprobe.reasoning.memorizing import RELATIONS

    from .report import write_report
    from .study import format_table, run_memorization

    from kgprobe.errors import StudyError
    from kgprobe.reasoning.distractors import parse_protocol

    from .config import MemorizationConfig

    tasks = list(RELATIONS) if args.task == "all" else [args.task]
    parse_protocol(args.candidates)  # a bad value fails before anything runs
    if args.model is None and not args.dry_run:
        raise StudyError("--model: give a model (a preset, HF id, local dir, .gguf file, "
                         "frequency or random), or pass --dry-run to only write the prompts")
    settings = dict(tasks=tasks, templates=args.template, masks=args.masks, pooling=args.pooling,
                    split=args.split, limit=args.limit, seed=args.seed, probes=args.probes,
                    device=args.device, batch_size=args.batch_size, dtype=args.dtype,
                    cache=not args.no_cache, candidates=args.candidates, protocol=args.protocol,
                    ranking=parse_ranking(args.ranking))
    if args.dry_run:
        from .dry import write_dry_run

        n = write_dry_run(MemorizationConfig(args.model or "-", **settings), args.out)
        return dry_run_done(args.out, n)
    rows = run_memorization(args.model, args.out, **settings)
    return finish(args.out, format_table(rows), write_report)


def register_cli(sub, name: str = "memorization") -> None:
    p = sub.add_parser(name, help="the memorization study (TP, SCO, SPO, DM, RG)")
    add_arguments(p)
    p.set_defaults(func=run_cli)
