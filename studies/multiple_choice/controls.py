"""The multiple-choice study's controls beside every question set.

Each control (`studies.controls`) answers exactly the run's questions in ``OUT/controls/NAME``
— the same files, limit, instruction and answer form, handed each set's training answers as
the model is — so ``accuracy_frequency`` is what ``--model frequency`` alone scores on them.
Its interval is the same bootstrap over questions the model's report gives.

Which controls can answer: ``frequency`` and ``random`` rank option texts in every form.
``copy`` ranks first the options a prompt names; a letter question names every option in its
option list, so copy would answer by list position, not by what the question's premises
name — it is skipped for ``--answer letter`` (report.md says so) and run for ``--answer
text``, whose cloze leaves the option list out. ``prior`` (a cloze's subject removed) has no
multiple-choice form and is refused by the configuration.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.studies.controls import beside, control_columns, control_folder
from kgprobe.studies.runner import read_results, rows_to_csv

from .config import CELL_COLUMNS, COLUMNS

#: The metric each control gets beside the model's (with ``_lo``, ``_hi``).
METRICS = ("accuracy",)
#: Why a control is not run for an answer form.
SKIPPED = {("copy", "letter"): "copy is not run: a letter question's option list names every "
                               "option, so copying would answer by list position"}


def answering(config) -> tuple[str, ...]:
    """The controls that can answer `config`'s questions (`SKIPPED` left out)."""
    return tuple(c for c in config.controls if (c, config.answer) not in SKIPPED)


def run_settings(out: Path) -> dict:
    try:
        found = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def control_table(folder: Path) -> list[dict]:
    """A control's rows as its own run wrote them, each accuracy with its interval (questions
    resampled as `report.intervals` resamples them)."""
    from kgprobe.studies.stats import grouped_intervals, read_predictions

    found = grouped_intervals(read_predictions(folder),
                              lambda p: (p["set"], p["task"], p["p1"], p["answer"]),
                              lambda p: float(p["predicted"] == p["gold"]))
    rows = read_results(folder / "results.csv")
    for row in rows:
        iv = found.get(tuple(row[c] for c in CELL_COLUMNS))
        row["accuracy_lo"] = float(iv.lo[0]) if iv else ""
        row["accuracy_hi"] = float(iv.hi[0]) if iv else ""
    return rows


def write_results(out: str | Path) -> list[dict]:
    """Rewrite ``OUT/results.csv`` with every control's accuracy and interval beside each
    set (the controls config.json records whose folder holds results); → the rows."""
    out = Path(out)
    settings = run_settings(out)
    rows = read_results(out / "results.csv")
    tables = {}
    for control in settings.get("controls") or ():
        folder = control_folder(out, control, settings.get("model"))
        if (folder / "results.csv").is_file():
            tables[control] = control_table(folder)
    rows = beside(rows, tables, CELL_COLUMNS, METRICS)
    write_text(out / "results.csv", rows_to_csv(rows, [*COLUMNS, *control_columns(tables, METRICS)]))
    return rows


def note(out: Path) -> str:
    """report.md's lines on the controls: which answered, which could not and why."""
    settings = run_settings(Path(out))
    if "controls" not in settings:
        return ""
    ran, skipped = settings.get("controls") or [], settings.get("controls_skipped") or []
    lines = [f"\n\nControls (indented rows, the same questions; 95% interval in brackets): "
             f"{', '.join(ran) or 'none'}."]
    lines += [f" {SKIPPED.get((c, 'letter'), f'{c} is not run')}." for c in skipped]
    return "".join(lines)
