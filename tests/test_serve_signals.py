"""`kg serve` leaves no Oxigraph server behind, and the lock names who holds it (issue 23, case 2).

Before: SIGHUP or SIGKILL of `kg serve` left its Oxigraph child serving read-write while the
kgprobe lock was free, and the next writer failed with RocksDB's "LOCK: Resource temporarily
unavailable", naming nobody.  Each test does that to a read-write server and then runs the
next writer through the CLI."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.loaders import load_rdf

FIXTURE = '<http://ex.org/rex> <http://www.w3.org/2000/01/rdf-schema#label> "Rex" .\n'
MORE = '<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .\n'


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pid: int, within: float = 15) -> bool:
    end = time.monotonic() + within
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    return not alive(pid)


@pytest.fixture()
def store(tmp_path) -> Path:
    (tmp_path / "one.ttl").write_text(FIXTURE)
    (tmp_path / "more.ttl").write_text(MORE)
    with KnowledgeGraph(tmp_path / "store") as kg:
        kg.add_sources([load_rdf(tmp_path / "one.ttl")])
    return tmp_path / "store"


def start(store: Path) -> tuple[subprocess.Popen, int]:
    """`kg serve --allow-updates` (a read-write server, the case of the issue); its child."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "serve", "--store",
                             str(store), "--bind", f"127.0.0.1:{port}", "--allow-updates"],
                            cwd=store.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    assert box and box[0].startswith("serving"), box
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True,
                         text=True).stdout.split()
    assert len(out) == 1, out
    return proc, int(out[0])


def cleanup(proc: subprocess.Popen, child: int) -> None:
    for pid in (proc.pid, child):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)


def next_writer_gets_the_lock_or_names_the_holder(store: Path) -> None:
    """At once: either it loads, or it exits 2 with one line naming a pid (never RocksDB's
    nameless LOCK error); a moment later it loads."""
    first = cli("kg", "load", str(store.parent / "more.ttl"), "--store", str(store),
                cwd=store.parent)
    if first.returncode != 0:
        assert first.returncode == 2 and len(first.stderr.strip().splitlines()) == 1, first.stderr
        assert "pid " in first.stderr and "Resource temporarily unavailable" not in first.stderr
        time.sleep(1)
        first = cli("kg", "load", str(store.parent / "more.ttl"), "--store", str(store),
                    cwd=store.parent)
    assert first.returncode == 0, first.stderr


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_a_stop_signal_stops_the_server_too(store, sig):
    proc, child = start(store)
    try:
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
        assert gone(child), f"the Oxigraph server outlived kg serve's {sig.name}"
        next_writer_gets_the_lock_or_names_the_holder(store)
    finally:
        cleanup(proc, child)


def test_sigkill_takes_the_server_with_it(store):
    proc, child = start(store)
    try:
        proc.kill()
        proc.wait(timeout=30)
        next_writer_gets_the_lock_or_names_the_holder(store)
        assert gone(child), "the Oxigraph server outlived kg serve's SIGKILL"
    finally:
        cleanup(proc, child)


HOLDER = textwrap.dedent("""
    import os, subprocess, sys
    from pathlib import Path
    from kgprobe.kg.lock import WriterLock
    lock = WriterLock(Path(sys.argv[1]))
    lock.acquire()
    fd = lock.inheritable_fd()
    child = subprocess.Popen(["sleep", "60"], pass_fds=(fd,), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock.share(child.pid, "oxigraph serve --location " + sys.argv[1])
    print(child.pid, flush=True)
    os._exit(0)  # dies without releasing, as after a SIGKILL with no PR_SET_PDEATHSIG
""")


def test_an_orphaned_server_keeps_the_store_locked_and_is_named(store):
    """Where the kernel cannot kill the child with its parent (not Linux; or a child started
    another way), the store stays locked and the refusal names the process to stop."""
    out = subprocess.run([sys.executable, "-c", HOLDER, str(store)], capture_output=True,
                         text=True, timeout=60)
    orphan = int(out.stdout.split()[0])
    try:
        assert alive(orphan)
        res = cli("kg", "load", str(store.parent / "more.ttl"), "--store", str(store),
                  cwd=store.parent)
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert f"pid {orphan}: oxigraph serve" in res.stderr
        assert "which has exited" in res.stderr and f"`kill {orphan}`" in res.stderr
    finally:
        os.kill(orphan, signal.SIGKILL)
    assert gone(orphan)
    assert cli("kg", "load", str(store.parent / "more.ttl"), "--store", str(store),
               cwd=store.parent).returncode == 0
