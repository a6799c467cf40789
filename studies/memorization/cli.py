"""`kgprobe study memorization` (alias `kgprobe probe memorizing`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import CELL_COLUMNS, NAME, MemorizationConfig, add_arguments

if TYPE_CHECKING:
    from .plan import MemorizationPlan


@register_study
class Memorization(Study):
    """TP, SCO, SPO, DM, RG cloze prompts ranked against each task's candidates."""

    name = NAME
    help = "the memorization study (TP, SCO, SPO, DM, RG)"
    config = MemorizationConfig
    aliases = (("probe", "memorizing"),)
    cell_columns = CELL_COLUMNS

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def plan(self, config: MemorizationConfig) -> "MemorizationPlan":
        from .plan import MemorizationPlan

        return MemorizationPlan(config)

    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .report import generated
        from .study import format_table

        if generated(out):
            from .generate import format_table as generate_table

            return generate_table(read_results(out / "results.csv"))
        return format_table(read_results(out / "results.csv"))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
