"""Resumable study runs: a run is a list of units, each written to disk when it finishes.

A unit's predictions and metrics land in ``OUT/units/<key>.jsonl`` atomically; a rerun
skips every unit whose file exists, so a run killed at any point (even ``kill -9``)
continues where it stopped and ends with the same numbers. A unit file written for a
different number of items (the same folder rerun with another ``--limit``) is stale and
is run again, so one folder never mixes sizes. ``results.csv`` is rebuilt from the unit
files' first lines after each unit; ``predictions.jsonl``, which holds every item, once at
the end of a run (re-reading all predictions after every unit grew with the square of the
number of units).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kgprobe.atomic import write_jsonl, write_text
from tqdm import tqdm


@dataclass
class Unit:
    key: dict  # the result row's identifying columns, e.g. {"task": "type", "template": 0}
    run: Callable[[], tuple[dict, list[dict]]]  # -> (metrics, per-item predictions)
    size: int = 0  # items, for the progress display

    @property
    def name(self) -> str:
        return "__".join(re.sub(r"[^A-Za-z0-9@.-]+", "-", f"{k}={v}") for k, v in self.key.items())


def holds_results(out: Path) -> bool:
    """Whether a run wrote into `out`: finished units, ``results.csv`` or predictions."""
    out = Path(out)
    units = out / "units"
    return ((units.is_dir() and any(units.iterdir()))
            or any((out / name).exists() for name in ("results.csv", "predictions.jsonl")))


def unit_path(out: Path, unit: Unit) -> Path:
    return out / "units" / f"{unit.name}.jsonl"


def finished(out: Path, unit: Unit) -> bool:
    path = unit_path(out, unit)
    return path.exists() and _head(path).get("size", unit.size) == unit.size


def read_unit(path: Path) -> tuple[dict, list[dict]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    return head["row"], [json.loads(line) for line in lines[1:]]


def run_units(out: Path, units: Sequence[Unit], columns: Sequence[str], *,
              progress: bool = True, results: bool = True) -> list[dict]:
    """Run every unfinished unit; return all result rows (finished earlier or now).

    `results`: write ``results.csv`` (the unit rows under `columns`) after each unit; a study
    whose table is more than its unit rows (premise ablation: averages and intervals) passes
    False and writes it once, itself, from the unit files, so one function writes that file."""
    out.mkdir(parents=True, exist_ok=True)
    todo = [u for u in units if not finished(out, u)]
    done = len(units) - len(todo)
    total = sum(u.size for u in units)
    # The context manager closes the bar before an error reaches the CLI, so the error line
    # is the last thing on the terminal.
    with tqdm(total=total, initial=total - sum(u.size for u in todo), unit="item",
              disable=not progress, desc=f"{done}/{len(units)} units done") as bar:
        for unit in todo:
            bar.set_postfix_str(unit.name[:60])
            metrics, predictions = unit.run()
            row = {**unit.key, **metrics}
            write_jsonl(unit_path(out, unit), [{"row": row, "size": unit.size}, *predictions])
            done += 1
            bar.set_description(f"{done}/{len(units)} units done")
            bar.update(unit.size)
            if results:
                write_summaries(out, units, columns, predictions=False)
    return write_summaries(out, units, columns, results=results)


def _head(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.loads(fh.readline())


def write_summaries(out: Path, units: Sequence[Unit], columns: Sequence[str], *,
                    predictions: bool = True, results: bool = True) -> list[dict]:
    """Write ``results.csv`` (unless told not to) and ``predictions.jsonl`` (unless told not
    to) from the unit files; return the unit rows."""
    rows, preds = [], []
    for unit in units:
        path = unit_path(out, unit)
        if not path.exists():
            continue
        if predictions:
            row, unit_preds = read_unit(path)
            preds.extend({**unit.key, **p} for p in unit_preds)
        else:
            row = _head(path)["row"]
        rows.append(row)
    if results:
        write_text(out / "results.csv", rows_to_csv(rows, columns))
    if predictions:
        write_jsonl(out / "predictions.jsonl", preds)
    return rows


def rows_to_csv(rows: Sequence[dict], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})
    return buf.getvalue()


def read_results(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_table_report(out: str | Path, title: str, format_table: Callable[[list[dict]], str]) -> Path:
    """``out/report.md``: a title and the study's table, rebuilt from ``out/results.csv``.

    For studies whose table says everything (memorization, multiple choice); the runs write it
    and `kgprobe report RUN` rebuilds it the same way.
    """
    out = Path(out)
    table = format_table(read_results(out / "results.csv"))
    path = out / "report.md"
    write_text(path, f"# {title}\n\nRun: `{out}`\n\n```\n{table}\n```\n")
    return path
