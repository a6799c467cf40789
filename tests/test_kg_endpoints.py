"""SPARQL endpoints both ways, end to end: `kg serve` runs the real Oxigraph server on a free
loopback port, and `--endpoint`, `kg pull` and the study reader read from it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from kgprobe.errors import QueryError
from kgprobe.kg.endpoint import DEFAULT_GRAPH, SparqlEndpoint
from kgprobe.kg.serve import oxigraph_command
from kgprobe.kg.sparql_client import EndpointError, SparqlClient
from kgprobe.kg.store import META_GRAPH, KnowledgeGraph
from kgprobe.ontology.loaders import load_rdf
from kgprobe.reasoning.materialize import materialize

EX = "http://ex.org/"
FIXTURE = f"""@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
ex:Animal a owl:Class ; rdfs:label "animal"@en .
ex:Mammal a owl:Class ; rdfs:subClassOf ex:Animal ; rdfs:label "mammal"@en .
ex:Dog a owl:Class ; rdfs:subClassOf ex:Mammal ; rdfs:label "dog"@en, "Hund"@de .
ex:Person a owl:Class ; rdfs:subClassOf ex:Mammal ; rdfs:label "person"@en .
ex:owns a owl:ObjectProperty ; rdfs:domain ex:Person ; rdfs:range ex:Animal ;
    rdfs:subPropertyOf ex:relatedTo ; rdfs:label "owns"@en .
ex:relatedTo a owl:ObjectProperty ; rdfs:label "related to"@en .
ex:ann a ex:Person ; rdfs:label "Ann"@en ; ex:owns ex:rex .
""" + "".join(f'ex:dog{i} a ex:Dog ; rdfs:label "dog number {i}"@en .\n' for i in range(12))


def cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return bool(state.stdout.strip()) and not state.stdout.strip().startswith("Z")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("served")
    (root / "zoo.ttl").write_text(FIXTURE)
    path = root / "store"
    with KnowledgeGraph(path) as kg:
        kg.add_sources([load_rdf(root / "zoo.ttl")])
        materialize(kg)
    shutil.copytree(path, root / "snapshot")
    return path


@pytest.fixture(scope="module")
def snapshot(store) -> Path:
    """A copy of the served store, read locally: the server may compact the served directory
    under a read-only reader (see kg/serve.py)."""
    return store.parent / "snapshot"


@pytest.fixture(scope="module")
def served(store):
    """`kgprobe kg serve` on a free port; stopped by SIGINT (Ctrl-C) with nothing left over."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "serve", "--store",
                             str(store), "--bind", f"127.0.0.1:{port}"], cwd=store.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _read_line(proc, timeout=60)
        url = f"http://127.0.0.1:{port}/query"
        assert line.startswith(f"serving {store} at {url}"), line
        server = children(proc.pid)
        assert len(server) == 1, server
        yield url, proc, server[0]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in children(proc.pid):
            os.kill(pid, signal.SIGKILL)


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box and box[0], f"kg serve printed nothing in {timeout} s: {proc.poll()}"
    return box[0].strip()


# ----------------------------------------------------------------------------- --endpoint


def test_endpoint_reads_what_the_snapshot_reads(served, snapshot):
    url, _, _ = served
    with KnowledgeGraph(snapshot, create=False, read_only=True) as local, \
            SparqlEndpoint(SparqlClient(url)) as remote:
        assert remote.kgprobe_store and remote.graphs() == local.graphs()
        assert set(remote.triples()) == set(local.triples())
        assert remote.count() == local.count() and remote.inferred_state() == "fresh"
        assert remote.ontology().classes.keys() == local.ontology().classes.keys()
        query = "SELECT ?c WHERE { ex:Dog rdfs:subClassOf+ ?c } ORDER BY ?c".replace("ex:", EX)
        query = query.replace(EX + "Dog", f"<{EX}Dog>")
        assert remote.query(query).rows == local.query(query).rows == [[EX + "Animal"], [EX + "Mammal"]]
        # the meta graph is never part of what queries see, as locally
        assert remote.query(f"ASK {{ <{META_GRAPH}> ?p ?o }}").boolean is False


def test_paging_reads_every_triple_in_pages(served, snapshot):
    url, _, _ = served
    with KnowledgeGraph(snapshot, create=False, read_only=True) as local:
        expected = set(local.triples())
    calls = []
    client = SparqlClient(url)
    real = client.select
    client.select = lambda q, **kw: calls.append(q) or real(q, **kw)
    paged = SparqlEndpoint(client, page_size=7)
    calls.clear()
    got = list(paged.triples())
    assert set(got) == expected and len(got) == len(expected)
    pages = [q for q in calls if "OFFSET" in q]
    assert len(pages) == -(-len(expected) // 7) and all("LIMIT 7" in q for q in pages)


def test_kg_query_stats_and_generate_through_the_endpoint(served, snapshot, tmp_path):
    url, _, _ = served
    q = "SELECT ?x ?l WHERE { ?x rdfs:label ?l } ORDER BY ?x ?l"
    local = cli("kg", "query", q, "--store", str(snapshot), "--format", "json", cwd=tmp_path)
    remote = cli("kg", "query", q, "--endpoint", url, "--format", "json", cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    stats = cli("kg", "stats", "--endpoint", url, cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout == cli("kg", "stats", "--store", str(snapshot), cwd=tmp_path).stdout
    for kind in ("memorizing", "reasoning"):
        a = cli("generate", kind, "--endpoint", url, "--out", str(tmp_path / f"{kind}-remote"),
                cwd=tmp_path)
        b = cli("generate", kind, "--store", str(snapshot), "--out", str(tmp_path / f"{kind}-local"),
                cwd=tmp_path)
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        files = sorted(p.name for p in (tmp_path / f"{kind}-local").iterdir())
        assert files and files == sorted(p.name for p in (tmp_path / f"{kind}-remote").iterdir())
        for name in files:
            assert ((tmp_path / f"{kind}-remote" / name).read_bytes()
                    == (tmp_path / f"{kind}-local" / name).read_bytes()), name


def test_copen_reads_the_kg_from_an_endpoint(served, snapshot):
    from kgprobe.studies.copen.study import kg_ontology

    url, _, _ = served
    onto, source = kg_ontology(None, url)
    with KnowledgeGraph(snapshot, create=False, read_only=True) as local:
        assert source == url and onto.classes.keys() == local.ontology().classes.keys()


def test_endpoint_errors_are_one_line_exit_2(served, tmp_path):
    url, _, _ = served
    bad = cli("kg", "query", "SELECT * WHERE { ?s ?p }", "--endpoint", url, cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "refused the query (HTTP 400" in bad.stderr
    gone = f"http://127.0.0.1:{free_port()}/query"
    down = cli("kg", "stats", "--endpoint", gone, "--retries", "1", cwd=tmp_path)
    assert down.returncode == 2 and len(down.stderr.strip().splitlines()) == 1
    assert "endpoint unreachable" in down.stderr and "2 tries" in down.stderr
    both = cli("kg", "stats", "--endpoint", url, "--store", "x", cwd=tmp_path)
    assert both.returncode == 2 and "give one" in both.stderr
    with pytest.raises(QueryError):
        SparqlClient(url).select("SELEC nothing")


def test_retries_back_off_then_give_up():
    client = SparqlClient(f"http://127.0.0.1:{free_port()}/query", retries=2, backoff=0.2)
    start = time.monotonic()
    with pytest.raises(EndpointError, match="3 tries"):
        client.select("ASK {}")
    assert time.monotonic() - start >= 0.2 + 0.4  # waited 0.2 s, then 0.4 s


def test_a_silent_endpoint_times_out():
    with socket.socket() as listener:  # accepts connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/query"
        start = time.monotonic()
        with pytest.raises(EndpointError, match="timed out after 0.5 s"):
            SparqlClient(url, timeout=0.5, retries=0).select("ASK {}")
        assert time.monotonic() - start < 5


# ----------------------------------------------------------------------------- kg serve


def test_serve_holds_the_writer_lock(served, store, tmp_path):
    url, proc, server = served
    (tmp_path / "more.ttl").write_text(f"<{EX}a> <{EX}b> <{EX}c> .\n")
    writer = cli("kg", "load", str(tmp_path / "more.ttl"), "--store", str(store), cwd=tmp_path)
    assert writer.returncode == 2 and "in use by another kgprobe process" in writer.stderr
    assert f"pid {proc.pid}" in writer.stderr
    # a plain client sees every graph as the default graph (--union-default-graph)
    req = urllib.request.Request(url, data=b"query=SELECT+(COUNT(*)+AS+?n)+{?s+?p+?o}",
                                 headers={"Accept": "application/sparql-results+json",
                                          "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert int(json.load(resp)["results"]["bindings"][0]["n"]["value"]) > 0
    assert alive(server)


def test_serve_read_only_refuses_updates_and_ctrl_c_stops_cleanly(store, tmp_path, served):
    # the module's server holds the lock: serve a copy of the store read-only
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "serve", "--store",
                             str(copy), "--bind", f"127.0.0.1:{port}", "--read-only"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "read-only" in _read_line(proc, timeout=60)
        (server,) = children(proc.pid)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/update",
                                     data=b"update=INSERT+DATA+{<http://a>+<http://b>+<http://c>}",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=10)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while alive(server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(server), "the Oxigraph server outlived kg serve"
        busy = cli("kg", "serve", "--store", str(tmp_path / "nothing"), cwd=tmp_path)
        assert busy.returncode == 2 and "no store here" in busy.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_reports_a_port_in_use(served, tmp_path, store):
    url, _, _ = served
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    bind = url.split("//")[1].split("/")[0]
    res = cli("kg", "serve", "--store", str(copy), "--bind", bind, cwd=tmp_path, timeout=60)
    assert res.returncode == 2 and f"--bind {bind}: cannot listen there" in res.stderr, res.stderr
    assert not res.stdout  # no endpoint announced


# ----------------------------------------------------------------------------- kg pull


def pulled(url: str, tmp_path: Path, name: str, *extra: str) -> KnowledgeGraph:
    res = cli("kg", "pull", "--endpoint", url, "--store", str(tmp_path / name), "--instances",
              "3", *extra, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return KnowledgeGraph(tmp_path / name, create=False, read_only=True)


def test_pull_builds_the_paper_ontology_with_provenance(served, tmp_path):
    url, _, _ = served
    with pulled(url, tmp_path, "a", "--seed", "1") as kg:
        onto = kg.ontology()
        assert set(onto.classes) == {EX + c for c in ("Animal", "Mammal", "Dog", "Person")}
        dogs = kg.query(f"SELECT ?i WHERE {{ ?i a <{EX}Dog> }}").rows
        assert len(dogs) == 3  # 3 of the 12 dogs
        chain = kg.query(f"ASK {{ <{EX}Dog> rdfs:subClassOf <{EX}Mammal> . "
                         f"<{EX}Mammal> rdfs:subClassOf <{EX}Animal> }}")
        assert chain.boolean
        prop = kg.query(f"SELECT ?d ?r ?sup WHERE {{ <{EX}owns> rdfs:domain ?d ; rdfs:range ?r ; "
                        "rdfs:subPropertyOf ?sup }").rows
        assert prop == [[EX + "Person", EX + "Animal", EX + "relatedTo"]]
        assert not kg.query('ASK { ?x rdfs:label "Hund"@de }').boolean  # --lang en
        meta = kg._store.query(f"SELECT ?p ?o WHERE {{ GRAPH <{META_GRAPH}> {{ "
                               "<urn:kgprobe:source:pull> ?p ?o } }")
        facts = {}
        for row in meta:
            facts.setdefault(row["p"].value.rsplit("#", 1)[1], []).append(row["o"].value)
        assert facts["pulledFrom"] == [url] and facts["sourcePath"] == [url]
        assert facts["pullSeed"] == ["1"] and facts["pullInstancesPerClass"] == ["3"]
        assert any("rdfs:subClassOf" in q for q in facts["pullQuery"]) and len(facts["pullQuery"]) >= 6
        first = set(kg.triples())
    with pulled(url, tmp_path, "b", "--seed", "1") as kg:
        assert set(kg.triples()) == first  # the same seed, the same sample
    with pulled(url, tmp_path, "c", "--seed", "2") as kg:
        assert set(kg.triples()) != first


# ----------------------------------------------------------------------------- any endpoint


@pytest.fixture()
def plain_oxigraph(tmp_path):
    """A bare `oxigraph serve` (in memory, not kgprobe's) with the fixture in its default graph."""
    port = free_port()
    proc = subprocess.Popen([oxigraph_command(), "serve", "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                req = urllib.request.Request(f"{base}/store?default", data=FIXTURE.encode(),
                                             headers={"Content-Type": "text/turtle"}, method="POST")
                urllib.request.urlopen(req, timeout=5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "oxigraph did not start"
                time.sleep(0.2)
        yield f"{base}/query"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_any_endpoint_is_read_through_its_default_graph(plain_oxigraph, tmp_path):
    with SparqlEndpoint(SparqlClient(plain_oxigraph)) as remote:
        assert not remote.kgprobe_store and remote.graphs() == [DEFAULT_GRAPH]
        assert remote.count() == len(set(load_rdf_text(tmp_path).triples))
    stats = cli("kg", "stats", "--endpoint", plain_oxigraph, cwd=tmp_path)
    assert stats.returncode == 0 and DEFAULT_GRAPH in stats.stdout, stats.stderr
    with pulled(plain_oxigraph, tmp_path, "p", "--namespace", EX) as kg:
        assert len(kg.query(f"SELECT ?i WHERE {{ ?i a <{EX}Dog> }}").rows) == 3


def load_rdf_text(tmp_path: Path):
    (tmp_path / "fixture.ttl").write_text(FIXTURE)
    return load_rdf(tmp_path / "fixture.ttl")


# ----------------------------------------------------------------------------- issue 45


def _answering_503(body: dict):
    """A loopback server answering every request 503 with `body["text"]`; (url, requests,
    server)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # the base class calls it by this name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(self.path)
            data = body["text"].encode()
            self.send_response(503)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/query", seen, server


def test_kg_serve_timeout_503_is_not_retried_and_says_timed_out(tmp_path, capsys):
    """Issue 45: kg serve's own timeout 503 was retried four times and called "unreachable"."""
    from kgprobe.cli import main

    said = ("the query ran past kg serve's --query-timeout (2 s) and was stopped; narrow it (a "
            "LIMIT, more specific patterns) or restart kg serve with a larger --query-timeout")
    body = {"text": said}
    url, seen, server = _answering_503(body)
    try:
        start = time.monotonic()
        code = main(["kg", "query", "SELECT * { ?s ?p ?o }", "--endpoint", url, "--retries", "3"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "query timed out" in err and "unreachable" not in err and "--query-timeout" in err
        assert len(seen) == 1 and time.monotonic() - start < 5, seen  # asked once, no backoff
        seen.clear()  # any other 503 (a busy server) is still retried
        body["text"] = "busy"
        with pytest.raises(EndpointError, match="unreachable"):
            SparqlClient(url, retries=2, backoff=0.05).select("ASK {}")
        assert len(seen) == 3
    finally:
        server.shutdown()
        server.server_close()


def test_an_ipv6_bind_is_announced_as_a_bracketed_url():
    """Issue 45: `--bind ::1:P` printed http://::1:P/query, which no client can open."""
    from kgprobe.kg.serve import ServeOptions, _announcement, endpoint_url

    assert endpoint_url("::1:7878") == "http://[::1]:7878/query"
    assert endpoint_url("[::1]:7878") == "http://[::1]:7878/query"
    assert endpoint_url(":::7878") == "http://[::]:7878/query"
    assert endpoint_url("127.0.0.1:7878") == "http://127.0.0.1:7878/query"
    assert endpoint_url("localhost:80") == "http://localhost:80/query"
    line = _announcement(ServeOptions(Path("s"), bind="::1:7878", allow_updates=True), "t")
    assert "at http://[::1]:7878/query " in line and "updates at http://[::1]:7878/update" in line
    assert urllib.parse.urlsplit(endpoint_url("::1:7878")).port == 7878  # a URL that parses
