"""Issue 23 cases 5 and 8, through the CLI: bounded memory and time.  Each command runs under
a 1 GB guard ($KGPROBE_MAX_MEMORY, see limits_helpers), so a fix that fails stops there
instead of exhausting the machine; the tests assert the specific line each fix gives."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from limits_helpers import fails, kgp, ok, server  # noqa: E402

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
 <!ENTITY lol "lol">
{levels}
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">
 <rdf:Description rdf:about="http://ex.org/a"><rdfs:label>{body}</rdfs:label></rdf:Description>
</rdf:RDF>
"""


def laughs(levels: int) -> str:
    decl = "\n".join(f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
                     for i in range(1, levels + 1))
    return LAUGHS.format(levels=decl, body=f"&lol{levels};")


def test_billion_laughs_is_refused_in_one_line(tmp_path):
    (tmp_path / "lol.rdf").write_text(laughs(9))  # 3 GB expanded, from 1 KB
    assert (tmp_path / "lol.rdf").stat().st_size < 2000
    start = time.monotonic()
    line = fails(tmp_path, "kg", "load", "lol.rdf")
    assert "entity" in line and "lol.rdf" in line and "Turtle" in line, line
    assert time.monotonic() - start < 30
    assert not (tmp_path / "store").exists()
    # many references to one big entity (quadratic blow-up) are refused too
    big = "x" * 4096
    refs = "&big;" * 20000  # 80 MB expanded from 100 KB
    (tmp_path / "quad.rdf").write_text(LAUGHS.format(levels=f' <!ENTITY big "{big}">', body=refs))
    assert "entity references expand" in fails(tmp_path, "kg", "load", "quad.rdf")
    # an external entity is never read
    (tmp_path / "ext.rdf").write_text(LAUGHS.format(
        levels=' <!ENTITY ext SYSTEM "file:///etc/passwd">', body="&ext;"))
    assert "external" in fails(tmp_path, "kg", "load", "ext.rdf")


def test_small_protege_entities_still_load(tmp_path):
    rdf = LAUGHS.replace("<!ENTITY lol \"lol\">", '<!ENTITY ex "http://ex.org/">').format(
        levels="", body="ok").replace('rdf:about="http://ex.org/a"', 'rdf:about="&ex;a"')
    (tmp_path / "p.rdf").write_text(rdf)
    ok(tmp_path, "kg", "load", "p.rdf")
    assert ok(tmp_path, "kg", "query", 'ASK { <http://ex.org/a> ?p "ok" }').strip() == "true"


def test_memory_guard_stops_a_load_with_one_line(tmp_path):
    with open(tmp_path / "big.nt", "w") as fh:
        for i in range(200_000):
            fh.write(f'<http://ex.org/s{i}> <http://ex.org/p{i % 50}> "literal value {i} '
                     'with some padding text to take room" .\n')
    line = fails(tmp_path, "kg", "load", "big.nt", "--max-memory", "60M")
    assert "--max-memory 60M" in line and "kg load" in line, line
    assert not (tmp_path / "store").exists(), "a killed first load leaves no store behind"
    assert "--max-memory nonsense" in fails(tmp_path, "kg", "stats", "--max-memory", "nonsense")


def test_corrupt_store_ends_in_one_line(tmp_path):
    ok(tmp_path, "kg", "load", "--default")
    ssts = sorted((tmp_path / "store").glob("*.sst"), key=lambda p: p.stat().st_size)
    assert ssts, "the store has no SST file to damage"
    for sst in ssts[-3:]:  # flip bytes inside the data blocks of the three largest files
        data = bytearray(sst.read_bytes())
        for i in range(len(data) // 4, len(data) * 3 // 4, 997):
            data[i] ^= 0xFF
        sst.write_bytes(data)
    for cmd in (["kg", "query", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"],
                ["kg", "export", "--format", "ntriples", "--out", "x.nt"]):
        line = fails(tmp_path, *cmd)
        assert "damaged" in line or "--max-memory" in line, line
    assert not (tmp_path / "x.nt").exists()


# ------------------------------------------------------------------------ --endpoint (case 8)

HEAD = "HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"


def drip(conn, stop) -> None:
    """Announce 1000 bytes, then send one every 0.5 s (bounded)."""
    conn.sendall((HEAD + "Content-Length: 1000\r\n\r\n").encode())
    for _ in range(120):
        if stop.wait(0.5):
            return
        conn.sendall(b" ")


def huge(conn, stop) -> None:
    """No length announced: 8 MB of a JSON string, then close."""
    conn.sendall((HEAD + "Connection: close\r\n\r\n").encode())
    conn.sendall(b'{"head": {}, "boolean": "' + b"x" * (8 << 20) + b'"}')


def announced(conn, stop) -> None:
    conn.sendall((HEAD + "Content-Length: 3000000000\r\n\r\n").encode())


def cut(conn, stop) -> None:
    conn.sendall((HEAD + "Content-Length: 1000\r\n\r\n{\"head\"").encode())


def test_endpoint_dripping_bytes_ends_at_the_timeout(tmp_path):
    with server(drip) as (port, hits):
        start = time.monotonic()
        line = fails(tmp_path, "kg", "query", "ASK { ?s ?p ?o }", "--endpoint",
                     f"http://127.0.0.1:{port}/query", "--timeout", "2")
        took = time.monotonic() - start
    assert "within --timeout 2 s" in line, line
    assert took < 8, took  # was 90 s for --timeout 5; not retried, nothing else waits
    assert len(hits) == 1


def test_endpoint_answer_size_is_capped(tmp_path):
    url = "http://127.0.0.1:{}/query"
    with server(huge) as (port, _):
        line = fails(tmp_path, "kg", "query", "ASK { ?s ?p ?o }", "--endpoint", url.format(port),
                     "--max-answer", "1M")
        assert "--max-answer 1.0 MiB" in line and "more than that arrived" in line, line
    with server(announced) as (port, _):
        line = fails(tmp_path, "kg", "query", "ASK { ?s ?p ?o }", "--endpoint", url.format(port))
        assert "--max-answer 512.0 MiB" in line and "announced" in line, line
    with server(cut) as (port, _):
        line = fails(tmp_path, "kg", "query", "ASK { ?s ?p ?o }", "--endpoint", url.format(port),
                     "--retries", "0")
        assert "IncompleteRead" in line and "unreachable" in line, line


def test_guard_passes_signals_and_status_through(tmp_path):
    """The supervisor is invisible: Ctrl-C (SIGINT sent to the command) still interrupts the
    work with its one line and 130, and a failed first load still leaves no store."""
    import os
    import signal
    import subprocess

    with open(tmp_path / "big.nt", "w") as fh:
        for i in range(300_000):
            fh.write(f'<http://ex.org/s{i}> <http://ex.org/p> "value {i} with padding text" .\n')
    env = dict(os.environ, KGPROBE_STORE=str(tmp_path / "store"), KGPROBE_MAX_MEMORY="1G")
    # a command started from a terminal has SIGINT's default action; a test run started in the
    # background of a non-interactive shell inherits SIGINT ignored, and so would the command
    proc = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "load", "big.nt"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        end = time.monotonic() + 60
        lock = tmp_path / "store" / "kgprobe.lock"  # the store is open: the load has begun
        while not (lock.exists() and lock.read_text()) and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)
        assert proc.poll() is None, "the load finished before the signal: nothing was tested"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip() == "kgprobe: interrupted", (proc.returncode, err)
    assert not (tmp_path / "store").exists()
