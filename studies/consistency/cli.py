"""`kgprobe study consistency`: do a model's beliefs about real entities respect entailment?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import NAME, ConsistencyConfig, add_arguments

if TYPE_CHECKING:
    from .plan import ConsistencyPlan


@register_study
class Consistency(Study):
    """P(conclusion believed | premises believed) over the RDFS derivations of real entities."""

    name = NAME
    help = "whether a model's beliefs about real entities are closed under RDFS entailment"
    config = ConsistencyConfig
    cell_columns = ("rule", "template")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def plan(self, config: ConsistencyConfig) -> "ConsistencyPlan":
        from .plan import ConsistencyPlan

        return ConsistencyPlan(config)

    def report(self, out: Path) -> Path:
        from .report import write_report

        return write_report(out)

    def summary(self, out: Path) -> str:
        from .report import format_table, read_rows

        return format_table(read_rows(out))

    def observations(self, out: Path) -> list[dict]:
        from .report import observations

        return observations(out)
