"""report.md of a finished run, rebuilt from its results.csv and predictions (`kgprobe report RUN`)."""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.runner import write_table_report
from kgprobe.studies.stats import grouped_intervals, interval_text, read_predictions

from .config import CELL_COLUMNS
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
    from .controls import note, run_settings, write_results

    if run_settings(Path(out)).get("controls"):  # `kgprobe report` rebuilds the controls' columns
        write_results(out)
    return write_table_report(out, TITLE, lambda rows: format_table(rows) + note(Path(out))
                              + intervals(Path(out)))




def observations(out: str | Path) -> list[dict]:
    """Each question with its metrics (`Study.observations`): the gold option's rank among
    the options' scores (ties counted against it) gives ``MRR`` and ``R@k``; ``accuracy`` is
    the study's own (the predicted letter is the gold)."""
    from kgprobe.studies.metrics import rank_metrics

    out_rows = []
    for p in read_predictions(Path(out)):
        scores = p.get("scores") or {}
        if p.get("gold") not in scores:
            continue
        rank = 1 + sum(v >= scores[p["gold"]] for k, v in scores.items() if k != p["gold"])
        metrics = rank_metrics([rank])
        metrics["accuracy"] = float(p["predicted"] == p["gold"])
        out_rows.append({**{c: p.get(c) for c in CELL_COLUMNS}, "item": p["prompt"], **metrics})
    return out_rows
