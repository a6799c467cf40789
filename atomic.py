"""Writing result files so that a crash never leaves a half-written one."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterable, Iterator


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `path` to write; on success rename it over `path`.

    The one way kgprobe writes a file that must never be seen half-written (results, caches,
    exports, trained vectors): a crash or an exception leaves the old file or none, and no
    stray temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part{path.suffix}")
    try:
        yield tmp
        tmp.replace(path)  # atomic on POSIX
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    """Write `text` atomically (temporary sibling, fsync, rename)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Write one JSON object per line, atomically; returns the number of rows."""
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def write_json(path: str | Path, data) -> None:
    write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
