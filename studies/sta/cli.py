"""`kgprobe study sta`: options and the command (light: the study loads lazily)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.ontology.norms import FORMATS
from kgprobe.studies.options import comma_list, dry_run_done, dry_run_option, threads_option
from kgprobe.studies.sta import retrieval as ret

from .config import TASKS, VOCABS, StaConfig, StaError, default_vocab_file

DOC = "Tacit assumptions: concept retrieval and property elicitation on feature norms (Weir et al. 2020)."

def register_cli(sub, name: str = "sta") -> None:
    p = sub.add_parser(name, help="tacit assumptions: concept retrieval and property elicitation "
                       "on feature norms (Weir et al. 2020)", description=DOC)
    p.add_argument("--norms", type=Path, default=None,
                   help="feature norms: McRae's CONCS_FEATS_concstats_brm.txt or CSLB's norms.dat (or their folder)")
    p.add_argument("--format", choices=FORMATS, default="mcrae", help="layout of --norms (default mcrae)")
    p.add_argument("--model", default=None, help="a preset (smollm2-135m, gemma3-270m), HF directory, hub id or .gguf")
    p.add_argument("--task", choices=["retrieval", "elicitation", "all"], default="all",
                   help="which STA task to run")
    p.add_argument("--limit", type=int, default=None, help="concepts per task, a seeded sample (default: all)")
    p.add_argument("--elicitation-limit", type=int, default=None,
                   help="concepts for elicitation, if not --limit (elicitation prompts are cheaper)")
    p.add_argument("--seed", type=int, default=0, help="seed of the concept sample and the random baseline")
    p.add_argument("--vocab", choices=VOCABS, default=None,
                   help="retrieval candidates: lama (LAMA common vocabulary ∩ model single tokens) or concepts "
                   "(the norms' concepts); default lama, except concepts for causal LMs with --template statement")
    p.add_argument("--vocab-file", type=Path, default=None,
                   help=f"LAMA common vocabulary (default {default_vocab_file()})")
    p.add_argument("--determiner", choices=ret.DETERMINERS, default="a",
                   help="retrieval prompts start 'A [MASK]' (vowel-initial concepts skipped, as the paper) "
                   "or 'The [MASK]' (every concept kept)")
    p.add_argument("--template", choices=ret.TEMPLATES, default=None,
                   help="retrieval prompt: statement ('A [MASK] has fur .', the paper's; causal LMs score it by "
                   "sentence log-likelihood, one pass per candidate) or question ('What has fur? It is a [MASK] .', "
                   "next-token distribution, one pass per prompt); default statement for masked LMs, question "
                   "for causal LMs")
    p.add_argument("--conditions", default=None,
                   help="retrieval conditions, comma-separated (default all): top-dec, top-inc, bottom-dec, "
                   "bottom-inc, random, group:visual perceptual, group:functional, …")
    p.add_argument("--random-sets", type=int, default=ret.RANDOM_SETS, help="random baseline: property sets per concept")
    p.add_argument("--random-permutations", type=int, default=ret.RANDOM_PERMUTATIONS,
                   help="random baseline: orders per set")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=32, help="prompts scored at once")
    threads_option(p)
    p.add_argument("--compare", type=Path, nargs="+", default=None, metavar="RUN",
                   help="only draw figures comparing finished runs (their --out folders) into --out")
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    dry_run_option(p)
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    from .study import run_sta

    if args.compare:
        from .report import write_comparison

        paths = write_comparison(args.compare, args.out)
        for path in paths:
            print(f"wrote {path}")
        return 0
    if args.norms is None or (args.model is None and not args.dry_run):
        raise StaError("kgprobe study sta needs --norms PATH and --model NAME (or --compare RUN "
                       "..., or --dry-run with --norms to write the prompts without a model)")
    config = StaConfig(
        norms=args.norms, model=args.model or "-", format=args.format,
        tasks=TASKS if args.task == "all" else (args.task,), limit=args.limit,
        elicitation_limit=args.elicitation_limit, seed=args.seed,
        vocab=args.vocab, vocab_file=args.vocab_file, determiner=args.determiner, template=args.template,
        conditions=tuple(comma_list(args.conditions)) if args.conditions else None, random_sets=args.random_sets,
        random_permutations=args.random_permutations, device=args.device, batch_size=args.batch_size,
    )
    if args.dry_run:
        from .dry_run import dry_run

        return dry_run_done(args.out, dry_run(config, args.out))
    rows = run_sta(config, args.out)
    from .report import format_tables

    print(format_tables(rows))
    print(f"wrote {args.out}/results.csv, predictions.jsonl, report.md and figures")
    return 0
