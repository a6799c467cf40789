"""report.md of a finished run, rebuilt from its results.csv and predictions (`kgprobe report RUN`)."""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.metrics import rank_observations
from kgprobe.studies.runner import write_table_report
from kgprobe.studies.stats import grouped_intervals, interval_text, read_predictions

from .config import CELL_COLUMNS
from .study import format_table

TITLE = "Memorization study (TP, SCO, SPO, DM, RG)"


def intervals(out: Path) -> str:
    """MRR and R@1 of every task × template with its 95% interval (items resampled, seed 0)."""
    preds = read_predictions(out)
    lines = []
    for name, value in (("MRR", lambda p: 1 / min(p["gold_ranks"]) if p.get("gold_ranks") else None),
                        ("R@1", lambda p: float(min(p["gold_ranks"]) <= 1) if p.get("gold_ranks") else None)):
        found = grouped_intervals(preds, lambda p: (p["task"], p["template"]), value)
        lines += [f"{task:14s}  template {template}  {name:4s} {100 * iv.estimate[0]:5.1f} "
                  f"{interval_text(iv)}  (n = {iv.n_items})" for (task, template), iv in found.items()]
    return "\n\n95% bootstrap intervals (items resampled):\n" + "\n".join(lines) if lines else ""


def ranking_note(rows) -> str:
    """How the golds were ranked (results.csv's `ranking`; runs before it existed ranked raw)."""
    names = sorted({r.get("ranking") or "raw" for r in rows})
    text = {"filtered": "filtered (each gold ranked without the record's other golds)",
            "raw": "raw (every candidate counts, other golds included)"}
    return "\n\nRanking: " + "; ".join(text.get(n, n) for n in names) if rows else ""


def generated(out: Path) -> bool:
    """Whether the run folder holds open answers (``--answers generate`` in its config.json)."""
    import json

    try:
        return json.loads((out / "config.json").read_text(encoding="utf-8")).get("answers") == "generate"
    except (OSError, ValueError, AttributeError):
        return False


def control_intervals(rows) -> str:
    """The controls' MRR and R@1 on each cell with their 95% intervals (results.csv's
    ``MRR_<control>_lo`` …): what a model that reads nothing scores on the same requests."""
    from kgprobe.studies.controls import shown_controls
    from kgprobe.studies.stats import format_interval

    def num(v) -> float:
        try:
            return float(v)
        except (TypeError, ValueError):
            return float("nan")

    lines = []
    for row in rows:
        for c in shown_controls(rows, ("MRR", "R@1")):
            parts = [f"{m:4s} {format_interval(*(num(row.get(f'{m}_{c}{s}')) for s in ('', '_lo', '_hi')))}"
                     for m in ("MRR", "R@1") if row.get(f"{m}_{c}", "") != ""]
            if parts:
                lines.append(f"{row.get('task', ''):14s}  template {row.get('template', '')}  "
                             f"{c:9s}  " + "  ".join(parts))
    return ("\n\nThe controls on the same requests, 95% bootstrap intervals (records "
            "resampled):\n" + "\n".join(lines)) if lines else ""


def write_report(out: str | Path) -> Path:
    from .controls import note, run_settings

    settings = run_settings(Path(out))
    if settings.get("controls"):  # `kgprobe report` rebuilds the controls' columns too
        from .controls import write_results

        write_results(out)
    if generated(Path(out)):
        from .generate import NOTE
        from .generate import format_table as generate_table

        return write_table_report(out, TITLE + ", open answers graded by the ontology",
                                  lambda rows: generate_table(rows) + NOTE + note(settings))
    return write_table_report(out, TITLE, lambda rows: format_table(rows) + ranking_note(rows)
                              + note(settings) + intervals(Path(out)) + control_intervals(rows))




def observations(out: str | Path) -> list[dict]:
    """Each scored record of each cell with its metrics (`Study.observations`). A unit of
    every candidate writes no ``protocol`` (its files keep their names); its cell says "all",
    as results.csv does, so `kgprobe compare` shows and checks it."""
    preds = read_predictions(Path(out))
    if preds and "grade" in preds[0]:  # --answers generate: grades, not ranks
        from .generate import observations as graded

        return graded(Path(out), CELL_COLUMNS)
    return [{**obs, "protocol": obs["protocol"] or "all"}
            for obs in rank_observations(read_predictions(Path(out)), CELL_COLUMNS)]
