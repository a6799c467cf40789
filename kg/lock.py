"""One writer per store: an advisory lock file that names the process holding it.

Oxigraph's own RocksDB lock refuses a second process outright, readers included, with an error
that names nobody.  Writing commands take this lock first (`fcntl.flock`, released by the kernel
when the process dies, so `kill -9` never leaves a stale lock), and write their pid and command
line into the file, so a second writer can say who is writing and either wait or stop.  Readers
never take it: they open the store read-only (see `KnowledgeGraph(read_only=True)`).
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from kgprobe.errors import StoreError
from kgprobe.guard import visible_pid

LOCK_NAME = "kgprobe.lock"


class StoreBusyError(StoreError):
    """Another kgprobe process is writing to the store."""


class WriterLock:
    """The exclusive writer lock of the store at `path` (a directory, created if missing)."""

    def __init__(self, path: Path, *, wait: bool = False):
        self.file = Path(path) / LOCK_NAME
        self._fd: int | None = None
        self.wait = wait

    def acquire(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                if not self.wait:
                    os.close(fd)
                    raise StoreBusyError(f"{self.file.parent}: in use by another kgprobe process "
                                         f"({holder}); wait for it to finish, or pass --wait")
                print(f"kgprobe: waiting for {holder} to finish with {self.file.parent}",
                      file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, self.file):  # a failed first load may have removed the directory
                break
            os.close(fd)
            self.file.parent.mkdir(parents=True, exist_ok=True)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {visible_pid()}: {_command()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # the next holder's message never names a finished process
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 4096).decode(errors="replace").strip()
    return text.splitlines()[0] if text else "pid unknown"


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _command() -> str:
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    if argv[0] in ("__main__.py", "-m", "-c"):
        argv[0] = "kgprobe"
    return " ".join(argv)[:300]
