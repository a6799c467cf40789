"""One writer per store: an advisory lock file that names the process holding it.

Oxigraph's own RocksDB lock refuses a second process outright, readers included, with an error
that names nobody.  Writing commands take this lock first (`fcntl.flock`, released by the kernel
when the process dies, so `kill -9` never leaves a stale lock), and write their pid and command
line into the file, so a second writer can say who is writing and either wait or stop.  Readers
never take it: they open the store read-only (see `KnowledgeGraph(read_only=True)`).

A holder may share the lock with a child process (`kg serve` with its Oxigraph server): the
child inherits the locked descriptor, so the store stays locked while *any* process serves it,
even one its parent left behind, and the child's line in the file lets a refusal name it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from pathlib import Path

from kgprobe.atomic import process_alive
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
            fd = open_lock_file(self.file)
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
            if same_file(fd, self.file):  # a failed first load may have removed the directory
                break
            os.close(fd)
            self.file.parent.mkdir(parents=True, exist_ok=True)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {visible_pid()}: {command_line()}\n".encode())
        self._fd = fd

    def inheritable_fd(self) -> int:
        """A copy of the locked descriptor for a child (`pass_fds`; close it after starting
        the child).  Numbered high, so a dying child closes it after the descriptors it opened
        itself (Oxigraph's own RocksDB LOCK): the next writer never finds our lock free and
        the store's still taken."""
        assert self._fd is not None, "acquire() first"
        try:
            return fcntl.fcntl(self._fd, fcntl.F_DUPFD_CLOEXEC, 900)
        except OSError:  # a descriptor limit under 901
            return fcntl.fcntl(self._fd, fcntl.F_DUPFD_CLOEXEC, 0)

    def share(self, pid: int, command: str) -> None:
        """Name a child that holds the lock too (it got `inheritable_fd`)."""
        assert self._fd is not None, "acquire() first"
        os.lseek(self._fd, 0, os.SEEK_END)
        os.write(self._fd, f"pid {pid}: {command[:300]} (started by pid {os.getpid()})\n".encode())

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # the next holder's message never names a finished process
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def open_lock_file(path: Path) -> int:
    """Open (or create) the lock file itself, never what a name planted there points to.

    The lock is truncated and written, so following a symbolic link (or writing through a
    second hard link) would empty a file outside the store: `O_NOFOLLOW` refuses a link,
    and a file that is not a plain file with one name is refused before anything is
    written (tests/test_store_files.py)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                     0o644)
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        raise StoreError(f"{path}: is a symbolic link; kgprobe never writes through one in a "
                         f"store: remove it (`rm {path}`) and run the command again") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = ("not a plain file" if not stat.S_ISREG(info.st_mode)
                else "a second name of another file (a hard link)")
        raise StoreError(f"{path}: is {what}; kgprobe writes its lock there: remove it "
                         f"(`rm {path}`) and run the command again")
    return fd


def _holder(fd: int) -> str:
    """Who holds the lock: the first line of the file while that process lives; else a child
    it shared the lock with that still runs (an orphaned server), named with how to free it."""
    os.lseek(fd, 0, os.SEEK_SET)
    lines = os.read(fd, 8192).decode(errors="replace").strip().splitlines()
    if not lines:
        return "pid unknown"
    pids = [_pid(line) for line in lines]
    if pids[0] is None or process_alive(pids[0]):
        return lines[0]
    for line, pid in zip(lines[1:], pids[1:]):
        if pid is not None and process_alive(pid):
            return (f"{line.split(' (started by')[0]}, left running by pid {pids[0]}, which has "
                    f"exited; `kill {pid}` frees the store")
    return f"{lines[0]}, which has exited; a process it started still holds the lock"


def _pid(line: str) -> int | None:
    word = line.split(":", 1)[0].removeprefix("pid ").strip()
    return int(word) if word.isdigit() else None


def same_file(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (a holder may remove it as we open it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def command_line() -> str:
    """This process's command line as a lock's holder record names it."""
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    if argv[0] in ("__main__.py", "-m", "-c"):
        argv[0] = "kgprobe"
    return " ".join(argv)[:300]
