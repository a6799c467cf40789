"""`kgprobe study multiple-choice` (alias `kgprobe probe multiple-choice`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import CELL_COLUMNS, NAME, MultipleChoiceConfig, add_arguments

if TYPE_CHECKING:
    from .plan import MultipleChoicePlan


@register_study
class MultipleChoice(Study):
    """The paper's 20-option questions: the option letter (or text) the model prefers."""

    name = NAME
    help = "the paper's 20-option questions (§5), accuracy"
    config = MultipleChoiceConfig
    aliases = (("probe", "multiple-choice"),)
    cell_columns = CELL_COLUMNS
    wraps_model = False  # the letter form wraps each question itself (--chat); text: bare

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def plan(self, config: MultipleChoiceConfig) -> "MultipleChoicePlan":
        from .plan import MultipleChoicePlan

        return MultipleChoicePlan(config)


    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .study import format_table

        return format_table(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
