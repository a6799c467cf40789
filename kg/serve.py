"""`kgprobe kg serve`: the store over the SPARQL 1.1 Protocol, by the real Oxigraph server.

We start the `oxigraph` command (the `oxigraph` package on PyPI) on the store's directory rather
than writing an HTTP layer: it speaks the whole protocol (query, update, graph store, content
negotiation).  The server runs with `--union-default-graph`, so a plain `SELECT * { ?s ?p ?o }`
sees every graph as it does in `kg query`; `--endpoint` clients send the data graphs as
`default-graph-uri` and so never see the meta graph.

Safe by default (docs/security.md): the Oxigraph server listens on a random loopback address
nobody is told (127.x.y.z, so a web page cannot sweep loopback ports for it), read-only unless
`--allow-updates`; the address the user asked for is kg/serve_proxy.py's, which checks `Host`,
`Origin`, the update token and SERVICE/LOAD before forwarding anything.

The writer lock is held while the server runs, in both modes: a read-write server writes the
store, and Oxigraph documents a read-only server beside a writing process as undefined
behaviour.  The Oxigraph child shares the lock (it inherits the locked descriptor) and dies
with us whatever the signal: SIGINT, SIGTERM and SIGHUP stop it, and on Linux the kernel kills
it if we die (`PR_SET_PDEATHSIG`, even after SIGKILL); a child left running anyway keeps the
store locked and is named by the next writer's refusal.  While it runs, read the store through
the endpoint (`--endpoint URL`): kgprobe's directory readers open RocksDB read-only, and the
server compacting files at startup can delete one under them ("No such file … .sst";
tests/test_kg_endpoints.py saw it).

A query past `--query-timeout` is stopped by restarting the server (kg/serve_proxy.py says why
Oxigraph's own timeout is not enough); `OxigraphServer` does that, from the main thread.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StoreError
from kgprobe.kg.lock import LOCK_NAME, WriterLock
from kgprobe.kg.serve_limits import ProxyLimits
from kgprobe.kg.serve_proxy import ProxyPolicy, SparqlProxy
from kgprobe.kg.sparql_client import EndpointError, SparqlClient
from kgprobe.terminal import printable

#: the signals that stop `kg serve` (and its server) cleanly; SIGKILL is PR_SET_PDEATHSIG's
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


@dataclass
class ServeOptions:
    store: Path
    bind: str = "127.0.0.1:7878"
    allow_updates: bool = False  # else read-only: the server is started read-only too
    allow_federation: bool = False  # SERVICE and LOAD to other hosts
    wait: bool = False
    timeout_s: float = 30.0  # each forwarded request's whole answer (kg/serve_proxy.py)
    token: str | None = None  # the update token; a fresh random one when None
    request_timeout_s: float = 60.0  # each client's whole request, headers and body
    max_connections: int = 64  # served at once; one more is answered 503

    @property
    def limits(self) -> ProxyLimits:
        return ProxyLimits(self.timeout_s, self.request_timeout_s, self.max_connections)


def oxigraph_command() -> str:
    """The `oxigraph` executable: beside this Python first (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if not found:
        raise StoreError("the `oxigraph` server command is not installed; "
                         "`pip install oxigraph` (it comes with kgprobe's dependencies)")
    return found


def endpoint_url(bind: str) -> str:
    """The query URL of a server at `bind` (HOST:PORT): an IPv6 host in brackets (RFC 3986),
    so `::1:7878` is announced as ``http://[::1]:7878/query``, a URL a client can open."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    return f"http://[{host}]:{port}/query" if ":" in host else f"http://{bind}/query"


def server_argv(opts: ServeOptions, internal: str) -> list[str]:
    """The Oxigraph server's command line, listening on the `internal` host:port."""
    argv = [oxigraph_command(), "serve" if opts.allow_updates else "serve-read-only",
            "--location", str(opts.store), "--bind", internal, "--union-default-graph"]
    # a backstop for clients that find the hidden server; the proxy's deadline comes first
    return argv + ["--timeout-s", str(int(opts.timeout_s) + 5)]


def internal_address() -> str:
    """A free port on a random 127.x.y.z (all of 127/8 is loopback on Linux): the hidden
    server's address.  A page in the user's browser can blindly POST to every port of
    127.0.0.1; it cannot to every port of 16 million addresses."""
    for _ in range(20):
        a, b, c = (secrets.randbelow(254) + 1 for _ in range(3))
        host = f"127.{a}.{b}.{max(c, 2)}"
        try:
            with socket.socket() as sock:
                sock.bind((host, 0))
                return f"{host}:{sock.getsockname()[1]}"
        except OSError:
            continue  # not routed to lo here (some sandboxes): try another, then 127.0.0.1
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def wait_until_up(proc: subprocess.Popen, url: str, deadline_s: float = 30.0,
                  store: Path | None = None) -> None:
    """Poll the endpoint until it answers; a server that exits first is reported in one line
    with its own error (a store it cannot open, a full disk)."""
    client = SparqlClient(url, timeout=2.0, retries=0)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise StoreError(stopped_line(proc, store, "could not start"))
        try:
            client.select("ASK {}")
            return
        except EndpointError:
            time.sleep(0.2)
    raise StoreError(f"{url}: the server did not answer within {deadline_s:g} s")


def stopped_line(proc: subprocess.Popen, store: Path | None, what: str) -> str:
    """One line for a server that exited: its error, not its backtrace's last frame."""
    proc.stderr.seek(0)
    said = last_words(proc.stderr.read().decode(errors="replace")) or \
        f"exit status {proc.returncode}"
    full = "no space left" in said.lower()
    fix = "free some disk space" if full else "check the --store directory"
    return (f"{store or 'the store'}: the Oxigraph server {what} ({printable(said)[:300]}); "
            f"{fix}")


_NOT_A_MESSAGE = re.compile(r"^(\d+:|at |Stack backtrace:|Caused by:|note: |Listening )")


def last_words(stderr: str) -> str:
    """The error in the Oxigraph server's stderr: anyhow's `Error: …` line, a panic's message,
    else the last line that is not part of a backtrace."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error:"):
            return line[len("Error:"):].strip()
        if "panicked at" in line:
            return lines[i + 1] if i + 1 < len(lines) else line
    kept = [line for line in lines if not _NOT_A_MESSAGE.match(line)]
    return kept[-1] if kept else ""


class OxigraphServer:
    """The hidden Oxigraph server, restartable.  `stuck` (a proxy thread, for a query past its
    deadline) kills it; `run`, in the main thread, starts the next.  Only the main thread starts
    servers: PR_SET_PDEATHSIG fires when the *thread* that started the child ends, and the main
    thread lives as long as kg serve."""

    def __init__(self, opts: ServeOptions, lock: WriterLock, internal: str):
        self.opts, self.lock, self.internal = opts, lock, internal
        self.generation = 0
        self.proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._mutex = threading.Lock()
        self._restart = self._closing = False

    def start(self) -> None:
        # A file, not a pipe: a long-running server's log never fills a buffer nobody reads.
        log = tempfile.TemporaryFile()
        shared = self.lock.inheritable_fd()
        argv = server_argv(self.opts, self.internal)
        try:
            proc = subprocess.Popen(die_with_parent(argv), stdout=subprocess.DEVNULL,
                                    stderr=log, pass_fds=(shared,),
                                    env=dict(os.environ, RUST_LIB_BACKTRACE="0"))
        finally:
            os.close(shared)
        proc.stderr = log
        self.proc = proc
        self.lock.share(proc.pid, " ".join(["oxigraph", *argv[1:4]]))
        wait_until_up(proc, endpoint_url(self.internal), store=self.opts.store)
        with self._mutex:
            self.generation += 1
            self._ready.set()

    def run(self) -> int:
        """Wait for the server; restart it each time `stuck` stopped it; its exit status
        when it stopped by itself."""
        while True:
            self.proc.wait()
            with self._mutex:
                again, self._restart = self._restart and not self._closing, False
            if not again:
                return self.proc.returncode
            _close_log(self.proc)
            self.start()
            print(f"kg serve: the Oxigraph server is up again (pid {self.proc.pid})",
                  file=sys.stderr, flush=True)

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def stuck(self, generation: int) -> None:
        """Stop the server a request of `generation` was sent to, unless that is done."""
        with self._mutex:
            if generation != self.generation or self._closing or self._restart:
                return
            self._restart = True
            self._ready.clear()
            self.proc.kill()

    def stop(self) -> None:
        with self._mutex:
            self._closing = True
        if self.proc is not None:
            _stop(self.proc)


def serve(opts: ServeOptions, announce=print) -> int:
    """Run the proxy and the server until SIGINT (Ctrl-C), SIGTERM or SIGHUP; then stop both
    and return 0.  A server that stops by itself is a `StoreError` with its own error."""
    if not opts.store.is_dir() or not any(f.name != LOCK_NAME for f in opts.store.iterdir()):
        raise StoreError(f"{opts.store}: no store here; run `kgprobe kg load` first or pass --store")
    family, address = _check_bind(opts.bind)
    token = opts.token or secrets.token_urlsafe(32)
    lock = WriterLock(opts.store, wait=opts.wait)
    lock.acquire()
    # All three, explicitly: a shell starts background jobs with SIGINT ignored, Ctrl-C must
    # stop us, and a closed terminal (SIGHUP) must not leave the server running.
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in STOP_SIGNALS}
    server = proxy = None
    try:
        server = OxigraphServer(opts, lock, internal_address())
        server.start()
        policy = ProxyPolicy(_host_port(server.internal), opts.bind, opts.allow_updates,
                             opts.allow_federation, token if opts.allow_updates else None)
        proxy = _start_proxy(policy, family, address, opts.limits, server)
        announce(_announcement(opts, token))
        status = server.run()
        if status not in (0, -signal.SIGINT, -signal.SIGTERM):
            raise StoreError(stopped_line(server.proc, opts.store, "stopped"))
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        for sig in STOP_SIGNALS:  # a second signal must not cut the cleanup short
            signal.signal(sig, signal.SIG_IGN)
        if proxy is not None:
            proxy.shutdown()
            proxy.server_close()
        if server is not None:
            server.stop()
        lock.release()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _start_proxy(policy: ProxyPolicy, family: int, address: tuple, limits: ProxyLimits,
                 server: OxigraphServer) -> SparqlProxy:
    try:
        proxy = SparqlProxy(policy, family, address, limits, server)
    except OSError as err:
        raise StoreError(f"--bind {policy.bind}: cannot listen there ({err}); pick another "
                         "host:port") from None
    threading.Thread(target=proxy.serve_forever, name="kg-serve-proxy", daemon=True).start()
    return proxy


def _announcement(opts: ServeOptions, token: str) -> str:
    url = endpoint_url(opts.bind)
    if opts.allow_updates:
        mode = (f"read-write: updates at {url[:-6]}/update need the header "
                f"`Authorization: Bearer {token}`")
    else:
        mode = "read-only"
    federated = "SERVICE/LOAD allowed" if opts.allow_federation else "no SERVICE/LOAD"
    return f"serving {opts.store} at {url} (SPARQL 1.1 Protocol, {mode}; {federated}); Ctrl-C stops"


#: run before the server, in its own process: ask Linux to SIGKILL it when its parent dies
#: (PR_SET_PDEATHSIG outlives exec), die at once if the parent is already gone, then exec it.
#: A wrapper, not `preexec_fn`: that is unsafe once the proxy's threads run (a restart).
_DIE_WITH_PARENT = (
    "import os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes\n"
    f"    ctypes.CDLL(None, use_errno=True).prctl({_PR_SET_PDEATHSIG}, signal.SIGKILL, 0, 0, 0)\n"
    "    if os.getppid() != int(sys.argv[1]):\n"
    "        os._exit(137)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n")


def die_with_parent(argv: list[str]) -> list[str]:
    """`argv` started so that the server dies with kg serve, whatever kills it."""
    return [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _check_bind(bind: str) -> tuple[int, tuple]:
    """Refuse an address in use before starting (another server there would answer, and we
    would announce an endpoint that is not ours); return the family and address to bind."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StoreError(f"--bind {bind}: takes HOST:PORT (e.g. 127.0.0.1:{port if port.isdigit() else 7878})"
                         "; give the host as well as the port") from None
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the proxy does
            sock.bind(infos[0][4])
    except (OSError, ValueError) as err:
        raise StoreError(f"--bind {bind}: cannot listen there ({' '.join(str(err).split())}); "
                         "pick another host:port") from None
    return infos[0][0], infos[0][4]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _close_log(proc)


def _close_log(proc: subprocess.Popen) -> None:
    if proc.stderr:
        proc.stderr.close()


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
