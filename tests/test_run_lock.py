"""Issue 34: a run folder has one writer at a time, and a unit file that is not whole is never
counted.

Two runs into one ``--out`` used to both pass the settings check and mix their units; a unit
file cut short counted as finished; a line that is no JSON gave a traceback; a full disk named
"a file". Each test is the attack, then what must hold now.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kgprobe.cli import main
from kgprobe.studies.run_lock import LOCK_NAME, run_folder_lock

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import kgp, one_line  # noqa: E402

#: the cheapest study run: the random baseline, 5 records of one task, one unit per template
MEMO = ["study", "memorization", "--model", "random", "--task", "subClassOf", "--limit", "5",
        "--threads", "1"]


def memo(out: Path, *extra: str) -> list[str]:
    return [*MEMO, *extra, "--out", str(out)]


def errors(err: str) -> list[str]:
    """The command's own lines on stderr (an in-process run also draws its progress bar)."""
    return [line for line in err.replace("\r", "\n").splitlines() if "kgprobe:" in line]


def files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in ("results.csv", "predictions.jsonl")}


# ------------------------------------------------------------------ one writer per folder


def test_a_second_writer_is_refused_with_one_line_naming_the_first(tmp_path):
    """The issue's race made deterministic: this test holds a finished run's lock, as a
    resuming run would, and a real `kgprobe` run (the same settings: it would resume), dry
    run and report into the folder each exit 2 with one line naming the holder (pid, host,
    start time); none of them touches a file there."""
    out = tmp_path / "run"
    assert main(memo(out)) == 0
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*") if p.is_file()}
    with run_folder_lock(out):
        lock = (out / LOCK_NAME).read_text(encoding="utf-8")
        assert f"pid {os.getpid()} on {socket.gethostname()} since " in lock
        commands = [memo(out), memo(out, "--dry-run"), ["report", str(out)]]
        with ThreadPoolExecutor(len(commands)) as pool:  # side by side: each waits on startup
            refused = list(pool.map(lambda argv: kgp(tmp_path, *argv), commands))
        for r in refused:
            err = one_line(r)
            assert "in use by another kgprobe run" in err and f"pid {os.getpid()} " in err, err
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*") if p.is_file()}
    assert after == before  # and the lock file is gone with its holder


def test_two_real_runs_into_one_folder_give_one_run_and_one_refusal(tmp_path):
    """Two `kgprobe study memorization` processes started together into one --out (seeds 0
    and 7): whichever way they interleave, one ends 0 and the other is refused with one line
    (the folder is in use, or, if the first had finished, holds other settings), and the
    folder is exactly a solo run of the winner's seed."""
    out = tmp_path / "run"
    runs = {seed: subprocess.Popen([sys.executable, "-m", "kgprobe.cli",
                                    *memo(out, "--seed", seed)], cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for seed in ("0", "7")}
    done = {seed: (p.wait(timeout=300), p.stderr.read()) for seed, p in runs.items()}
    for p in runs.values():
        p.stdout.close()
        p.stderr.close()
    assert sorted(rc for rc, _ in done.values()) == [0, 2], done
    winner = next(seed for seed, (rc, _) in done.items() if rc == 0)
    loser = done["7" if winner == "0" else "0"][1]
    assert "Traceback" not in loser and len(loser.strip().splitlines()) == 1, loser
    assert "in use by another kgprobe run" in loser or "other settings" in loser, loser
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["seed"] == int(winner)
    solo = {s: tmp_path / f"solo{s}" for s in ("0", "7")}
    for s, folder in solo.items():
        assert main(memo(folder, "--seed", s)) == 0
    assert files(solo["0"]) != files(solo["7"])  # the seeds rank differently: a mix would show
    assert files(out) == files(solo[winner])


def test_a_symlink_at_the_lock_name_is_refused_and_its_target_kept(tmp_path, capsys):
    """A symlink planted at OUT/.kgprobe-run.lock is never opened through: one line naming
    it, and its target keeps its bytes."""
    out = tmp_path / "run"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    (out / LOCK_NAME).symlink_to(victim)
    assert main(memo(out)) == 2
    err = capsys.readouterr().err
    assert LOCK_NAME in err and "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert victim.read_bytes() == b"precious\n"
    assert (out / LOCK_NAME).is_symlink() and not (out / "config.json").exists()


# ------------------------------------------------------------------ unit files are whole


def _cut_to_first_line(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")


def _edit_metric(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    head = json.loads(lines[0])
    head["row"]["MRR"] = 0.99
    path.write_text(json.dumps(head) + "\n" + "".join(lines[1:]), encoding="utf-8")


def _garble_a_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_a_truncated_edited_or_garbled_unit_is_rescored_with_a_warning(tmp_path, capsys):
    """One unit cut to its first line (it counted as finished: predictions.jsonl lost its
    rows while results.csv kept n), one with an edited metric (passed unchecked), one with a
    half line (a traceback): a rerun warns once per file, naming it, scores each again, and
    ends with the bytes of the uninterrupted run."""
    out = tmp_path / "run"
    assert main(memo(out)) == 0
    whole = files(out)
    units = sorted((out / "units").iterdir())
    assert len(units) == 3
    for damage, unit in zip((_cut_to_first_line, _edit_metric, _garble_a_line), units):
        damage(unit)
    capsys.readouterr()
    assert main(memo(out)) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    warnings = [line for line in errors(err) if "kgprobe: warning:" in line]
    assert len(warnings) == 3, err
    for unit in units:
        assert sum(str(unit) in w for w in warnings) == 1, (unit, warnings)
    assert files(out) == whole
    # and the files are whole again: a further rerun warns about nothing
    assert main(memo(out)) == 0
    assert "warning" not in capsys.readouterr().err and files(out) == whole


def test_a_unit_without_its_check_line_is_not_counted(tmp_path, capsys):
    """A unit written without the check line (cut at a line boundary, or by a kgprobe before
    units carried it) is scored again, not trusted."""
    out = tmp_path / "run"
    assert main(memo(out, "--template", "0")) == 0
    whole = files(out)
    (unit,) = (out / "units").iterdir()
    lines = unit.read_text(encoding="utf-8").splitlines(keepends=True)
    assert json.loads(lines[-1])["unit_check"]["lines"] == len(lines) - 2 == 5
    unit.write_text("".join(lines[:-1]), encoding="utf-8")
    capsys.readouterr()
    assert main(memo(out, "--template", "0")) == 0
    assert "no check line" in capsys.readouterr().err and files(out) == whole


# ------------------------------------------------------------------ a full disk


def test_a_full_disk_during_a_study_names_the_file_being_written(tmp_path, monkeypatch,
                                                                   capsys):
    """ENOSPC while a unit file is written (a write's error names no file): one line naming
    the output, not "a file", and no traceback."""
    out = tmp_path / "run"
    fsync = os.fsync

    def full_for_units(fd: int) -> None:
        if "/units/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_for_units)
    assert main(memo(out, "--template", "0")) == 2
    err = capsys.readouterr().err
    assert len(errors(err)) == 1 and "Traceback" not in err, err
    assert f"{out}/units/" in errors(err)[0] and "free disk space" in err, err
    assert not any((out / "units").iterdir())  # no half-written unit, no temporary left


def test_a_full_disk_outside_any_file_names_the_run_folder(tmp_path, monkeypatch, capsys):
    """A full disk raised where no file is known (a library's own write) still names the run
    folder the command was writing."""
    from kgprobe.studies import runner

    out = tmp_path / "run"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(runner, "write_text", full)
    assert main(memo(out, "--template", "0")) == 2
    err = capsys.readouterr().err
    assert len(errors(err)) == 1 and f"error: {out}: No space left" in err, err
