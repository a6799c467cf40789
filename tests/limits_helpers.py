"""Shared by the issue-23/25 limit tests: the CLI as a subprocess, and 127.0.0.1 sockets that
record every connection (a request that must not leave the machine is asserted not to
arrive) or answer badly on purpose (slow, huge, cut short).  Every server runs a bounded loop
and is stopped when its `with` block ends."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

#: The memory guard every test command runs under: a failed fix never exhausts the machine.
GUARD = "1G"


def kgp(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, KGPROBE_STORE=str(tmp / "store"), KGPROBE_MAX_MEMORY=GUARD)
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=timeout)


def ok(tmp: Path, *args: str) -> str:
    r = kgp(tmp, *args)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


def fails(tmp: Path, *args: str, timeout: float = 120) -> str:
    """Exit 2, one line on stderr, no traceback: the line."""
    r = kgp(tmp, *args, timeout=timeout)
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@contextlib.contextmanager
def server(answer: Callable[[socket.socket, threading.Event], None] | None = None,
           limit_s: float = 60) -> Iterator[tuple[int, list[bytes]]]:
    """A 127.0.0.1 listener on a free port: (port, the first bytes of every connection).
    `answer(conn, stop)` writes a reply (default: close at once); the loop stops at the block's end
    or after `limit_s` seconds."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.05)
    hits: list[bytes] = []
    stop = threading.Event()
    end = time.monotonic() + limit_s

    def loop() -> None:
        while not stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    hits.append(conn.recv(65536))
                    if answer is not None:
                        answer(conn, stop)
                except OSError:
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], hits
    finally:
        stop.set()
        thread.join(10)
        sock.close()
