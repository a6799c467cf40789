"""Writing result files so that a crash never leaves a half-written one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable


def write_text(path: str | Path, text: str) -> None:
    """Write to a temporary sibling, then rename over the target (atomic on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Write one JSON object per line, atomically; returns the number of rows."""
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def write_json(path: str | Path, data) -> None:
    write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
