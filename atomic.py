"""Writing result files so that a crash never leaves a half-written one."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from kgprobe.errors import OutputError


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `path` to write; on success rename it over `path`.

    The one way kgprobe writes a file that must never be seen half-written (results, caches,
    exports, trained vectors): a crash or an exception leaves the old file or none, and no
    stray temporary file. The temporary name is unpredictable and created exclusively
    (``mkstemp``: O_CREAT|O_EXCL, so a symlink planted at a guessed name is never followed),
    so two processes writing one `path` never share it: each renames a whole file, the
    last one wins. It keeps `path`'s suffix (writers such as numpy's add theirs otherwise).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".part{path.suffix}",
                                    dir=path.parent)
    except OSError as err:  # name the file the user asked for, not our temporary one
        raise OutputError(f"{path}: cannot be written ({err.strerror}); "
                          f"{_HINTS.get(err.errno, 'write it somewhere else')}") from None
    tmp = Path(name)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would outlive the rename
        os.close(fd)
        yield tmp
        tmp.replace(path)  # atomic on POSIX
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename in (None, name, str(tmp)):
            # a write's ENOSPC names no file: name the one the user asked for (`cli.outcome`)
            err.filename, err.filename2 = str(path), None
        raise


_HINTS = {errno.ENOSPC: "free disk space and run the command again",
          errno.EROFS: "write it on a writable file system",
          errno.EACCES: "check the folder's permissions, or write it somewhere else"}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


def check_output(path: str | Path, option: str, *, folder: bool) -> None:
    """Refuse, before any work is done, an output `path` (given as `option`) that cannot be
    written: a folder where a file is asked for or a file where a folder is, a file in the way
    of a folder to create, a folder that is not writable. (Writing still checks again.)"""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path}: is a file, and {option} takes a folder; pass a new "
                          "folder (or a run's folder to resume it)")
    if not folder and path.is_dir():
        raise OutputError(f"{option} {path}: is a folder, and {option} takes a file name; pass "
                          f"a file such as {path / 'out'}")
    base = path if folder and path.exists() else path.absolute().parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise OutputError(f"{option} {path}: {base} is a file, not a folder; write it somewhere "
                          "else")
    if not os.access(base, os.W_OK):  # said as the write itself would say it
        code = errno.EROFS if os.statvfs(base).f_flag & os.ST_RDONLY else errno.EACCES
        raise OutputError(f"{option} {path}: cannot be written ({os.strerror(code)}); "
                          f"{_HINTS[code]}")
