"""`kgprobe study consistency`: do a model's beliefs about real entities respect entailment?"""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.contract import Study
from kgprobe.studies.ontology_source import add_ontology_options
from kgprobe.studies.registry import register_study
from kgprobe.studies.options import (
    candidates_option,
    dry_run_option,
    ranking_option,
    scale_options,
    threads_option,
)

from .config import ConsistencyConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a baseline: frequency, random (not needed with --dry-run)")
    p.add_argument("--rules", default="all",
                   help="comma-separated rules (rdfs2, rdfs3, rdfs5, rdfs7, rdfs9, rdfs11), or "
                        "all: every rule with derivations among the ontology's entities")
    p.add_argument("--limit", type=int, default=50,
                   help="derivations per rule, a seeded sample (0: all; default 50)")
    p.add_argument("--believe-at", type=int, default=1,
                   help="a statement is believed when its gold ranks at or above this among "
                        "its candidates (default 1: ranked first)")
    p.add_argument("--template", default="0",
                   help="manual template index (relations with fewer use their first), or all")
    p.add_argument("--reference", default="prior", choices=("prior", "frequency", "copy", "random"),
                   help="whose consistency the headline subtracts (default prior: the model's "
                        "own content-free prior, prior:MODEL, scored in the same run)")
    dry_run_option(p)
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the derivation sample, the distractors and the intervals")
    candidates_option(p)
    ranking_option(p)
    scale_options(p)
    p.add_argument("--batch-size", type=int, default=64, help="prompts scored at once")
    threads_option(p)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: every unit written as it finishes; rerun into it to "
                        "resume")
    add_ontology_options(p)


@register_study
class Consistency(Study):
    """P(conclusion believed | premises believed) over the RDFS derivations of real entities."""

    name = "consistency"
    help = "whether a model's beliefs about real entities are closed under RDFS entailment"
    config = ConsistencyConfig
    cell_columns = ("rule", "template")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def execute(self, config: ConsistencyConfig, out: Path) -> None:
        from .study import run_config

        run_config(config, out)
        self.report(out)

    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def dry_run(self, config: ConsistencyConfig, out: Path) -> int:
        from .study import write_dry_run

        return write_dry_run(config, out)

    def summary(self, out: Path) -> str:
        from .report import format_table, read_rows

        return format_table(read_rows(out))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
