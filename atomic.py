"""Writing result files so that a crash never leaves a half-written one.

The temporary file a write goes through is a hidden sibling of its target named
``.NAME.PID-XXXXXXXX.part[.SUFFIX]``: the writer's pid, and a `flock` it holds while it writes.
A writer stopped by SIGTERM, SIGHUP or Ctrl-C removes it; one killed outright (SIGKILL, the
OOM killer, a power cut) cannot, so every later write into that folder first removes the ones
whose writer is gone: its pid no longer runs *and* nobody holds its lock (a pid from another
pid namespace, or a pid reused since, keeps its file). Files of any other name are never
touched (tests/test_store_files.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import os
import re
import signal
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator

from kgprobe.errors import OutputError

#: the names `atomic_path` gives its temporary files, and the only ones `sweep` removes
PART_NAME = re.compile(r"\..+\.(?P<pid>\d+)-[a-z0-9_]{8}\.part(?:\.[^.]+)?")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `path` to write; on success rename it over `path`.

    The one way kgprobe writes a file that must never be seen half-written (results, caches,
    exports, trained vectors): a crash or an exception leaves the old file or none, and no
    stray temporary file. The temporary name is unpredictable and created exclusively
    (``mkstemp``: O_CREAT|O_EXCL, so a symlink planted at a guessed name is never followed),
    so two processes writing one `path` never share it: each renames a whole file, the
    last one wins. It keeps `path`'s suffix (writers such as numpy's add theirs otherwise).
    A write the disk refuses (full, quota, file size limit, read-only) is one `OutputError`
    naming `path`.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep(path.parent)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-",
                                    suffix=f".part{path.suffix}", dir=path.parent)
    except OSError as err:  # name the file the user asked for, not our temporary one
        raise _output_error(path, err) from None
    tmp = Path(name)
    _hold(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours since mkstemp: never blocks
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would outlive the rename
        yield tmp
        tmp.replace(path)  # atomic on POSIX
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and _errno(err) in _WRITE_ERRNOS:
            raise _output_error(path, err) from None
        if isinstance(err, OSError) and err.filename in (None, name, str(tmp)):
            # a write's error names no file: name the one the user asked for (`cli.outcome`)
            err.filename, err.filename2 = str(path), None
        raise
    finally:
        os.close(fd)  # releases the flock, after the rename or the unlink
        _release(name)


def sweep(folder: str | Path) -> list[Path]:
    """Remove the temporary files killed writers left in `folder` (see the module's
    docstring); returns them. Once per folder and process: a run writing a thousand
    files into one folder lists it once."""
    folder = Path(folder)
    key = os.path.abspath(folder)
    if key in _SWEPT:
        return []
    _SWEPT.add(key)
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        found = PART_NAME.fullmatch(entry.name)
        if (found and not process_alive(int(found.group("pid")))
                and entry.is_file(follow_symlinks=False) and _remove_unheld(entry.path)):
            removed.append(folder / entry.name)
    return removed


def _remove_unheld(name: str) -> bool:
    """Unlink `name` if no process holds its flock (we hold it while unlinking)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(name)
        return True
    except OSError:  # held (a writer we cannot see), or gone meanwhile
        return False
    finally:
        os.close(fd)


def process_alive(pid: int) -> bool:
    """Does `pid` run (a zombie has exited; a pid we may not signal runs)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# -- the temporary files of this process, removed when a signal ends it ----------------

_SWEPT: set[str] = set()
_LIVE: dict[str, None] = {}
_SAVED: dict[int, object] = {}
_INSTALL = threading.Lock()
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _hold(name: str) -> None:
    """Remember a temporary file; on the first, let SIGTERM/SIGHUP/SIGINT remove it.

    Only signals whose action is the default (ending the process) get a handler: Python's
    Ctrl-C handler raises KeyboardInterrupt, which `atomic_path` already cleans up after, and
    a handler someone else installed (or SIG_IGN) is theirs. Signal handlers can be set only
    from the main thread; a file written from another is still removed by the main thread's."""
    _LIVE[name] = None
    if threading.current_thread() is not threading.main_thread():
        return
    with _INSTALL:
        for signum in _STOP_SIGNALS:
            if signum not in _SAVED and signal.getsignal(signum) is signal.SIG_DFL:
                _SAVED[signum] = signal.signal(signum, _remove_and_die)


def _release(name: str) -> None:
    _LIVE.pop(name, None)
    if _LIVE or threading.current_thread() is not threading.main_thread():
        return
    with _INSTALL:
        for signum, previous in list(_SAVED.items()):
            if signal.getsignal(signum) is _remove_and_die:
                signal.signal(signum, previous)
            del _SAVED[signum]


def _remove_and_die(signum: int, _frame) -> None:
    """Remove every temporary file, then end of the same signal, as without the handler."""
    for name in list(_LIVE):
        try:
            os.unlink(name)
        except OSError:
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _errno(err: OSError) -> int | None:
    """The errno of an OSError, also where Rust (pyoxigraph) gives it only in the message."""
    if err.errno is not None:
        return err.errno
    found = re.search(r"\(os error (\d+)\)", str(err))
    return int(found.group(1)) if found else None


def _output_error(path: Path, err: OSError) -> OutputError:
    code = _errno(err)
    reason = os.strerror(code) if code is not None else (err.strerror or str(err))
    return OutputError(f"{path}: cannot be written ({reason}); "
                       f"{_HINTS.get(code, 'write it somewhere else')}")


_HINTS = {errno.ENOSPC: "free disk space and run the command again",
          errno.EDQUOT: "free disk space (quota) and run the command again",
          errno.EFBIG: "the file passed the size limit set for this shell (`ulimit -f`); "
                       "raise it or write less",
          errno.EROFS: "write it on a writable file system",
          errno.EACCES: "check the folder's permissions, or write it somewhere else"}
#: what a failed write into the temporary file becomes an `OutputError` for
_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | Path, text: str) -> None:
    """Write `text` atomically (temporary sibling, fsync, rename)."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` atomically (temporary sibling, fsync, rename). The rename replaces
    whatever sits at `path`, a planted symlink included, and never writes through it."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def save_figure(fig, path: str | Path, **savefig: object) -> Path:
    """Save a matplotlib figure to `path` as `write_bytes` writes: rendered into memory in
    the format `path`'s suffix names, then renamed into place. ``fig.savefig(path)`` opens
    `path` itself, so a symlink planted at a figure's name in a run folder would have the
    figure written into its target. Returns `path`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(path).suffix.lstrip(".") or "png", **savefig)
    write_bytes(path, buffer.getvalue())
    return Path(path)


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
    sweep(base)  # what a killed earlier run left there
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise OutputError(f"{option} {path}: {base} is a file, not a folder; write it somewhere "
                          "else")
    if not os.access(base, os.W_OK):  # said as the write itself would say it
        code = errno.EROFS if os.statvfs(base).f_flag & os.ST_RDONLY else errno.EACCES
        raise OutputError(f"{option} {path}: cannot be written ({os.strerror(code)}); "
                          f"{_HINTS[code]}")
