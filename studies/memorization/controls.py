"""The memorization study's controls beside every cell of results.csv and report.md.

Each control (`studies.controls`: frequency, copy, random, prior) is asked the run's very
requests in ``OUT/controls/NAME`` — the same records, templates, candidates and seeds, its
scorers trained on each task's training answers as the model's are — so its row of a cell is
what a model that reads nothing (or, for the prior, no subject) scores on exactly those
prompts: ``MRR_frequency`` equals the MRR of ``--model frequency`` run alone with the same
settings. A control's value is its own results row; its interval is the same bootstrap over
records as the model's report gives (ranking), or its row's own interval (open answers, whose
rows carry one). Under ``--protocol paper`` the paper's metrics have no per-record interval
here, so the control's ``_lo``/``_hi`` are left empty rather than guessed.

What the controls mean here: a memorization prompt writes no premise, so ``copy`` (the
candidates a prompt names first, then by frequency) can only gain where a subject's own label
names a candidate ("Paris City Hall" → city): the label-overlap a cloze can be answered by
without any knowledge. ``frequency`` is the label prior of the training split, ``random``
chance at the run's candidate protocol.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.studies.controls import beside, control_columns, control_folder
from kgprobe.studies.runner import read_results, rows_to_csv

#: The ranking metrics each control gets beside the model's (with ``_lo``, ``_hi``).
RANK_METRICS = ("R@1", "R@5", "R@10", "MRR", "MRRa")
#: The columns that match a control's row to the model's: a cell's columns less the model's
#: masks and pooling (a baseline has neither; the prior has the model's).
KEYS = ("task", "template", "split", "protocol", "study_protocol")


def run_settings(out: Path) -> dict:
    """The run folder's config.json (empty when it has none)."""
    try:
        found = json.loads((Path(out) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def metrics_of(settings: dict) -> tuple[str, ...]:
    """The metrics a run's cells report: the ranking ones, or the open answers' rates."""
    if settings.get("answers") == "generate":
        from .generate import METRICS

        return METRICS
    return RANK_METRICS


def _intervals(folder: Path, rows: list[dict]) -> None:
    """Each ranking row's ``M_lo``/``M_hi``: the bootstrap over its records from the folder's
    predictions, resampled as the model's own report resamples (`report.intervals`: seed 0,
    keyed by the cell), so a control that is the run's model gets the model's intervals."""
    from kgprobe.studies.metrics import rank_metrics
    from kgprobe.studies.stats import mean_interval, read_predictions

    cells: dict[tuple, tuple[str, list[dict]]] = {}
    for p in read_predictions(folder):
        if p.get("gold_ranks"):
            cell = (str(p.get("task")), str(p.get("template")), str(p.get("split")),
                    p.get("protocol") or "all")
            found = cells.setdefault(cell, (str((p.get("task"), p.get("template"))), []))
            found[1].append(rank_metrics(p["gold_ranks"], (1, 5, 10)))
    for row in rows:
        key, found = cells.get((row.get("task"), row.get("template"), row.get("split"),
                                row.get("protocol")), ("", []))
        for m in RANK_METRICS:
            iv = mean_interval([v[m] for v in found], seed=0, key=(key,)) if found else None
            row[f"{m}_lo"] = float(iv.lo[0]) if iv else ""
            row[f"{m}_hi"] = float(iv.hi[0]) if iv else ""


def control_table(folder: Path, settings: dict) -> list[dict]:
    """A control's rows as its own run wrote them, with an interval on each metric."""
    rows = read_results(folder / "results.csv")
    if settings.get("answers") != "generate" and settings.get("protocol") != "paper":
        _intervals(folder, rows)
    return rows


def write_results(out: str | Path) -> list[dict]:
    """Rewrite ``OUT/results.csv`` with every control's value and interval beside each cell
    (the controls config.json records whose folder holds results); → the rows."""
    from .generate import COLUMNS as GENERATE_COLUMNS
    from .config import COLUMNS

    out = Path(out)
    settings = run_settings(out)
    metrics = metrics_of(settings)
    rows = read_results(out / "results.csv")
    base = GENERATE_COLUMNS if settings.get("answers") == "generate" else COLUMNS
    tables = {}
    for control in settings.get("controls") or ():
        folder = control_folder(out, control, settings.get("model"))
        if (folder / "results.csv").is_file():
            tables[control] = control_table(folder, settings)
    rows = beside(rows, tables, KEYS, metrics)
    write_text(out / "results.csv", rows_to_csv(rows, [*base, *control_columns(tables, metrics)]))
    return rows


def note(settings: dict) -> str:
    """report.md's line on the controls: which were asked, and what copy can gain here."""
    if "controls" not in settings:  # a run from before the controls: nothing to say
        return ""
    controls = settings.get("controls") or []
    if settings.get("model") and any(c == settings["model"] for c in controls):
        own = f" `{settings['model']}` is itself a control: its rows are its own."
    else:
        own = ""
    if not controls:
        return ("\n\nControls: none (`--controls none`): no row says what a model that reads "
                "nothing scores on these prompts.")
    return ("\n\nControls (indented rows; results.csv: `MRR_<control>` and its `_lo`, `_hi`): "
            f"{', '.join(controls)}, each asked exactly these requests.{own} copy ranks first "
            "the candidates a prompt names, which a cloze without premises does only where the "
            "subject's label names one; frequency is the training split's label prior; random "
            "is chance at these candidates.")
