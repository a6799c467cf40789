"""`kgprobe study consistency`: do a model's beliefs about real entities respect entailment?"""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import NAME, ConsistencyConfig, add_arguments


@register_study
class Consistency(Study):
    """P(conclusion believed | premises believed) over the RDFS derivations of real entities."""

    name = NAME
    help = "whether a model's beliefs about real entities are closed under RDFS entailment"
    config = ConsistencyConfig
    cell_columns = ("rule", "template")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def execute(self, config: ConsistencyConfig, out: Path, *, progress: bool = True) -> None:
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
