"""One run folder, one configuration: pin a study's settings in ``OUT/config.json``.

A rerun into the same folder resumes only with the same settings; anything else would mix two
configurations in one table, so it is refused with one line naming the settings that differ.
The check and the write are one step only because the caller holds the folder's writer lock
(`run_lock`, taken by `contract.Study.run` before the study reads anything): two runs started
together would otherwise both find the folder free and write their units side by side.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from kgprobe.atomic import write_json
from kgprobe.errors import StudyError
from kgprobe.studies.runner import holds_results


#: ``config.json``'s first key: the study a run belongs to (`pin_settings`' `study`), which
#: `kgprobe report` and `Results.from_path` read.
STUDY_KEY = "study"


def study_of_folder(out: Path) -> str | None:
    """The study named in ``out/config.json``; None if the file names none."""
    pinned = _pinned(Path(out) / "config.json")
    name = pinned.get(STUDY_KEY) if pinned else None
    return name if isinstance(name, str) else None


def require_study(out: Path, *, results: bool = True) -> str:
    """The study that wrote the run folder `out`, or a one-line error naming what is missing.
    `results`: the folder must hold ``results.csv`` too (a report rebuilds it from the unit
    files where the study writes it itself)."""
    out = Path(out)
    if not (out / "results.csv").is_file() and (results or study_of_folder(out) is None):
        raise StudyError(f"{out}: no results.csv; pass the --out folder of a kgprobe study run")
    if not (out / "config.json").is_file():
        raise StudyError(f"{out}: not written by a kgprobe study (no config.json); pass the "
                         "--out folder of one")
    name = study_of_folder(out)
    if name is None:
        raise StudyError(f"{out}/config.json: names no study; rerun the study into this folder "
                         "with the same settings (it resumes without rescoring) to record it")
    return name


def pin_settings(out: Path, settings: dict, report: dict | None = None, *,
                 study: str | None = None) -> None:
    """Write `settings` to ``out/config.json``, or check them against the pinned ones.

    `study`: the registered name of the study pinning them (its ``config.NAME``), recorded
    first; a folder of another study is refused.

    `report`: settings only the report reads (bootstrap resamples, …); written beside the
    pinned ones, never compared, so a rerun with other values redoes the report, not units.
    A folder holding results whose ``config.json`` is missing or unreadable is refused: the
    settings those results came from are unknown, and resuming would mix two runs."""
    path = Path(out) / "config.json"
    settings = json.loads(json.dumps(settings))  # tuples → lists, as they read back
    report = json.loads(json.dumps(report or {}))
    before = _pinned(path)
    if before is None and holds_results(out):
        state = "unreadable" if path.exists() else "missing"
        raise StudyError(f"{out}: holds results but its config.json is {state}, so the settings "
                         "they came from are unknown; pass another --out, or delete the folder's "
                         "results to start over")
    if before is not None and before.get(DRY_RUN_KEY) and not holds_results(out):
        before = None  # a dry run's record of what its prompts came from: no run to resume
    if before is not None:
        if study and before.get(STUDY_KEY) not in (None, study):
            raise StudyError(f"{out}: holds a {before[STUDY_KEY]} run, not {study}; pass "
                             "another --out")
        before = {k: v for k, v in before.items() if k not in report and k != STUDY_KEY}
        diff = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
        if diff:
            raise StudyError(f"{out}: holds a run with other settings ({', '.join(diff)}); "
                             "rerun with the same settings to resume, or pass another --out")
    named = {STUDY_KEY: study} if study else {}
    write_json(path, {**named, **settings, **report})


#: config.json of a folder only `--dry-run` wrote: its settings, marked so a run replaces it.
DRY_RUN_KEY = "dry_run"


def record_dry_run(out: Path, study: str, settings: dict) -> None:
    """Write what a dry run's prompts came from (its source first of all) to
    ``out/config.json``, unless the folder already holds a run's settings: those stay."""
    path = Path(out) / "config.json"
    before = _pinned(path)
    if before is None or before.get(DRY_RUN_KEY):
        write_json(path, {STUDY_KEY: study, DRY_RUN_KEY: True, **json.loads(json.dumps(settings))})


def check_dry_run_folder(out: Path, study: str) -> None:
    """Refuse a dry run of `study` into a folder that holds another study's run.

    A dry run writes ``prompts.jsonl`` over whatever is there: in another study's run folder
    it would replace the prompts kept beside that run's results with prompts that run never
    asked, and nothing in the folder would tell. The folder belongs to another run when its
    ``config.json`` pins another study's settings (not a dry run's record, which a dry run
    replaces as a run does), or when it holds results whose study it does not name. A dry run
    of the run's own study (its prompts again) and a folder holding neither results nor
    another study's settings stay free.
    Called under the folder's writer lock, so no run can start between check and write."""
    out = Path(out)
    pinned = _pinned(out / "config.json")
    owner = pinned.get(STUDY_KEY) if pinned else None
    results = holds_results(out)
    if owner is not None and owner != study and (results or not pinned.get(DRY_RUN_KEY)):
        raise StudyError(f"{out}: holds a {owner} run, not {study}, and a dry run would write "
                         "its prompts.jsonl among that run's files; pass another --out")
    if owner is None and results:
        raise StudyError(f"{out}: holds the results of a run whose config.json names no "
                         f"study, and a dry run of {study} would write its prompts.jsonl among "
                         "them; pass another --out")


def _pinned(path: Path) -> dict | None:
    """The settings pinned in `path`; None if it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def first_pin(out: Path):
    """Around pinning a folder's settings and the work before its first result (reading the
    data, loading the model): if that fails (an option found wrong once the data is read),
    a folder this run pinned first is left as it was, so a corrected rerun is not refused as
    "another run's settings"."""
    out = Path(out)
    created, fresh = not out.exists(), not (out / "config.json").exists()
    try:
        yield
    except BaseException:
        if fresh:
            (out / "config.json").unlink(missing_ok=True)
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()
        raise
