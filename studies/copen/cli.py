"""`kgprobe study copen`: the study's entry in the registry (light: the study itself loads
when it runs). Its options and their checks live in `config`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import CELL_COLUMNS, NAME, DOC, CopenConfig, add_arguments

if TYPE_CHECKING:
    from .plan import CopenPlan


@register_study
class Copen(Study):
    """COPEN's three tasks on the official data or data generated from the store."""

    name = NAME
    help = "COPEN: CSJ, CPJ, CiC by zero-shot, linear probing or fine-tuning"
    description = DOC
    config = CopenConfig
    cell_columns = CELL_COLUMNS

    def __init__(self, loaded: Any = None) -> None:
        #: a model already loaded that the run uses instead of loading ``config.model``
        #: (the Python shortcut `study.run_copen`'s, for tests)
        self.loaded = loaded

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def plan(self, config: CopenConfig) -> "CopenPlan":
        from .plan import CopenPlan

        return CopenPlan(config)

    def load(self, config: CopenConfig) -> Any:
        """The model as a handle that loads it when a unit first needs it, so a resumed run
        whose units are all done (features and scores cached) loads nothing."""
        from .study import LazyModel

        return LazyModel(config, self.loaded)

    def report(self, out: Path) -> Path:
        from .study import write_report

        return write_report(out)

    def summary(self, out: Path) -> str:
        from kgprobe.studies.runner import read_results

        from .analysis import pct

        lines = []
        for r in read_results(out / "results.csv"):
            extra = f"  chain {pct(r['chain_accuracy'])}" if r["task"] == "cpj" else ""
            lines.append(f"{r['task']:4s} {r['method']:9s} {str(r['variant']):10s} seed "
                         f"{str(r['seed']):3s} n {r['n']:>5}  accuracy "
                         f"{pct(r['accuracy'])}{extra}")
        return "\n".join(lines)

    def observations(self, out: Path) -> list[dict]:
        from .analysis import observations

        return observations(out)
