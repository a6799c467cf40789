"""One run folder, one configuration: pin a study's settings in ``OUT/config.json``.

A rerun into the same folder resumes only with the same settings; anything else would mix two
configurations in one table, so it is refused with one line naming the settings that differ.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgprobe.atomic import write_json
from kgprobe.errors import StudyError


def pin_settings(out: Path, settings: dict, report: dict | None = None) -> None:
    """Write `settings` to ``out/config.json``, or check them against the pinned ones.

    `report`: settings only the report reads (bootstrap resamples, …); written beside the
    pinned ones, never compared, so a rerun with other values redoes the report, not units."""
    path = Path(out) / "config.json"
    settings = json.loads(json.dumps(settings))  # tuples → lists, as they read back
    report = json.loads(json.dumps(report or {}))
    if path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # a config file we cannot read pins nothing: rewrite it
            before = settings
        before = {k: v for k, v in before.items() if k not in report}
        diff = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
        if diff:
            raise StudyError(f"{out}: holds a run with other settings ({', '.join(diff)}); "
                             "rerun with the same settings to resume, or pass another --out")
    write_json(path, {**settings, **report})
