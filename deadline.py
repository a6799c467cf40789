"""Work with a deadline: run it in a forked child, and kill the child when the time is up.

Why a process: a pyoxigraph query is Rust code with neither a timeout nor a way to cancel it,
and it may hold the GIL the whole time, so neither a timer thread nor a signal handler gets to
run; killing the process that runs it is the one way to stop it (guard.py stops memory the
same way).  The child's standard output goes to a temporary file and reaches ours only when the
work has finished, so a stopped or failed command prints no half answer; an exception the work
raises (a `KgprobeError`, Ctrl-C) is raised again here, so the caller reports it as if the work
had run in-process, and in-process callers (tests capturing stdout) see the output too.

Where `fork` is missing (not POSIX) the work runs in-process, unbounded.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import tempfile
import time
import traceback
from typing import Callable

from kgprobe.errors import KgprobeError

POLL_S = 0.05


def run_with_deadline(work: Callable[[], object], seconds: float, timed_out: str) -> None:
    """Run `work()` in a child for at most `seconds`; past them kill it and raise
    `KgprobeError(timed_out)`.  Its output is copied to ours once it has succeeded."""
    if not hasattr(os, "fork"):
        work()
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as result:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(work, out, result, parent)
        finished = False
        try:
            finished = _wait(pid, time.monotonic() + seconds)
        finally:
            if not finished:  # timed out, or Ctrl-C here
                _kill(pid)
        if not finished:
            raise KgprobeError(timed_out)
        result.seek(0)
        try:
            raised = pickle.loads(result.read())
        except Exception:  # noqa: BLE001 - nothing readable: the child died before writing it
            raise KgprobeError("the work stopped without a result (killed from outside, or a "
                               "crash in native code)") from None
        if raised is not None:
            raise raised
        out.seek(0)
        _copy(out)


def _child(work: Callable[[], object], out, result, parent: int) -> None:
    """Run the work with stdout in `out`; pickle what it raised (None: nothing) into
    `result`; never return into the caller's code."""
    raised: BaseException | None = None
    try:
        _die_with(parent)
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        sys.stdout = open(out.fileno(), "w", encoding=encoding, closefd=False)  # noqa: SIM115
        work()
        sys.stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        raised = exc
        if not isinstance(exc, (KgprobeError, KeyboardInterrupt, OSError, RuntimeError)):
            traceback.print_exc()  # a bug: keep its traceback, as an in-process run would
    try:
        data = pickle.dumps(raised)
    except Exception:  # noqa: BLE001 - an exception that does not pickle: its text does
        data = pickle.dumps(KgprobeError(str(raised)))
    result.write(data)
    result.flush()
    os._exit(0)


def _wait(pid: int, deadline: float) -> bool:
    """Wait for the child until `deadline`; True when it exited (and was reaped)."""
    try:
        waiter = os.pidfd_open(pid)
    except (AttributeError, OSError):
        waiter = None
    try:
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if waiter is not None:
                select.select([waiter], [], [], left)
            else:
                time.sleep(min(POLL_S, left))
    finally:
        if waiter is not None:
            os.close(waiter)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _die_with(parent: int) -> None:
    """SIGKILL this child when the parent dies (Linux), so `kill` of the command stops it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(137)


def _copy(source) -> None:
    buffer = getattr(sys.stdout, "buffer", None)
    while chunk := source.read(1 << 20):
        if buffer is not None:
            buffer.write(chunk)
        else:
            sys.stdout.write(chunk.decode(getattr(sys.stdout, "encoding", None) or "utf-8"))
    if buffer is not None:
        buffer.flush()
