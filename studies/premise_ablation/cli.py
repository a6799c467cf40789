"""`kgprobe study premise-ablation`: options and the command (light: the study loads lazily)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.reasoning.rdfs import RULES
from kgprobe.studies.options import (
    candidates_option,
    dry_run_done,
    dry_run_option,
    comma_list,
    ranking_option,
    scale_options,
    threads_option,
)

from .config import TEMPLATE_KINDS


def template_kinds(text: str) -> tuple[str, ...]:
    """``manual``, ``soft`` or ``manual,soft``; checked before anything runs (also for the demo)."""
    return tuple(comma_list(text, choices=TEMPLATE_KINDS, option="--templates"))



#: ``--preset paper``: the paper-scale study (OntoProbe §3: every item, 10 pairs, the manual
#: templates, every candidate): the GPU command. It overrides these options.
PRESETS = {"paper": {"limit": 0, "pairs": 10, "templates": "manual", "candidates": "all"}}


def apply_preset(args: argparse.Namespace) -> None:
    for key, value in PRESETS.get(getattr(args, "preset", None) or "", {}).items():
        setattr(args, key, value)


def run_cli(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.distractors import parse_protocol

    from .study import AblationConfig, run_premise_ablation

    apply_preset(args)
    parse_protocol(args.candidates)  # a bad value fails before the model loads
    paper = args.protocol == "paper"
    if args.limit is None:  # the protocol's own: 10 items a rule, or every paper item
        args.limit = 0 if paper else 10
    if args.pairs is None:  # the paper samples 10 pseudoword pairs (Appendix A)
        args.pairs = 10 if paper else 1
    if args.templates is None:
        args.templates = "manual" if paper else "manual,soft"
    if args.model is None and not args.dry_run:
        raise StudyError("--model: give a model (a preset, HF id, local dir or .gguf file), "
                         "or pass --dry-run to only write the prompts")
    if not paper and args.memorized != "top-half":
        raise StudyError(f"--memorized {args.memorized}: applies to --protocol paper; the default "
                         "protocol splits by --fraction")
    if paper and args.ontology is not None:
        raise StudyError("--protocol paper: the paper's items come from the bundled ontology; "
                         "drop --ontology")
    from kgprobe.reasoning.filtering import parse_ranking

    ranking = parse_ranking(args.ranking)

    rules = tuple(comma_list(args.rules, choices=RULES, option="--rules"))
    templates = template_kinds(args.templates)
    if args.resamples < 1000 or args.min_items < 1:
        raise StudyError(f"--resamples {args.resamples} / --min-items {args.min_items}: use at "
                         "least 1000 resamples (a 95% interval's tails need them) and 1 item")
    config = AblationConfig(args.model or "-", rules, templates, None if args.limit == 0 else args.limit,
                            args.seed, args.pairs, args.fraction, args.device, args.batch_size,
                            args.soft_epochs, resamples=args.resamples, min_items=args.min_items,
                            extra={"ontology": str(args.ontology or "bundled")},
                            candidates=str(args.candidates), dtype=args.dtype,
                            protocol=args.protocol, memorized=args.memorized,
                            ranking=ranking)
    if paper:
        from .paper import check_paper_config

        check_paper_config(config)
    if args.dry_run:
        from .dry import write_dry_run

        return dry_run_done(args.out, write_dry_run(config, args.out, ontology=args.ontology))
    source = None
    if args.ontology is not None:
        from kgprobe.ontology.loaders import load_source

        source = load_source(args.ontology)
    run_premise_ablation(config, args.out, source=source, cache=not args.no_cache)
    print(f"wrote {args.out}/results.csv, predictions.jsonl, report.md and figures; "
          f"read {args.out}/report.md")
    return 0


def add_arguments(p: argparse.ArgumentParser, *, default_model: str | None = None) -> None:
    p.add_argument("--model", default=default_model,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir or .gguf file "
                        "(not needed with --dry-run)")
    p.add_argument("--protocol", choices=["default", "paper"], default="default",
                   help="paper: the paper's items, wording, memorized split and metrics as its "
                        "official code implements them (docs/fidelity.md)")
    p.add_argument("--memorized", choices=["top-half", "rank1"], default="top-half",
                   help="--protocol paper, P1: known when in the top half by reciprocal rank "
                        "(the paper) or when ranked first (the official code)")
    dry_run_option(p)
    p.add_argument("--ontology", type=Path, default=None,
                   help="an RDF file or OntoProbe directory (default: the bundled ontology)")
    p.add_argument("--rules", default=",".join(RULES), help="comma-separated rules to study")
    p.add_argument("--templates", default=None,
                   help="manual, soft, or manual,soft (default: manual,soft; paper: manual)")
    p.add_argument("--limit", type=int, default=None,
                   help="items per rule (0: all; default 10, with --protocol paper all)")
    p.add_argument("--pairs", type=int, default=None,
                   help="pseudoword pairs per item, averaged (default 1; with --protocol paper "
                        "10, as the paper); each "
                   "(item, pair, template) prompt is one observation nested in its item")
    p.add_argument("--fraction", type=float, default=0.5,
                   help="share of premises (best reciprocal rank first) that count as known")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the item sample, pseudowords, distractors and intervals")
    p.add_argument("--resamples", type=int, default=2000,
                   help="bootstrap resamples per 95%% interval and permutations per test")
    p.add_argument("--min-items", type=int, default=10,
                   help="cells with fewer items are shown but flagged")
    p.add_argument("--soft-epochs", type=int, default=30, help="soft templates: training epochs")
    candidates_option(p)
    ranking_option(p)
    p.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="paper: every item, 10 pairs, manual templates, --candidates all "
                        "(the GPU command; overrides those options)")
    scale_options(p)
    p.add_argument("--batch-size", type=int, default=64, help="prompts scored at once")
    threads_option(p)
    p.add_argument("--out", type=Path, required=True,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")


def register_cli(sub, name: str = "premise-ablation") -> None:
    p = sub.add_parser(name, help="reasoning with premises not given, implicit, "
                       "explicit (the main job)")
    add_arguments(p)
    p.set_defaults(func=run_cli)
