"""The memory guard: a command that loads or queries ends with one line and exit status 2 when
it passes `--max-memory`, never by the kernel's OOM killer or a Rust abort.

Why a supervising process and not a thread or a resource limit: the memory goes to Rust
(pyoxigraph's parsers, RocksDB reading a corrupt SST file), which may hold the GIL the whole
time, so a watchdog thread in the same process may never run; and `RLIMIT_AS` makes Rust
*abort* on the failed allocation (exit 134, no message) instead of raising.  So the command's
work runs in a forked child and the process the shell started supervises it: it polls the
resident memory of the child and its own children (HermiT's JVM, the OWL API) from
`/proc/PID/statm` every `POLL_S` seconds and, past the limit, kills the child, removes a store
the command was creating, prints one line and exits 2.  The child's exit status is passed on
unchanged otherwise.  Forking costs about a millisecond (measured in docs/limits.md); the
parent imports nothing heavy before it.

Only the real command line is supervised (`cli.main` with no argv): tests that call
`main([...])` in-process keep their output capture.  Where `fork` or `/proc` is missing
(not Linux) the command runs unsupervised.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kgprobe.errors import KgprobeError

#: How often the supervisor reads the child's memory (seconds).
POLL_S = 0.02
#: The default limit, as a fraction of physical memory.
DEFAULT_FRACTION = 0.5
#: `--max-memory` when the option is not given; `0` or `off` turns the guard off.
ENV = "KGPROBE_MAX_MEMORY"
#: Set in the supervised child: the pid of the process the shell started (the one to name).
SUPERVISOR_ENV = "KGPROBE_SUPERVISOR_PID"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class MemoryLimit:
    """A limit in bytes and how it was set (the message names it)."""

    bytes: int
    origin: str


def parse_size(text: str, option: str = "--max-memory") -> int | None:
    """`2G`, `512M`, `1.5GiB`, `300000000` → bytes; `0`, `off`, `none` → None (no guard)."""
    value = text.strip().lower()
    if value in ("0", "off", "none"):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", value)
    if not match or float(match.group(1)) <= 0:
        raise KgprobeError(f"{option} {text}: not a size; give e.g. 2G, 512M or 0 (no limit)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def resolve(option: str | None) -> MemoryLimit | None:
    """The limit `--max-memory` names, else $KGPROBE_MAX_MEMORY, else half of physical RAM."""
    if option is not None:
        size = parse_size(option)
        return MemoryLimit(size, f"--max-memory {option}") if size else None
    if os.environ.get(ENV):
        size = parse_size(os.environ[ENV], f"${ENV}")
        return MemoryLimit(size, f"${ENV}={os.environ[ENV]}") if size else None
    return MemoryLimit(int(physical_memory() * DEFAULT_FRACTION),
                       f"the default, {DEFAULT_FRACTION:.0%} of this machine's memory")


def human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _suggest(size: int) -> str:
    return f"{-(-size // (1 << 30))}G" if size >= 1 << 30 else f"{-(-size // (1 << 20))}M"


def visible_pid() -> int:
    """The pid a user sees for this command: the supervisor's inside a supervised child (what
    the shell started, what `kill` and lock messages should name), else this process's."""
    try:
        supervisor = int(os.environ.get(SUPERVISOR_ENV, ""))
    except ValueError:
        return os.getpid()
    return supervisor if supervisor == os.getppid() else os.getpid()


def supported() -> bool:
    return hasattr(os, "fork") and os.path.exists(f"/proc/{os.getpid()}/statm")


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and its descendants (0 once it is gone)."""
    page, total, todo = os.sysconf("SC_PAGE_SIZE"), 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
            with open(f"/proc/{p}/task/{p}/children", "rb") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


#: What the line says past the limit, unless the command knows better (`supervise`'s `why`).
WHY = "the input may be corrupt or the work too large: check it"


def supervise(limit: MemoryLimit, work: Callable[[], int], *, label: str,
              created: Path | None = None, why: str = WHY) -> int:
    """Run `work()` in a child under `limit`; its exit status, or 2 with one line past it.

    `created`: a directory the command creates (a new store); removed if the child is killed,
    so a killed first load leaves nothing behind, as a failed one does. `why`: what the line
    says went wrong, before the --max-memory advice: a command that reads no file (`reason`)
    says what did grow, not that an input may be corrupt."""
    if not supported():
        return work()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _child(parent, work)
    return _watch(pid, limit, label, created, why)


def _child(parent: int, work: Callable[[], int]) -> None:
    """Run the work and leave with its status; never return into the supervisor's code."""
    code = 1
    try:
        _die_with(parent)
        os.environ[SUPERVISOR_ENV] = str(parent)
        code = work()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException:  # a bug: keep its traceback, as an unsupervised run would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe (`| head`): nothing more to say
                pass
        os._exit(code if isinstance(code, int) else 1)


def _die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this child when the supervisor dies (`kill -9` of the command
    must stop the work too, as it did before the guard)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the supervisor died before the request
        os._exit(137)


def _forward_signals(pid: int) -> dict:
    """SIGTERM/SIGHUP go to the child; SIGINT too unless the terminal already sent Ctrl-C to
    the whole foreground group (the child then has it once, as an unsupervised run would)."""
    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    try:
        foreground = os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        foreground = False
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_IGN:  # inherited (a background job): keep it
            continue
        previous[signum] = signal.signal(signum, signal.SIG_IGN if foreground and
                                         signum == signal.SIGINT else forward)
    return previous


def _watch(pid: int, limit: MemoryLimit, label: str, created: Path | None,
           why: str = WHY) -> int:
    previous = _forward_signals(pid)
    try:
        return _wait(pid, limit, label, created, why)
    finally:  # an in-process caller (a test) gets its own handlers back
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _wait(pid: int, limit: MemoryLimit, label: str, created: Path | None, why: str) -> int:
    try:
        waiter = os.pidfd_open(pid)
    except (AttributeError, OSError):
        waiter = None
    peak = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        peak = max(peak, tree_rss(pid))
        if peak > limit.bytes:
            _kill_tree(pid)
            os.waitpid(pid, 0)
            if created is not None and created.exists():
                shutil.rmtree(created, ignore_errors=True)
            print(f"kgprobe: error: {label} used more than {human(limit.bytes)} of memory "
                  f"({limit.origin}) and was stopped; {why}, or raise --max-memory (e.g. "
                  f"--max-memory {_suggest(2 * limit.bytes)})", file=sys.stderr, flush=True)
            return 2
        if waiter is not None:
            try:
                select.select([waiter], [], [], POLL_S)
            except InterruptedError:
                pass
        else:
            time.sleep(POLL_S)
    if waiter is not None:
        os.close(waiter)
    if os.WIFSIGNALED(status):  # die of the same signal, so the shell sees what it would have
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return os.WEXITSTATUS(status)


def _kill_tree(pid: int) -> None:
    """SIGKILL the child's own children first (a JVM would otherwise outlive it), then it."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            kids = [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        kids = []
    for p in [*kids, pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
