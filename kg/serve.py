"""`kgprobe kg serve`: the store over the SPARQL 1.1 Protocol, by the real Oxigraph server.

We start the `oxigraph` command (the `oxigraph` package on PyPI) on the store's directory rather
than writing an HTTP layer: it speaks the whole protocol (query, update, graph store, content
negotiation).  The server runs with `--union-default-graph`, so a plain `SELECT * { ?s ?p ?o }`
sees every graph as it does in `kg query`; `--endpoint` clients send the data graphs as
`default-graph-uri` and so never see the meta graph.

The writer lock is held while the server runs, in both modes: a read-write server writes the
store, and Oxigraph documents a read-only server beside a writing process as undefined
behaviour.  While it runs, read the store through the endpoint (`--endpoint URL`): kgprobe's
directory readers open RocksDB read-only, and the server compacting files at startup can
delete one under them ("No such file … .sst"; tests/test_kg_endpoints.py saw it).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StoreError
from kgprobe.kg.lock import LOCK_NAME, WriterLock
from kgprobe.kg.sparql_client import EndpointError, SparqlClient


@dataclass
class ServeOptions:
    store: Path
    bind: str = "127.0.0.1:7878"
    read_only: bool = False
    wait: bool = False
    timeout_s: float | None = None  # the server's own per-query timeout


def oxigraph_command() -> str:
    """The `oxigraph` executable: beside this Python first (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if not found:
        raise StoreError("the `oxigraph` server command is not installed; "
                         "`pip install oxigraph` (it comes with kgprobe's dependencies)")
    return found


def endpoint_url(bind: str) -> str:
    return f"http://{bind}/query"


def server_argv(opts: ServeOptions) -> list[str]:
    argv = [oxigraph_command(), "serve-read-only" if opts.read_only else "serve",
            "--location", str(opts.store), "--bind", opts.bind, "--union-default-graph"]
    if opts.timeout_s:
        argv += ["--timeout-s", str(int(opts.timeout_s))]
    return argv


def wait_until_up(proc: subprocess.Popen, url: str, deadline_s: float = 30.0) -> None:
    """Poll the endpoint until it answers; a server that exits first is reported with its
    own last line (a port in use, a store it cannot open)."""
    client = SparqlClient(url, timeout=2.0, retries=0)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            proc.stderr.seek(0)
            err = proc.stderr.read().decode(errors="replace").strip()
            last = err.splitlines()[-1] if err else f"exit status {proc.returncode}"
            raise StoreError(f"oxigraph serve stopped at once ({last[:200]}); pick another "
                             "--bind port, or check the --store directory")
        try:
            client.select("ASK {}")
            return
        except EndpointError:
            time.sleep(0.2)
    raise StoreError(f"{url}: the server did not answer within {deadline_s:g} s")


def serve(opts: ServeOptions, announce=print) -> int:
    """Run the server until Ctrl-C (SIGINT) or SIGTERM; then stop it and return 0."""
    if not opts.store.is_dir() or not any(f.name != LOCK_NAME for f in opts.store.iterdir()):
        raise StoreError(f"{opts.store}: no store here; run `kgprobe kg load` first or pass --store")
    _check_bind(opts.bind)
    lock = WriterLock(opts.store, wait=opts.wait)
    lock.acquire()
    # Both, explicitly: a shell starts background jobs with SIGINT ignored, and Ctrl-C must stop us.
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    proc = None
    try:
        # A file, not a pipe: a long-running server's log never fills a buffer nobody reads.
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen(server_argv(opts), stdout=subprocess.DEVNULL, stderr=log)
        proc.stderr = log
        url = endpoint_url(opts.bind)
        wait_until_up(proc, url)
        mode = "read-only" if opts.read_only else "read-write; updates at " + url[:-6] + "/update"
        announce(f"serving {opts.store} at {url} (SPARQL 1.1 Protocol, {mode}); Ctrl-C stops")
        proc.wait()
        return 0 if proc.returncode in (0, -signal.SIGINT) else 1
    except KeyboardInterrupt:
        return 0
    finally:
        if proc is not None:
            _stop(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        lock.release()


def _check_bind(bind: str) -> None:
    """Refuse an address in use before starting: another server there would answer our
    readiness check, and we would announce an endpoint that is not ours."""
    host, _, port = bind.rpartition(":")
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            sock.bind(infos[0][4])
    except (OSError, ValueError) as err:
        raise StoreError(f"--bind {bind}: cannot listen there ({' '.join(str(err).split())}); "
                         "pick another host:port") from None


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
