"""The CLI as a user runs it, for the store and run-folder guarantee tests: a subprocess
`python -m kgprobe.cli` with its own store, and the checks every such test makes (exit 0,
or exit 2 with one line and no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TINY = ('<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .\n'
        '<http://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "a" .\n')


def kgp(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KGPROBE_STORE=str(cwd / "store"))
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def ok(cwd: Path, *args: str) -> str:
    r = kgp(cwd, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def one_line(r: subprocess.CompletedProcess, status: int = 2) -> str:
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr
