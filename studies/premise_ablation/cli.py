"""`kgprobe study premise-ablation`: the study's entry in the registry (light: the study
itself loads when it runs). Its options and their checks live in `config`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study

from .config import NAME, AblationConfig, add_arguments

if TYPE_CHECKING:
    from .plan import PremiseAblationPlan


@register_study
class PremiseAblation(Study):
    """Reasoning with premises not given, known implicitly, or written into the prompt."""

    name = NAME
    help = "reasoning with premises not given, implicit, explicit (the main job)"
    config = AblationConfig
    written = "results.csv, predictions.jsonl, comparisons.csv, report.md and figures"
    cell_columns = ("rule", "p1", "p2", "template", "variant", "depth", "distractors")
    model_assigned = ("p1", "p2")  # recalled premises are "implicit": the model's answers

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def plan(self, config: AblationConfig) -> "PremiseAblationPlan":
        from .plan import PremiseAblationPlan

        return PremiseAblationPlan(config)

    def report(self, out: Path) -> Path:
        from .generate import generated, write_generate_report
        from .report import write_report

        if generated(out):
            return write_generate_report(out)

        return write_report(out)

    def observations(self, out: Path) -> list[dict]:
        from .cells import observations
        from .generate import generated
        from .generate import observations as graded

        if generated(out):
            return graded(out)

        return observations(out)
