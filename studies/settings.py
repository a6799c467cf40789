"""One run folder, one configuration: pin a study's settings in ``OUT/config.json``.

A rerun into the same folder resumes only with the same settings; anything else would mix two
configurations in one table, so it is refused with one line naming the settings that differ.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from kgprobe.atomic import write_json
from kgprobe.errors import StudyError
from kgprobe.studies.runner import holds_results


def pin_settings(out: Path, settings: dict, report: dict | None = None) -> None:
    """Write `settings` to ``out/config.json``, or check them against the pinned ones.

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
    if before is not None:
        before = {k: v for k, v in before.items() if k not in report}
        diff = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
        if diff:
            raise StudyError(f"{out}: holds a run with other settings ({', '.join(diff)}); "
                             "rerun with the same settings to resume, or pass another --out")
    write_json(path, {**settings, **report})


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
