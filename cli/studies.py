"""`kgprobe study …`, `probe …`, `report` and `demo`: the commands that probe a model.

Each study package has a light ``cli`` module (options, and a handler that imports the study
itself only when it runs), so building the parser never imports torch or transformers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .kg_options import memory_arg
from .registry import command


def _run_study(name: str):
    """The handler of `kgprobe study NAME` (and its aliases): the study's own `main`."""
    def handler(args: argparse.Namespace) -> int:
        from kgprobe.studies.registry import get_study

        return get_study(name).main(args)
    return handler


@command("report")
def cmd_report(args: argparse.Namespace) -> int:
    """Rebuild report.md (and figures) of any study's run folder from the files on disk."""
    from kgprobe.studies.registry import get_study
    from kgprobe.studies.settings import require_study

    name = require_study(args.dir, results=False)
    print(f"wrote {get_study(name).rebuild_report(args.dir)} ({name})")
    return 0


@command("demo")
def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: the premise-ablation study's ``--preset demo`` (so `kgprobe study
    premise-ablation --preset demo --out DIR` resumes the demo's folder), with the options
    given here on top."""
    from kgprobe.studies.registry import get_study

    study = get_study("premise-ablation")
    argv = ["--preset", "demo", "--out", str(args.out), "--model", args.model,
            "--limit", str(args.limit), "--pairs", str(args.pairs), "--candidates",
            str(args.candidates), "--ranking", args.ranking, "--soft-epochs",
            str(args.soft_epochs), "--templates", args.templates, "--ontology", "bundled"]
    config = study.config_from_args(study.parser().parse_args(argv))
    from kgprobe.studies.premise_ablation.report import console_table, load_rows

    protocol = config.candidates
    print(f"premise-ablation study: model {config.model}, {config.limit} items per rule, "
          f"{config.pairs} pseudoword pair(s), {' and '.join(config.templates)} templates, "
          f"protocol {protocol.name} -> {args.out}", file=sys.stderr)
    study.run(config, args.out)
    rows = load_rows(Path(args.out))
    for template in config.templates:
        print("\n" + console_table(rows, template))
    print(f"\nreport: {args.out}/report.md (figures: {args.out}/summary.png, "
          f"{args.out}/heatmap_rdfs*.png)")
    return 0


def add_parsers(sub) -> None:
    """`study NAME` for every registered study, its aliases (`probe memorizing`), `report`,
    `demo`."""
    from kgprobe.studies.registry import studies
    from kgprobe.studies.options import candidates_option, ranking_option, threads_option

    registered = studies()
    study = sub.add_parser("study", help="run a study: " + ", ".join(registered))
    study_sub = study.add_subparsers(dest="study_command", required=True)
    groups: dict[str, argparse._SubParsersAction] = {}
    for name, definition in registered.items():
        places = [(study_sub, name)]
        for group, alias in definition.aliases:
            if group not in groups:
                same = [f"`study {n}`" for n, d in registered.items()
                        if any(g == group for g, _ in d.aliases)]
                parser = sub.add_parser(group, help=f"the same as {' and '.join(same)}")
                groups[group] = parser.add_subparsers(dest=f"{group}_command", required=True)
            places.append((groups[group], alias))
        for where, label in places:
            p = where.add_parser(label, help=definition.help, description=definition.description)
            definition.add_arguments(p)
            memory_arg(p)  # a study parses the user's --ontology FILE: guarded as `kg load` is
            p.set_defaults(func=_run_study(name))

    p = sub.add_parser("report", help="rebuild report.md and figures of a study's run folder")
    p.add_argument("dir", type=Path, help="a study's run folder (its --out)")

    # The main job's model, size and protocol (the premise-ablation study's preset "demo"),
    # chosen so the demo step ends within 8 minutes on 2 cores from a fresh clone with n >= 30
    # items in the written cells of the rule-averaged table: 6 items per rule, one pseudoword
    # pair, every manual template, the gold among K = 20 candidates. gemma3-270m is ~1.4x
    # slower per prompt (bench/study.py), too close to the budget.
    from kgprobe.studies.premise_ablation.config import PRESETS

    demo = PRESETS["demo"]
    p = sub.add_parser("demo", help="the main job: the premise-ablation study's preset demo "
                       "(`kgprobe study premise-ablation --preset demo` resumes its folder)")
    p.add_argument("--model", default=demo["model"], help="a preset, HF id, local dir or .gguf "
                   "file")
    p.add_argument("--limit", type=int, default=demo["limit"], help="items per rule")
    p.add_argument("--pairs", type=int, default=demo["pairs"], help="pseudoword pairs per item")
    candidates_option(p, demo["candidates"])
    ranking_option(p)
    p.add_argument("--soft-epochs", type=int, default=demo["soft_epochs"],
                   help="soft templates (with --templates manual,soft): training epochs")
    p.add_argument("--templates", default=demo["templates"],
                   help="manual (soft training takes about an hour on 2 cores), or manual,soft")
    threads_option(p)
    p.add_argument("--out", type=Path, default=Path("out") / "premise-ablation",
                   help="the run folder (rerun into it to resume)")
    memory_arg(p)
