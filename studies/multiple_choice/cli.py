"""`kgprobe study multiple-choice` (alias `kgprobe probe multiple-choice`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.studies.contract import Study
from kgprobe.studies.registry import register_study
from kgprobe.studies.options import dry_run_option, threads_option

from .config import MultipleChoiceConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset, HF id, local dir or .gguf file (causal for --answer letter), "
                        "or a baseline: frequency, random; required unless --dry-run")
    p.add_argument("--task", default="all",
                   help="all, memorizing, reasoning, or a comma list: type…range (TP…RG), "
                        "rdfs2…rdfs11, or one file such as rdfs9-12")
    p.add_argument("--data", type=Path, default=None,
                   help="a directory with memorizing/ and reasoning/ question files "
                        "(default: the paper's, bundled)")
    p.add_argument("--limit", type=int, default=None, help="questions per file (default: all)")
    p.add_argument("--instruction", default=None,
                   help="text after each question (default: 'Answer with the letter of the "
                        "correct option.'; '' for none)")
    p.add_argument("--answer", choices=["letter", "text"], default="letter",
                   help="letter: the paper's protocol, the option letter as the next token (causal "
                        "models); text: each option's text in an 'Answer: [MASK]' slot after the "
                        "question without its option list (any model)")
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the question in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=4, help="questions scored at once")
    threads_option(p)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    dry_run_option(p)


@register_study
class MultipleChoice(Study):
    """The paper's 20-option questions: the option letter (or text) the model prefers."""

    name = "multiple-choice"
    help = "the paper's 20-option questions (§5), accuracy"
    config = MultipleChoiceConfig
    aliases = (("probe", "multiple-choice"),)
    cell_columns = ("set", "task", "p1", "answer")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def execute(self, config: MultipleChoiceConfig, out: Path) -> None:
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
