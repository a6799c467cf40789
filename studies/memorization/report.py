"""report.md of a finished run, rebuilt from its results.csv (`kgprobe report RUN`)."""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.runner import write_table_report

from .study import format_table

TITLE = "Memorization study (TP, SCO, SPO, DM, RG)"


def write_report(out: str | Path) -> Path:
    return write_table_report(out, TITLE, format_table)
