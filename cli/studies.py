"""`kgprobe study …`, `probe …`, `report` and `demo`: the commands that probe a model.

Each study package has a light ``cli`` module (options, and a handler that imports the study
itself only when it runs), so building the parser never imports torch or transformers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from kgprobe.errors import StudyError

from .registry import command

#: The main job's model, size and protocol, chosen so `make demo` ends within 15 minutes on
#: 2 cores from a fresh clone with n >= 30 items in every cell of the rule-averaged table
#: (measured: 6 min 17 s for the study, min n 34; see README "Two commands"): 30 items per rule
#: (rdfs5 has 7), one pseudoword pair, every manual template, the gold among K = 20 candidates.
#: gemma3-270m is ~1.4x slower per prompt (bench/study.py), too close to the budget.
DEFAULT_MODEL = "smollm2-135m"
DEMO_LIMIT = 30
#: The names `study memorization --model` takes for its baselines instead of a model.
BASELINES = ("frequency", "random")
DEMO_CANDIDATES = "20"
DEMO_SOFT_EPOCHS = 5
#: `kgprobe study NAME` → the study package whose ``cli.register_cli(sub, name)`` adds it.
STUDIES = {
    "premise-ablation": "premise_ablation",
    "memorization": "memorization",
    "multiple-choice": "multiple_choice",
    "copen": "copen",
    "sta": "sta",
}


def study_cli(name: str):
    return importlib.import_module(f"kgprobe.studies.{STUDIES[name]}.cli")


#: Where a study rebuilds its report from a run folder, if not ``report:write_report``.
REPORTS = {"copen": "study:write_report", "sta": "report:rebuild_report"}
#: The results.csv column that tells which study wrote a run folder (checked in this order).
STUDY_COLUMNS = (("rule", "premise-ablation"), ("masks", "memorization"),
                 ("calibrated_accuracy", "multiple-choice"), ("method", "copen"),
                 ("condition", "sta"))


def study_of(run: Path) -> str:
    """The study whose run folder `run` is, read from its results.csv header."""
    import csv

    try:
        with open(run / "results.csv", newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except OSError:
        raise StudyError(f"{run}: no results.csv; pass the --out folder of a kgprobe study "
                         "run") from None
    for column, study in STUDY_COLUMNS:
        if column in header:
            return study
    raise StudyError(f"{run}/results.csv: not written by a kgprobe study; pass the --out "
                     "folder of one")


@command("report")
def cmd_report(args: argparse.Namespace) -> int:
    """Rebuild report.md (and figures) of any study's run folder from the files on disk."""
    study = study_of(args.dir)
    module, function = REPORTS.get(study, "report:write_report").split(":")
    rebuild = getattr(importlib.import_module(f"kgprobe.studies.{STUDIES[study]}.{module}"), function)
    print(f"wrote {rebuild(args.dir)} ({study})")
    return 0


@command("demo")
def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: the premise-ablation study on the bundled ontology, default model."""
    from kgprobe.studies.premise_ablation.cli import template_kinds
    from kgprobe.studies.premise_ablation.config import AblationConfig

    # Checked before the model loads: a typo must not run the whole study first.
    templates = template_kinds(args.templates)
    from kgprobe.reasoning.distractors import parse_protocol
    from kgprobe.studies.premise_ablation.report import console_table, load_rows
    from kgprobe.studies.premise_ablation.study import run_premise_ablation

    from kgprobe.reasoning.filtering import parse_ranking

    protocol = parse_protocol(args.candidates)  # a bad value fails before the model loads
    config = AblationConfig(args.model, limit=args.limit, templates=templates,
                            pairs=args.pairs, soft_epochs=args.soft_epochs, seed=0,
                            candidates=args.candidates, ranking=parse_ranking(args.ranking))
    print(f"premise-ablation study: model {config.model}, {config.limit} items per rule, "
          f"{config.pairs} pseudoword pair(s), {' and '.join(config.templates)} templates, "
          f"protocol {protocol.name} -> {args.out}", file=sys.stderr)
    run_premise_ablation(config, args.out)
    rows = load_rows(Path(args.out))
    for template in config.templates:
        print("\n" + console_table(rows, template))
    print(f"\nreport: {args.out}/report.md (figures: {args.out}/summary.png, "
          f"{args.out}/heatmap_rdfs*.png)")
    return 0


def add_parsers(sub) -> None:
    """`study NAME`, `probe memorizing|multiple-choice` (aliases), `report`, `demo`."""
    from kgprobe.studies.options import candidates_option, ranking_option, threads_option

    study = sub.add_parser("study", help="run a study: " + ", ".join(STUDIES))
    study_sub = study.add_subparsers(dest="study_command", required=True)
    for name in STUDIES:
        study_cli(name).register_cli(study_sub, name)

    probe = sub.add_parser("probe", help="probe a model (same as `study memorization` and "
                           "`study multiple-choice`)")
    probe_sub = probe.add_subparsers(dest="probe_command", required=True)
    study_cli("memorization").register_cli(probe_sub, "memorizing")
    study_cli("multiple-choice").register_cli(probe_sub, "multiple-choice")

    p = sub.add_parser("report", help="rebuild report.md and figures of a study's run folder")
    p.add_argument("dir", type=Path, help="a study's run folder (its --out)")

    p = sub.add_parser("demo", help="the main job: the premise-ablation study, default model")
    p.add_argument("--model", default=DEFAULT_MODEL, help="a preset, HF id, local dir or .gguf "
                   "file")
    p.add_argument("--limit", type=int, default=DEMO_LIMIT, help="items per rule")
    p.add_argument("--pairs", type=int, default=1, help="pseudoword pairs per item")
    candidates_option(p, DEMO_CANDIDATES)
    ranking_option(p)
    p.add_argument("--soft-epochs", type=int, default=DEMO_SOFT_EPOCHS,
                   help="soft templates (with --templates manual,soft): training epochs")
    p.add_argument("--templates", default="manual",
                   help="manual (default: soft training takes about an hour on 2 cores), "
                        "or manual,soft")
    threads_option(p)
    p.add_argument("--out", type=Path, default=Path("out") / "premise-ablation",
                   help="the run folder (rerun into it to resume)")
