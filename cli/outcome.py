"""How a command ends when the system, not the user's input, stops it: a closed pipe, a full
or read-only disk. One line or none, never a traceback (`cli.main` calls these)."""

from __future__ import annotations

import errno
import os
import sys

#: errnos that are the machine's state, not a bug: one line saying what to do
_OS_HINTS = {
    errno.ENOSPC: "free disk space and run the command again",
    errno.EDQUOT: "free disk space (quota) and run the command again",
    errno.EROFS: "use a directory on a writable file system",
    errno.EACCES: "check the permissions, or use another directory",
    errno.EPERM: "check the permissions, or use another directory",
}


def quiet_broken_pipe() -> int:
    """The reader of stdout went away (`| head -1`): whatever was committed stays, and the
    process ends quietly as Python's documentation recommends (stdout pointed at devnull so
    the flush at exit cannot fail again), with the status a shell gives a SIGPIPE: 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 128 + 13


def os_error_line(err: OSError) -> str | None:
    """One line for an OSError a full or read-only disk (or permissions) caused; None for
    anything else (a bug keeps its traceback)."""
    hint = _OS_HINTS.get(err.errno)
    if hint is None:
        return None
    where = err.filename if err.filename is not None else "a file"
    return f"{where}: {err.strerror or os.strerror(err.errno)}; {hint}"


def damaged_store_line(err: RuntimeError) -> str | None:
    """RocksDB found a corrupt block while reading (pyoxigraph raises RuntimeError
    "Corruption: …"): one line; None for any other RuntimeError (a bug)."""
    text = " ".join(str(err).split())
    if not text.startswith("Corruption"):
        return None
    return (f"the store is damaged ({text[:200]}); `kgprobe kg check` lists what is wrong; "
            "restore it from a backup or rebuild it with `kgprobe kg load` into a new --store")
