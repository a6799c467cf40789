"""`kgprobe study multiple-choice` (alias `kgprobe probe multiple-choice`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import CELL_COLUMNS, NAME, MultipleChoiceConfig, add_arguments


@register_study
class MultipleChoice(Study):
    """The paper's 20-option questions: the option letter (or text) the model prefers."""

    name = NAME
    help = "the paper's 20-option questions (§5), accuracy"
    config = MultipleChoiceConfig
    aliases = (("probe", "multiple-choice"),)
    cell_columns = CELL_COLUMNS

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def execute(self, config: MultipleChoiceConfig, out: Path, *, progress: bool = True) -> None:
        from .study import run_config

        run_config(config, out)
        self.report(out)

    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def dry_run(self, config: MultipleChoiceConfig, out: Path) -> int:
        from .dry_run import dry_run

        return dry_run(config, out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .study import format_table

        return format_table(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
