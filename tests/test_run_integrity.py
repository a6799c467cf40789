"""Issue 23, cases 4 and 9 through the CLI: no run mixed, no file written through a planted
link, no traceback from a second writer, a label, or Ctrl-C.

Each test is the attack from the issue, then what must hold now.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import TINY, kgp, ok, one_line  # noqa: E402


def tiny(tmp: Path) -> None:
    (tmp / "tiny.nt").write_text(TINY, encoding="utf-8")

MEMO = ["study", "memorization", "--task", "domain", "--template", "0", "--limit", "5",
        "--threads", "1", "--out", "run"]


# ------------------------------------------------------------------ case 4: resume mixes runs


@pytest.mark.parametrize("damage", ["delete", "garble", "not an object"])
def test_resume_refuses_results_without_a_readable_config(tmp_path, damage):
    """Delete or garble OUT/config.json, rerun with another --model into the folder: exit 0,
    config.json named the new model, results.csv held the old model's numbers."""
    ok(tmp_path, *MEMO, "--model", "frequency")
    run = tmp_path / "run"
    results = (run / "results.csv").read_text(encoding="utf-8")
    config = run / "config.json"
    if damage == "delete":
        config.unlink()
    else:
        config.write_text("{not json" if damage == "garble" else "[1, 2]", encoding="utf-8")
    err = one_line(kgp(tmp_path, *MEMO, "--model", "random"))
    assert "config.json" in err and "--out" in err
    assert (run / "results.csv").read_text(encoding="utf-8") == results
    assert damage == "delete" or config.read_text(encoding="utf-8") in ("{not json", "[1, 2]")
    assert not config.exists() or "random" not in config.read_text(encoding="utf-8")


def test_a_folder_without_results_still_starts_a_run(tmp_path):
    """The refusal is about results: an empty folder, or one with an unreadable config.json
    and nothing else, is a fresh run."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{", encoding="utf-8")
    ok(tmp_path, *MEMO, "--model", "frequency")
    assert '"frequency"' in (tmp_path / "run" / "config.json").read_text(encoding="utf-8")


# ------------------------------------------------------------------ case 9: temporary names


@pytest.fixture
def store(tmp_path) -> Path:
    tiny(tmp_path)
    ok(tmp_path, "kg", "load", "tiny.nt")
    return tmp_path / "store"


def test_a_planted_symlink_at_the_temporary_name_is_not_followed(tmp_path, store):
    """A symlink at the fixed temporary name `.out.ttl.part.ttl` made the export write into
    the link's target."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    planted = tmp_path / ".out.ttl.part.ttl"
    planted.symlink_to(victim)
    ok(tmp_path, "kg", "export", "--out", "out.ttl")
    assert victim.read_text(encoding="utf-8") == "precious\n"
    out = tmp_path / "out.ttl"
    assert not out.is_symlink() and len(list(ox.parse(path=str(out), format=ox.RdfFormat.TURTLE))) == 2
    assert planted.is_symlink()  # not ours: left alone
    assert {p.name for p in tmp_path.iterdir() if ".part" in p.name} == {planted.name}


def test_two_exports_to_one_out_both_end_cleanly(tmp_path, store):
    """Two exports to one --out: the loser got a traceback (both used one temporary file)."""
    with open(tmp_path / "big.nt", "w", encoding="utf-8") as fh:
        for i in range(20_000):
            fh.write(f'<http://ex.org/s{i}> <http://ex.org/p> "value {i}" .\n')
    ok(tmp_path, "kg", "load", "big.nt")
    env = dict(os.environ, KGPROBE_STORE=str(store))
    for _ in range(3):
        procs = [subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "export", "--out",
                                   "out.nt", "--format", "ntriples"], cwd=tmp_path, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0 and "Traceback" not in err, err
        lines = (tmp_path / "out.nt").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 20_002
    assert not [p.name for p in tmp_path.iterdir() if ".part" in p.name]


def test_an_export_into_a_missing_directory_names_the_out_file(tmp_path, store):
    err = one_line(kgp(tmp_path, "kg", "export", "--out", "tiny.nt/out.ttl"))
    assert "tiny.nt" in err and ".part" not in err
    assert (tmp_path / "tiny.nt").read_text(encoding="utf-8") == TINY


# ------------------------------------------------------------------ case 9: labels with escapes


def test_control_characters_in_labels_are_escaped_in_tables(tmp_path):
    """Labels with ANSI escapes were printed raw by the table output (and a newline in a
    label broke the table's rows)."""
    (tmp_path / "ansi.nt").write_text(
        '<http://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> '
        '"red\\u001B[31mALERT\\u001B]0;pwned\\u0007 x\\nnext\\u202Egnp.exe" .\n', encoding="utf-8")
    ok(tmp_path, "kg", "load", "ansi.nt")
    out = ok(tmp_path, "kg", "query", "SELECT ?s ?l WHERE { ?s rdfs:label ?l }")
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "red\\x1b[31mALERT\\x1b]0;pwned\\x07 x\\nnext\\u202egnp.exe" in out
    assert len(out.splitlines()) == 4  # header, rule, one row, count
    # the W3C formats are data, not a terminal table: exact
    csv = ok(tmp_path, "kg", "query", "SELECT ?l WHERE { ?s rdfs:label ?l }", "--format", "csv")
    assert "\x1b[31mALERT" in csv


# ------------------------------------------------------------------ case 9: Ctrl-C


def _catches_sigint(pid: int) -> bool:
    """Python has installed its SIGINT handler (before that the signal's default kills)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except FileNotFoundError:
        pass
    return False


def _mapped(pid: int, name: str) -> bool:
    try:
        return name in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_ctrl_c_at_any_moment_is_one_line_and_status_130(tmp_path, store):
    """An early Ctrl-C (while kgprobe's modules are imported) printed a KeyboardInterrupt
    traceback."""
    env = dict(os.environ, KGPROBE_STORE=str(store))
    for delay in (0.0, 0.02, 0.05, 0.15, 0.3, 0.6, 1.0):
        p = subprocess.Popen([sys.executable, "-m", "kgprobe.cli", "kg", "check"], cwd=tmp_path,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        # from when kgprobe's own imports run (pyoxigraph is one of the first): before them
        # the interpreter starts, which is Python's business, not kgprobe's
        while (p.poll() is None and not (_catches_sigint(p.pid) and _mapped(p.pid, "pyoxigraph"))
               and time.monotonic() < end):
            time.sleep(0.001)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        assert "Traceback" not in err, (delay, err)
        if p.returncode == 0 or (p.returncode == -signal.SIGINT and "ok" in out):
            continue  # finished before the signal, or Python was shutting down (its default)
        assert p.returncode == 130, (delay, p.returncode, out, err)
        assert err.strip() == "kgprobe: interrupted", (delay, err)
