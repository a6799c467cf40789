"""`kgprobe study sta`: options and the command (light: the study loads lazily)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import CELL_COLUMNS, NAME, StaConfig, add_arguments

if TYPE_CHECKING:
    from .plan import StaPlan

DOC = "Tacit assumptions: concept retrieval and property elicitation on feature norms (Weir et al. 2020)."

@register_study
class Sta(Study):
    """Stereotypic tacit assumptions: concept retrieval and property elicitation."""

    name = NAME
    help = ("tacit assumptions: concept retrieval and property elicitation on feature norms "
            "(Weir et al. 2020)")
    description = DOC
    config = StaConfig
    cell_columns = CELL_COLUMNS
    wraps_model = False  # its slot distributions take no chat wrap; --seed samples concepts
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

    def plan(self, config: StaConfig) -> "StaPlan":
        from .plan import StaPlan

        return StaPlan(config)


    def report(self, out: Path) -> Path:
        from .report import rebuild_report

        return rebuild_report(out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .report import format_tables

        return format_tables(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .study import observations

        return observations(out)
