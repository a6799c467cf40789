"""One writer per run folder: ``OUT/.kgprobe-run.lock``, taken before a study pins its settings.

Two runs into one ``--out`` would each check ``config.json``, find it free or equal to their
own, and then write units side by side: a folder whose ``config.json`` names one seed while
its units came from another. So every command that writes into a run folder (a study run or
resume, ``--dry-run``, ``kgprobe report``, ``kgprobe import lm-eval``) holds this lock for
the whole of its work; a second one is refused with one line naming the first (its pid, host
and start time), as the store's ``kgprobe.lock`` does.

`fcntl.flock` is released by the kernel when the process dies, so ``kill -9`` never leaves a
stale lock. The file is opened with ``O_NOFOLLOW`` inside the folder, so a symlink planted at
its name is refused and its target never written. It is removed when the holder finishes;
a holder checks after locking that the name still points at the file it locked (a finishing
holder may have just removed it), as the store's lock does.

The lock is reentrant within one process (`Study.main` holds it around `Study.run`, which
takes it too), and counted per folder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Iterator

from kgprobe.errors import OutputError, StudyError
from kgprobe.kg.lock import command_line, same_file

LOCK_NAME = ".kgprobe-run.lock"

#: The folders this process holds: their lock's descriptor and how many holders nest.
_HELD: dict[str, list[int]] = {}


class RunFolderBusyError(StudyError):
    """Another kgprobe process is writing into the run folder."""


@contextlib.contextmanager
def run_folder_lock(out: str | Path, *, create: bool = True) -> Iterator[None]:
    """Hold `out`'s writer lock for the block (`create`: make the folder if it is missing; a
    folder this call made and that is empty afterwards, a run refused before its first file,
    is removed again). An OSError from a full disk that names no file (a write's ENOSPC) gets
    the run folder's name, so its one line says where (`cli.outcome`)."""
    out = Path(out)
    key = os.path.realpath(out)
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    created = create and not out.exists()
    if created:
        out.mkdir(parents=True, exist_ok=True)
    fd = _acquire(out / LOCK_NAME)
    _HELD[key] = [fd, 1]
    try:
        yield
    except OSError as err:
        if err.filename is None and err.errno in (errno.ENOSPC, errno.EDQUOT):
            err.filename = str(out)
        raise
    finally:
        del _HELD[key]
        _release(out / LOCK_NAME, fd)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if empty


def _acquire(path: Path) -> int:
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            raise OutputError(f"{path.parent}: no such folder; pass an existing run folder") from None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise StudyError(f"{path}: is a symbolic link, not kgprobe's lock file; remove "
                                 "it (its target is left alone) and run the command again") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunFolderBusyError(f"{path.parent}: in use by another kgprobe run ({holder}); "
                                     "wait for it to finish, or pass another --out") from None
        if same_file(fd, path):
            break
        os.close(fd)  # a holder removed the file as we opened it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{_me()}\n".encode())
    except OSError as err:
        _release(path, fd)
        if err.filename is None:
            err.filename = str(path)
        raise
    return fd


def _release(path: Path, fd: int) -> None:
    with contextlib.suppress(OSError):
        path.unlink()  # while still locked: no one locks the old file after us
    os.close(fd)


def _me() -> str:
    from kgprobe.guard import visible_pid

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"pid {visible_pid()} on {socket.gethostname()} since {started}: {command_line()}"


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 4096).decode(errors="replace").strip()
    return text.splitlines()[0] if text else "pid unknown"
