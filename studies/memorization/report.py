"""report.md of a finished run, rebuilt from its results.csv (`kgprobe report RUN`)."""

from __future__ import annotations

from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.studies.runner import read_results

from .study import format_table


def write_report(out: str | Path) -> Path:
    out = Path(out)
    rows = read_results(out / "results.csv")
    path = out / "report.md"
    write_text(path, f"# Memorization study (TP, SCO, SPO, DM, RG)\n\nRun: `{out}`\n\n```\n{format_table(rows)}\n```\n")
    return path
