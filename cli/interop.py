"""`kgprobe export lm-eval` and `kgprobe import lm-eval`: probes on lm-evaluation-harness.

Export writes a task folder lm-eval 0.4 loads with ``--include_path``; import reads lm-eval's
``--log_samples`` output back into kgprobe run folders with their reports. Both import their
modules only when they run, so building the parser stays light.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options
from kgprobe.studies.options import candidates_option, comma_list, ranking_option

from .kg_options import memory_arg
from .registry import command


@command("export lm-eval")
def cmd_export(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.filtering import parse_ranking
    from kgprobe.reasoning.memorizing import relation_name
    from kgprobe.reasoning.rdfs import RULES
    from kgprobe.studies.lm_eval.export import STUDIES, ExportSettings, export_lm_eval

    source = OntologySource.from_args(args, ask=args.protocol != "paper")
    if args.protocol == "paper" and not source.bundled:
        raise KgprobeError("--protocol paper: the paper's probes come from the bundled ontology; "
                           "drop --probes, --store, --endpoint and --ontology")
    relations = None if args.task == "all" else tuple(relation_name(t) for t in comma_list(args.task))
    settings = ExportSettings(
        studies=tuple(comma_list(args.tasks, choices=STUDIES, option="--studies")),
        relations=relations, templates=args.template,
        rules=(tuple(comma_list(args.rules, choices=RULES, option="--rules"))
               if args.rules != "all" else None),
        candidates=args.candidates, split=args.split, limit=args.limit, seed=args.seed,
        probes=source.location if source.origin == "probes" else None, protocol=args.protocol,
        ranking=parse_ranking(args.ranking),
        source=None if source.origin in ("probes", "bundled") else source)
    counts = export_lm_eval(args.out, settings)
    for name, n in counts.items():
        print(f"{name:40s} {n:6d} docs")
    groups = ",".join(f"kgprobe_{s}" for s in settings.studies)
    print(f"wrote {len(counts)} tasks to {args.out}; run e.g.\n  lm_eval --model hf --model_args "
          f"pretrained=DIR --include_path {args.out} --tasks {groups} --log_samples "
          "--output_path RESULTS")
    return 0


@command("import lm-eval")
def cmd_import(args: argparse.Namespace) -> int:
    from kgprobe.studies.lm_eval.importer import import_lm_eval

    from .studies import cmd_report

    for folder in import_lm_eval(args.results, args.out).values():
        print(f"wrote {folder}/results.csv and predictions.jsonl")
        cmd_report(argparse.Namespace(dir=folder))
    return 0


def add_parsers(sub) -> None:
    """`export lm-eval` and `import lm-eval`."""
    export = sub.add_parser("export", help="write probes for another evaluation engine")
    export_sub = export.add_subparsers(dest="export_command", required=True)
    p = export_sub.add_parser("lm-eval", help="an lm-evaluation-harness task folder "
                              "(lm_eval --include_path DIR)")
    p.add_argument("--out", required=True, type=Path, help="the task folder to write")
    p.add_argument("--studies", dest="tasks", default="memorizing,reasoning", metavar="STUDIES",
                   help="which studies' probes: memorizing, reasoning (comma-separated)")
    p.add_argument("--tasks", dest="tasks", default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)  # the old spelling, beside --task
    candidates_option(p)
    ranking_option(p)
    p.add_argument("--task", default="all", help="memorizing relations: TP,SCO,SPO,DM,RG or all")
    p.add_argument("--template", default="all", help="memorizing manual template index, or all")
    p.add_argument("--rules", default="all", help="reasoning rules (rdfs2,…,rdfs11) or all")
    p.add_argument("--split", choices=["train", "dev", "test"], default="test",
                   help="which memorizing records become tasks")
    p.add_argument("--limit", type=int, default=None,
                   help="probes per task (default: the paper's memorizing limits, every "
                        "reasoning item; reasoning items are the premise-ablation study's sample)")
    p.add_argument("--seed", type=int, default=0, help="distractors and reasoning sample")
    p.add_argument("--protocol", choices=["default", "paper"], default="default",
                   help="paper: the paper's prompts, test records and items as its official "
                        "code writes them (docs/fidelity.md)")
    add_ontology_options(p, probes=True)
    memory_arg(p)  # it parses the user's --ontology FILE: guarded as `kg load` is

    imp = sub.add_parser("import", help="read another engine's results into kgprobe run folders")
    imp_sub = imp.add_subparsers(dest="import_command", required=True)
    p = imp_sub.add_parser("lm-eval", help="lm_eval --log_samples output → results.csv, report")
    p.add_argument("results", type=Path, help="lm_eval's --output_path (one model's runs)")
    p.add_argument("--out", required=True, type=Path,
                   help="run folder: memorization/ and premise-ablation/ are written in it")
