"""`kgprobe study memorization` (alias `kgprobe probe memorizing`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.contract import Study
from kgprobe.studies.ontology_source import add_ontology_options
from kgprobe.studies.options import (
    candidates_option,
    dry_run_option,
    ranking_option,
    scale_options,
    threads_option,
)
from kgprobe.studies.registry import register_study

from .config import MemorizationConfig


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
    p.add_argument("--seed", type=int, default=0, help="seed of the distractors and baselines")
    candidates_option(p)
    ranking_option(p)
    scale_options(p)
    p.add_argument("--batch-size", type=int, default=64, help="prompts scored at once")
    threads_option(p)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    add_ontology_options(p, probes=True)


@register_study
class Memorization(Study):
    """TP, SCO, SPO, DM, RG cloze prompts ranked against each task's candidates."""

    name = "memorization"
    help = "the memorization study (TP, SCO, SPO, DM, RG)"
    config = MemorizationConfig
    aliases = (("probe", "memorizing"),)
    cell_columns = ("task", "template", "masks", "pooling", "split", "protocol")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def execute(self, config: MemorizationConfig, out: Path) -> None:
        from .study import run_config

        run_config(config, out)
        self.report(out)

    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def dry_run(self, config: MemorizationConfig, out: Path) -> int:
        from .dry import write_dry_run

        return write_dry_run(config, out)

    def requests(self, config: MemorizationConfig) -> list:
        """The units and `ProbeRequest`s a run of `config` scores (`requests.plan`): what its
        dry run writes and `kgprobe export lm-eval` converts."""
        from .requests import plan

        return plan(config)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .study import format_table

        return format_table(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
