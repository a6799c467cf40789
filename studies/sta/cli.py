"""`kgprobe study sta`: options and the command (light: the study loads lazily)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.ontology.norms import FORMATS
from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study
from kgprobe.studies.options import dry_run_option, threads_option
from kgprobe.studies.sta import retrieval as ret

from .config import VOCAB_ENV, VOCABS, StaConfig

DOC = "Tacit assumptions: concept retrieval and property elicitation on feature norms (Weir et al. 2020)."

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--norms", type=Path, default=None,
                   help="feature norms: McRae's CONCS_FEATS_concstats_brm.txt or CSLB's norms.dat (or their folder)")
    p.add_argument("--norms-format", dest="format", choices=FORMATS, default="mcrae", help="layout of --norms (default mcrae)")
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
                   help=f"LAMA common vocabulary, common_vocab_cased.txt (default: ${VOCAB_ENV}; "
                        "needed for --vocab lama)")
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


@register_study
class Sta(Study):
    """Stereotypic tacit assumptions: concept retrieval and property elicitation."""

    name = "sta"
    help = ("tacit assumptions: concept retrieval and property elicitation on feature norms "
            "(Weir et al. 2020)")
    description = DOC
    config = StaConfig
    cell_columns = ("task", "condition", "n_properties", "relation", "context")
    written = "results.csv, predictions.jsonl, report.md and figures"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def main(self, args: argparse.Namespace) -> int:
        if args.compare:  # figures of finished runs, no study run
            from kgprobe.studies.run_lock import run_folder_lock

            from .report import write_comparison

            with run_folder_lock(args.out):
                for path in write_comparison(args.compare, args.out):
                    print(f"wrote {path}")
            return 0
        return super().main(args)

    def execute(self, config: StaConfig, out: Path) -> None:
        from .study import run_sta

        run_sta(config, out)

    def report(self, out: Path) -> Path:
        from .report import rebuild_report

        return rebuild_report(out)

    def dry_run(self, config: StaConfig, out: Path) -> int:
        from .dry_run import dry_run

        return dry_run(config, out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .report import format_tables

        return format_tables(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .study import observations

        return observations(out)
