"""Resumable study runs: a run is a list of units, each written to disk when it finishes.

A unit's predictions and metrics land in ``OUT/units/<key>.jsonl`` atomically; a rerun
skips every unit whose file is whole, so a run killed at any point (even ``kill -9``)
continues where it stopped and ends with the same numbers. A unit file written for a
different number of items (the same folder rerun with another ``--limit``) is stale and
is run again, so one folder never mixes sizes. ``results.csv`` is rebuilt from the unit
rows after each unit; ``predictions.jsonl``, which holds every item, once at the end of a
run (re-reading all predictions after every unit grew with the square of the number of
units).

A unit file is its row (first line), one line per prediction, and a last line holding the
number of predictions and the SHA-256 of every line before it (`write_unit`). Every reader
goes through `read_unit` / `finished_unit`, which check both: a unit cut short, edited or with
a line that is no JSON (and a unit written before units carried this line) is never counted;
a resumed run scores it again and says so on stderr, naming the file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kgprobe.atomic import write_jsonl, write_text
from kgprobe.errors import StudyError
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


#: The key of a unit file's last line: {"unit_check": {"lines": N, "sha256": "…"}}.
CHECK_KEY = "unit_check"


class DamagedUnitError(StudyError):
    """A unit file that is not whole: cut short, edited, or with a line that is no JSON."""


def write_unit(path: Path, row: dict, size: int, predictions: Sequence[dict]) -> None:
    """Write a unit atomically: its row and size, its predictions, then the check line (the
    number of predictions and the SHA-256 of the lines above), which `read_unit` verifies."""
    lines = [json.dumps(x, ensure_ascii=False) + "\n"
             for x in ({"row": row, "size": size}, *predictions)]
    body = "".join(lines)
    check = {CHECK_KEY: {"lines": len(predictions),
                         "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}}
    write_text(path, body + json.dumps(check) + "\n")


def _parse_unit(path: Path) -> tuple[dict, list[dict]]:
    """The unit file's head ({"row", "size"}) and predictions; DamagedUnitError saying what
    is wrong when it fails its check line."""
    data = path.read_bytes()
    body, _, last = data.removesuffix(b"\n").rpartition(b"\n")
    body += b"\n"
    try:
        check = json.loads(last)[CHECK_KEY] if data.endswith(b"\n") else None
        lines, digest = check["lines"], check["sha256"]
    except (ValueError, TypeError, KeyError):
        raise DamagedUnitError(f"{path}: has no check line (cut short, or written by an older "
                               "kgprobe)") from None
    if hashlib.sha256(body).hexdigest() != digest:
        raise DamagedUnitError(f"{path}: its lines do not match its checksum (edited or "
                               "damaged)")
    try:
        rows = [json.loads(line) for line in body.decode("utf-8").splitlines()]
    except ValueError:
        raise DamagedUnitError(f"{path}: holds a line that is not JSON") from None
    head = rows[0] if rows else None
    if len(rows) != lines + 1 or not isinstance(head, dict) or not isinstance(head.get("row"), dict):
        raise DamagedUnitError(f"{path}: holds {len(rows) - 1} predictions where its check line "
                               f"says {lines}")
    return head, rows[1:]


def read_unit(path: Path) -> tuple[dict, list[dict]]:
    """A finished unit's row and predictions; a damaged file is one line naming it
    (`finished_unit` is the lenient reader a resuming run uses)."""
    try:
        head, predictions = _parse_unit(path)
    except DamagedUnitError as err:
        raise DamagedUnitError(f"{err}; rerun the study into {path.parent.parent} to score "
                               "the unit again") from None
    return head["row"], predictions


def finished_unit(out: Path, unit: Unit) -> tuple[dict, list[dict]] | None:
    """`unit`'s row and predictions if its file is whole and of its size; None if it must be
    scored (again): missing, stale (another size) or damaged (said on stderr)."""
    path = unit_path(out, unit)
    try:
        head, predictions = _parse_unit(path)
    except FileNotFoundError:
        return None
    except (DamagedUnitError, OSError) as err:
        from kgprobe.terminal import printable

        print(f"kgprobe: warning: {printable(str(err))}; scoring the unit again",
              file=sys.stderr, flush=True)
        return None
    if head.get("size", unit.size) != unit.size:
        return None
    return head["row"], predictions


def finished(out: Path, unit: Unit) -> bool:
    return finished_unit(out, unit) is not None


def run_units(out: Path, units: Sequence[Unit], columns: Sequence[str], *,
              progress: bool = True, results: bool = True) -> list[dict]:
    """Run every unfinished unit; return all result rows (finished earlier or now).

    `results`: write ``results.csv`` (the unit rows under `columns`) after each unit; a study
    whose table is more than its unit rows (premise ablation: averages and intervals) passes
    False and writes it once, itself, from the unit files, so one function writes that file."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}  # unit rows known whole, so results.csv never re-reads units
    for unit in units:
        found = finished_unit(out, unit)
        if found is not None:
            rows[unit.name] = found[0]
    todo = [u for u in units if u.name not in rows]
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
            write_unit(unit_path(out, unit), row, unit.size, predictions)
            rows[unit.name] = json.loads(json.dumps(row))  # as it reads back
            done += 1
            bar.set_description(f"{done}/{len(units)} units done")
            bar.update(unit.size)
            if results:
                write_text(out / "results.csv",
                           rows_to_csv([rows[u.name] for u in units if u.name in rows], columns))
    return write_summaries(out, units, columns, results=results)


def write_summaries(out: Path, units: Sequence[Unit], columns: Sequence[str], *,
                    predictions: bool = True, results: bool = True) -> list[dict]:
    """Write ``results.csv`` (unless told not to) and ``predictions.jsonl`` (unless told not
    to) from the unit files (each checked, `read_unit`); return the unit rows."""
    rows, preds = [], []
    for unit in units:
        path = unit_path(out, unit)
        if not path.exists():
            continue
        row, unit_preds = read_unit(path)
        if predictions:
            preds.extend({**unit.key, **p} for p in unit_preds)
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
