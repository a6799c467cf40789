"""Nothing outside the store is touched (issue 34): the files kgprobe creates beside its
outputs and in its store.

* the writer lock is never followed through a planted symbolic or hard link (it is truncated:
  the link's target would lose its bytes);
* temporary `.NAME.PID-XXXXXXXX.part` files go with a SIGTERM'd writer, and a SIGKILL'd
  writer's are removed by the next command writing into that folder, never a live one's;
* `reason --provenance` stops at `--max-provenance` with one line and no file;
* `kg check` passes a store written through `kg serve --allow-updates`;
* a full disk under `kg export --out`, an endpoint answering an invalid IRI to `kg pull`, and
  an empty `--name` are one line (exit 2), not a traceback."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyoxigraph as ox
import pytest
from kgprobe import atomic
from kgprobe.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import TINY, kgp, ok  # noqa: E402
from test_serve_security import form, kg_serve, request  # noqa: E402

CHAIN_HEAD = "@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"


def chain(tmp: Path, depth: int) -> Path:
    """ex:C1 ⊑ ex:C0, …: a subclass chain whose provenance grows with depth cubed."""
    path = tmp / "chain.ttl"
    path.write_text(CHAIN_HEAD + "".join(f"ex:C{i + 1} rdfs:subClassOf ex:C{i} .\n"
                                         for i in range(depth)), encoding="utf-8")
    return path


def parts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".part" in p.name)


# ------------------------------------------------------------------ the writer lock


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    """`kgprobe ARGV` in this process: its exit status and its stderr lines."""
    capsys.readouterr()
    status = main(list(argv))
    return status, capsys.readouterr().err.strip().splitlines()


def refused(capsys, *argv: str) -> str:
    status, err = run(capsys, *argv)
    assert status == 2 and len(err) == 1, (status, err)
    return err[0]


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_planted_lock_link_is_refused_and_its_target_keeps_its_bytes(tmp_path, capsys, link):
    """`kg load`, `reason` and `kg serve` truncated whatever `kgprobe.lock` pointed to."""
    (tmp_path / "tiny.nt").write_text(TINY, encoding="utf-8")
    victim = tmp_path / "v"
    victim.write_text("keep\n", encoding="utf-8")

    def plant(store: Path) -> str:
        store.mkdir(exist_ok=True)
        (store / "kgprobe.lock").unlink(missing_ok=True)
        if link == "symlink":
            (store / "kgprobe.lock").symlink_to(victim)
        else:
            os.link(victim, store / "kgprobe.lock")
        return str(store)

    tiny = str(tmp_path / "tiny.nt")
    err = refused(capsys, "kg", "load", "--store", plant(tmp_path / "new"), tiny)
    assert "kgprobe.lock" in err and ("symbolic link" in err or "hard link" in err), err
    store = str(tmp_path / "store")
    assert run(capsys, "kg", "load", "--store", store, tiny)[0] == 0
    plant(tmp_path / "store")
    assert "kgprobe.lock" in refused(capsys, "reason", "--store", store)
    assert "kgprobe.lock" in refused(capsys, "kg", "serve", "--store", store, "--bind",
                                     "127.0.0.1:7")
    assert victim.read_text(encoding="utf-8") == "keep\n"


# ------------------------------------------------------------------ temporary files


def test_sweep_removes_only_a_dead_writers_unheld_parts(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(done.stdout)
    assert not atomic.process_alive(dead)
    stale = tmp_path / f".out.json.{dead}-abcd_123.part.json"
    live = tmp_path / f".out.json.{os.getpid()}-abcd_123.part.json"
    held = tmp_path / f".res.{dead}-zzzzzzzz.part"
    other = tmp_path / f".notes.{dead}-abcd_123.partial"  # not our name
    for p in (stale, live, held, other):
        p.write_text("x")
    with open(held) as fh:  # a writer in another pid namespace holds its flock
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert atomic.sweep(tmp_path) == [stale]
    assert parts(tmp_path) == sorted(p.name for p in (held, live, other))


def _started_part(folder: Path, proc: subprocess.Popen, timeout: float = 120) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in folder.glob(".p.json.*.part.json") if p.stat().st_size > 0]
        if found:
            return found[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no provenance part file appeared")


def _reasoning(tmp: Path) -> subprocess.Popen:
    env = dict(os.environ, KGPROBE_STORE=str(tmp / "store"))
    return subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "reason", "--provenance",
                             "out/p.json"], cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def test_killed_provenance_writes_leave_no_part_file(tmp_path):
    """`timeout 60 kgprobe reason --provenance` left GBs of hidden `.part` files."""
    assert main(["kg", "load", "--store", str(tmp_path / "store"),
                 str(chain(tmp_path, 120))]) == 0
    out = tmp_path / "out"
    proc = _reasoning(tmp_path)  # SIGTERM (timeout's signal): the writer removes its file
    _started_part(out, proc)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM and parts(out) == []
    proc = _reasoning(tmp_path)  # SIGKILL: the writer cannot; the next write there does
    part = _started_part(out, proc)
    proc.kill()
    proc.communicate(timeout=60)
    writer = int(part.name.split(".")[-3].split("-")[0])
    end = time.monotonic() + 30
    while atomic.process_alive(writer) and time.monotonic() < end:  # PR_SET_PDEATHSIG
        time.sleep(0.05)
    assert parts(out) == [part.name]
    ok(tmp_path, "kg", "export", "--out", "out/union.ttl")
    assert parts(out) == [] and (out / "union.ttl").exists()


def test_provenance_past_its_bound_is_one_line_and_no_file(tmp_path, capsys):
    store, out = str(tmp_path / "store"), str(tmp_path / "p.json")
    assert run(capsys, "kg", "load", "--store", store, str(chain(tmp_path, 40)))[0] == 0
    err = refused(capsys, "reason", "--store", store, "--provenance", out,
                  "--max-provenance", "20K")
    assert "--max-provenance (20.0 KiB)" in err
    assert not (tmp_path / "p.json").exists() and parts(tmp_path) == []
    assert run(capsys, "reason", "--store", store, "--provenance", out,
               "--max-provenance", "0")[0] == 0
    assert (tmp_path / "p.json").stat().st_size > 20 * 1024
    assert "not a size" in refused(capsys, "reason", "--store", store, "--max-provenance", "lots")


def test_export_on_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    """pyoxigraph reports ENOSPC only in its message ("os error 28"): that was a traceback.
    The export is pointed at /dev/full, a device every write to fails with ENOSPC."""
    (tmp_path / "tiny.nt").write_text(TINY, encoding="utf-8")
    store = str(tmp_path / "store")
    assert main(["kg", "load", "--store", store, str(tmp_path / "tiny.nt")]) == 0
    real = ox.serialize

    def onto_full_disk(items, target, *args, **kwargs):
        return real(items, "/dev/full" if isinstance(target, str) else target, *args, **kwargs)

    monkeypatch.setattr(ox, "serialize", onto_full_disk)
    capsys.readouterr()
    assert main(["kg", "export", "--store", store, "--out", str(tmp_path / "out.ttl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out.ttl: cannot be written (No space left on device)" in err[0]
    assert not (tmp_path / "out.ttl").exists() and parts(tmp_path) == []


# ------------------------------------------------------------------ kg check after kg serve


def test_kg_check_passes_a_store_written_through_kg_serve(tmp_path):
    (tmp_path / "tiny.nt").write_text(TINY, encoding="utf-8")
    chain(tmp_path, 3)
    store = tmp_path / "store"
    assert main(["kg", "load", "--store", str(store), str(tmp_path / "tiny.nt"),
                 str(tmp_path / "chain.ttl"), "--reason"]) == 0
    with kg_serve(store, "--allow-updates") as served:
        auth = {"Authorization": f"Bearer {served.token}"}
        for update in ("INSERT DATA { GRAPH <urn:x:notes> { <urn:a> <urn:b> <urn:c> } }",
                       "INSERT DATA { GRAPH <urn:kgprobe:source:chain> { "
                       "<http://ex.org/C9> <http://www.w3.org/2000/01/rdf-schema#subClassOf> "
                       "<http://ex.org/C3> } }"):
            status, text = request(served.port, "POST", "/update", form("update", update), **auth)
            assert status == 204, text
    assert main(["reason", "--store", str(store)]) == 0
    report = kgp(tmp_path, "kg", "check")
    assert report.returncode == 0, report.stdout + report.stderr
    notes = [line for line in report.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "source:chain" in notes[0] and "kg serve" in notes[0], notes


# ------------------------------------------------------------------ kg pull, --name


@pytest.fixture
def bad_iri_endpoint():
    """A loopback SPARQL endpoint whose classes include an IRI with a space in it."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            query = dict(p.split("=", 1) for p in self.rfile.read(
                int(self.headers["Content-Length"])).decode().split("&")).get("query", "")
            if query.startswith("ASK"):
                answer = {"head": {}, "boolean": False}
            elif "COUNT" in query:
                answer = {"head": {"vars": ["n"]}, "results": {"bindings": [{"n": {
                    "type": "literal", "value": "1",
                    "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}
            else:
                answer = {"head": {"vars": ["c"]}, "results": {"bindings": [
                    {"c": {"type": "uri", "value": "http://ex.org/a b"}}]}}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/query"
    finally:
        server.shutdown()
        server.server_close()


def test_pull_of_an_invalid_iri_is_one_line(bad_iri_endpoint, tmp_path, capsys):
    status = main(["kg", "pull", "--endpoint", bad_iri_endpoint, "--retries", "0",
                   "--store", str(tmp_path / "store")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert bad_iri_endpoint in err[0] and "not valid RDF" in err[0] and "IRI" in err[0]
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("command", [["kg", "load", "tiny.nt"],
                                     ["kg", "pull", "--endpoint", "http://127.0.0.1:9/query"]])
def test_an_empty_name_is_refused(tmp_path, command, capsys, monkeypatch):
    """`--name ''` made the graph `urn:kgprobe:source:`."""
    (tmp_path / "tiny.nt").write_text(TINY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--name", "", "--store", "store"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--name '': a graph name must not be empty" in err[0]
    assert not (tmp_path / "store").exists()
