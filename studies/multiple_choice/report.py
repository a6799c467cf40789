"""report.md of a finished run, rebuilt from its results.csv and predictions (`kgprobe report RUN`)."""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.runner import write_table_report
from kgprobe.studies.stats import grouped_intervals, interval_text, read_predictions

from .study import format_table

TITLE = "Multiple-choice study (20 options, the paper's §5)"


def intervals(out: Path) -> str:
    """Accuracy of every file with its 95% interval (questions resampled, seed 0)."""
    found = grouped_intervals(read_predictions(out),
                              lambda p: (p["set"], p["task"], p["p1"], p["answer"]),
                              lambda p: float(p["predicted"] == p["gold"]))
    lines = [f"{s:11s} {task:14s} {p1:10s} {answer:6s} accuracy {100 * iv.estimate[0]:5.1f}% "
             f"{interval_text(iv)}  (n = {iv.n_items})" for (s, task, p1, answer), iv in found.items()]
    return "\n\n95% bootstrap intervals (questions resampled):\n" + "\n".join(lines) if lines else ""


def write_report(out: str | Path) -> Path:
    return write_table_report(out, TITLE, lambda rows: format_table(rows) + intervals(Path(out)))
