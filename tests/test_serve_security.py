"""`kg serve` is safe by default (issue 23, case 1), through the CLI.

Each test runs the attack first against a bare `oxigraph serve`, which is what `kg serve`
exposed before, to show the attack is real; then the same request through `kg serve`, which
refuses it; then what the opt-in (`--allow-updates` with the token, `--allow-federation`)
allows.  Servers listen on free loopback ports and are always stopped."""

from __future__ import annotations

import http.client
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kgprobe.kg.serve import oxigraph_command
from kgprobe.kg.serve_checks import host_allowed
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.loaders import load_rdf
from kgprobe.reasoning.materialize import materialize

FIXTURE = """@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Dog rdfs:subClassOf ex:Animal ; rdfs:label "dog"@en . ex:rex a ex:Dog ; rdfs:label "Rex"@en .
"""
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
INSERT = "INSERT DATA { GRAPH <urn:kgprobe:source:zoo> { <http://ex.org/a> a <http://ex.org/Dog> } }"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port: int, method: str, path: str, body: str = "", *, host: str | None = None,
         ctype: str = "application/x-www-form-urlencoded", **headers: str) -> tuple[int, str]:
    """One raw request: the Host header is ours to choose (a rebinding page's is its own)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        conn.putheader("Accept", "text/csv")
        for key, value in headers.items():
            conn.putheader(key.replace("_", "-"), value)
        if body or method in ("POST", "PUT"):
            conn.putheader("Content-Type", ctype)
            conn.putheader("Content-Length", str(len(body.encode())))
        conn.endheaders(body.encode() or None)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def form(key: str, text: str) -> str:
    return urllib.parse.urlencode({key: text})


def count(port: int) -> int:
    status, text = request(port, "POST", "/query", form("query", COUNT))
    assert status == 200, text
    return int(text.split()[1])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("secure")
    (root / "zoo.ttl").write_text(FIXTURE)
    with KnowledgeGraph(root / "store") as kg:
        kg.add_sources([load_rdf(root / "zoo.ttl")])
        materialize(kg)
    return root / "store"


@pytest.fixture()
def copy(store, tmp_path) -> Path:
    shutil.copytree(store, tmp_path / "store")
    return tmp_path / "store"


@contextmanager
def bare_oxigraph(location: Path, read_only: bool = False):
    """The Oxigraph server as `kg serve` used to expose it: on the user's port, nothing before it."""
    port = free_port()
    proc = subprocess.Popen([oxigraph_command(), "serve-read-only" if read_only else "serve",
                             "--location", str(location), "--bind", f"127.0.0.1:{port}",
                             "--union-default-graph"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                request(port, "GET", "/")
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "oxigraph did not start"
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@dataclass
class Served:
    port: int
    proc: subprocess.Popen
    line: str

    @property
    def token(self) -> str:
        return self.line.split("Bearer ")[1].split("`")[0]


@contextmanager
def kg_serve(location: Path, *flags: str):
    port = free_port()
    log = open(location.parent / f"serve-{port}.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "serve", "--store",
                             str(location), "--bind", f"127.0.0.1:{port}", *flags],
                            cwd=location.parent, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        assert box and box[0].startswith("serving"), f"kg serve did not start: {box}"
        yield Served(port, proc, box[0].strip())
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


# ----------------------------------------------------------------------------- CSRF, rebinding


def test_a_foreign_origin_cannot_drop_the_store(copy, tmp_path):
    drop = form("update", "DROP ALL")
    spare = tmp_path / "bare"
    shutil.copytree(copy, spare)
    with bare_oxigraph(spare) as port:  # the attack: a page's form POST, answered 204
        assert count(port) > 0
        assert request(port, "POST", "/update", drop, Origin="http://evil.example")[0] == 204
        assert count(port) == 0
    with kg_serve(copy, "--allow-updates") as served:
        before = count(served.port)
        # even a page that somehow had the token: its Origin gives it away
        status, text = request(served.port, "POST", "/update", drop, Origin="http://evil.example",
                            Authorization=f"Bearer {served.token}")
        assert status == 403 and "Origin http://evil.example is another site" in text
        # a browser that sends no Origin but says the request is another site's
        status, text = request(served.port, "POST", "/update", drop, Sec_Fetch_Site="cross-site",
                            Authorization=f"Bearer {served.token}")
        assert status == 403 and "Sec-Fetch-Site" in text
        assert request(served.port, "POST", "/update", drop, Origin="null")[0] == 403
        assert count(served.port) == before > 0
        # the server's own page (same origin) may still read
        assert request(served.port, "POST", "/query", form("query", "ASK {}"),
                    Origin=f"http://127.0.0.1:{served.port}")[0] == 200


def test_a_wrong_host_is_refused_even_for_reads(copy, tmp_path):
    ask = "/query?" + form("query", "SELECT ?l WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l }")
    spare = tmp_path / "bare"
    shutil.copytree(copy, spare)
    with bare_oxigraph(spare, read_only=True) as port:  # DNS rebinding: evil.example → 127.0.0.1
        status, text = request(port, "GET", ask, host=f"evil.example:{port}")
        assert status == 200 and "Rex" in text
    with kg_serve(copy) as served:
        status, text = request(served.port, "GET", ask, host=f"evil.example:{served.port}")
        assert status == 403 and "DNS rebinding" in text and "Rex" not in text
        assert request(served.port, "GET", ask, host="127.0.0.1")[0] == 403  # another port
        for good in (f"127.0.0.1:{served.port}", f"localhost:{served.port}"):
            status, text = request(served.port, "GET", ask, host=good)
            assert status == 200 and "Rex" in text, good


def test_no_name_an_attacker_controls_is_this_server():
    for attack in ("evil.example:7878", "localhost.evil.example:7878", "127.0.0.1.nip.io:7878",
                   "127.0.0.1:7879", "127.0.0.1", "127.0.0.1:7878.evil.example", "",
                   "::1:7878", "[localhost]:7878", "[::1]x:7878", ":7878"):
        assert not host_allowed(attack, "127.0.0.1:7878"), attack
    assert not host_allowed("::1:7878", "[::1]:7878")  # a bare IPv6 host: refused like the others
    assert not host_allowed("evil.example:7878", "0.0.0.0:7878")
    for good, bind in (("127.0.0.1:7878", "127.0.0.1:7878"), ("LOCALHOST:7878", "127.0.0.1:7878"),
                       ("[::1]:7878", "[::1]:7878"), ("localhost:7878", "[::1]:7878"),
                       ("192.168.1.5:7878", "0.0.0.0:7878"), ("localhost:80", "127.0.0.1:80"),
                       ("localhost", "127.0.0.1:80")):
        assert host_allowed(good, bind), (good, bind)


# ----------------------------------------------------------------------------- updates


def test_updates_need_the_opt_in_and_the_token_and_make_the_store_stale(store, copy, tmp_path):
    insert = form("update", INSERT)
    spare = tmp_path / "bare"
    shutil.copytree(copy, spare)
    with bare_oxigraph(spare) as port:  # before: no token, and the write goes unnoticed
        assert request(port, "POST", "/update", insert)[0] == 204
    unnoticed = cli("kg", "stats", "--store", str(spare), cwd=tmp_path)
    assert unnoticed.returncode == 0, unnoticed.stderr
    with kg_serve(copy) as served:  # the default: read-only, whatever the request carries
        assert "read-only" in served.line and "Bearer" not in served.line
        status, text = request(served.port, "POST", "/update", insert, Authorization="Bearer x")
        assert status == 403 and "--allow-updates" in text
        assert request(served.port, "PUT", "/store?default", "<urn:a> <urn:b> <urn:c> .",
                    ctype="text/turtle")[0] == 403
    with kg_serve(copy, "--allow-updates") as served:
        before = count(served.port)
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": served.token}):
            status, text = request(served.port, "POST", "/update", insert, **auth)
            assert status == 401 and "Authorization: Bearer TOKEN" in text, auth
        status, _ = request(served.port, "PUT", "/store?default", "<urn:a> <urn:b> <urn:c> .",
                         ctype="text/turtle")
        assert status == 401 and count(served.port) == before
        url = f"http://127.0.0.1:{served.port}/query"
        assert cli("kg", "stats", "--endpoint", url, cwd=tmp_path).returncode == 0
        status, text = request(served.port, "POST", "/update", insert,
                            Authorization=f"Bearer {served.token}")
        assert status == 204, text
        assert count(served.port) == before + 1
        stale = cli("kg", "stats", "--endpoint", url, cwd=tmp_path)
        assert stale.returncode == 2 and "stale" in stale.stderr, stale.stdout + stale.stderr
    stale = cli("kg", "stats", "--store", str(copy), cwd=tmp_path)
    assert stale.returncode == 2 and "inferred graph is stale" in stale.stderr
    assert cli("reason", "--store", str(copy), cwd=tmp_path).returncode == 0
    fresh = cli("kg", "stats", "--store", str(copy), cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    # reloading the source as it was drops the written triple: what was inferred from it
    # (ex:a a ex:Animal) must go stale, as after any `kg load` that changes a source
    reload = cli("kg", "load", str(store.parent / "zoo.ttl"), "--store", str(copy),
                 cwd=tmp_path)
    assert reload.returncode == 0 and "inferences are now stale" in reload.stdout, reload.stderr


def test_read_only_and_allow_updates_contradict(copy, tmp_path):
    res = cli("kg", "serve", "--store", str(copy), "--read-only", "--allow-updates", cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "--read-only and --allow-updates" in res.stderr


# ----------------------------------------------------------------------------- federation


@contextmanager
def listener():
    """A socket on 127.0.0.1 that records whether anything connects to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.settimeout(0.2)
        yield sock, f"http://127.0.0.1:{sock.getsockname()[1]}/sparql"


def connected(sock: socket.socket, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        conn.close()
        return True
    return False


def in_thread(fn, *args, **kwargs) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, kwargs=kwargs, daemon=True)
    thread.start()
    return thread


def test_service_and_load_reach_no_other_host_unless_allowed(copy, tmp_path):
    spare = tmp_path / "bare"
    shutil.copytree(copy, spare)
    with listener() as (sock, target):
        service = f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}"
        with bare_oxigraph(spare, read_only=True) as port:  # even read-only, it goes out
            asking = in_thread(request, port, "POST", "/query", form("query", service))
            assert connected(sock, within=20), "the bare server did not federate"
            asking.join(30)
        with kg_serve(copy, "--allow-updates") as served:
            token = {"Authorization": f"Bearer {served.token}"}
            attempts = [
                ("POST", "/query", form("query", service), {}),
                ("GET", "/query?" + form("query", service.lower()), "", {}),
                ("POST", "/query", service.replace("SERVICE", "SERVICE #x\n SILENT"), {}),
                ("POST", "/sparql", form("query", service.replace("SERVICE", "\\u0053ERVICE")), {}),
                ("POST", "/update", form("update", f"LOAD <{target}>"), token),
                ("POST", "/update", form("update", f"INSERT {{ ?s ?p ?o }} WHERE {{ {service[17:]}"), token),
            ]
            for method, path, body, headers in attempts:
                ctype = ("application/sparql-query" if body.startswith("SELECT")
                         else "application/x-www-form-urlencoded")
                status, text = request(served.port, method, path, body, ctype=ctype, **headers)
                assert status == 403 and "--allow-federation" in text, (path, body, text)
            assert not connected(sock, within=2), "kg serve let a SERVICE/LOAD out"
            assert cli("kg", "stats", "--endpoint", f"http://127.0.0.1:{served.port}/query",
                       cwd=tmp_path).returncode == 0  # refused writes did not make it stale
        with kg_serve(copy, "--allow-federation") as served:
            assert "SERVICE/LOAD allowed" in served.line
            asking = in_thread(request, served.port, "POST", "/query", form("query", service))
            assert connected(sock, within=20), "--allow-federation did not let SERVICE out"
            asking.join(30)


def test_the_hidden_server_is_not_on_the_announced_port(copy):
    with kg_serve(copy) as served:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(served.proc.pid)],
                             capture_output=True, text=True).stdout
        (child,) = out.split()
        argv = Path(f"/proc/{child}/cmdline").read_bytes().decode().split("\0")
        inner = argv[argv.index("--bind") + 1]
        assert inner != f"127.0.0.1:{served.port}" and inner.startswith("127.")
        assert argv[1] == "serve-read-only"  # read-only behind the proxy too
        holders = (copy / "kgprobe.lock").read_text()
        assert f"pid {served.proc.pid}: " in holders and f"pid {child}: oxigraph" in holders
