"""The wheel holds the whole package, found without a hand-kept list (setup.py), and nothing else.

A study added as a sub-package of studies/ must be in the wheel without anyone editing
pyproject.toml; so must every file the code reads beside its modules (templates, bundled data).
The test builds a real wheel from a copy of the checkout (pip, no network, no build isolation:
the build writes build/ and *.egg-info into the tree it builds, so the checkout is left alone),
compares its file list with the source tree, and runs the study registry from the unpacked
wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Folders of the checkout that are no part of the package (they have no __init__.py either).
NOT_THE_PACKAGE = {"tests", "bench", "docs", "crosscheck"}
#: Build and tool output that a copy of the checkout leaves out.
SKIPPED = {"__pycache__", "build", "dist", "out", "site"}


def _ignored(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n.startswith(".") or n in SKIPPED or n.endswith(".egg-info")}


def _package_dirs() -> list[Path]:
    """Every package folder of the source tree: the root and each folder below a package that
    has an __init__.py."""
    found, todo = [], [ROOT]
    while todo:
        folder = todo.pop()
        found.append(folder)
        todo += [d for d in folder.iterdir() if d.is_dir() and d.name not in NOT_THE_PACKAGE
                 and not _ignored("", [d.name]) and (d / "__init__.py").exists()]
    return found


def expected_files() -> set[str]:
    """What the wheel must hold, as `kgprobe/...` paths: every module (setup.py aside) and every
    file in a package's data folders (a folder inside a package without an __init__.py)."""
    out = set()
    packages = _package_dirs()
    for package in packages:
        for path in package.iterdir():
            if path.is_file() and path.suffix == ".py" and path != ROOT / "setup.py":
                out.add(path)
            elif package != ROOT and path.is_file() and path.suffix != ".pyc":
                out.add(path)  # data beside a sub-package's modules
            elif package != ROOT and path.is_dir() and path not in packages and not _ignored("", [path.name]):
                out |= {p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return {"kgprobe/" + p.relative_to(ROOT).as_posix() for p in out}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src" / "kgprobe"
    shutil.copytree(ROOT, source, ignore=_ignored)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "--no-index", "-q", "-w", str(tmp / "dist"), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (built,) = (tmp / "dist").glob("kgprobe-*.whl")
    return built


def test_the_wheel_holds_every_module_study_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    studies = {f"kgprobe/{p.relative_to(ROOT).as_posix()}" for p in ROOT.glob("studies/*/cli.py")}
    assert len(studies) >= 6 and studies <= names, sorted(studies - names)
    expected = expected_files()
    assert "kgprobe/ontology/data/class.json" in expected  # the walk does find the data folders
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"


def test_the_wheel_holds_nothing_outside_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {n for n in names if not n.startswith("kgprobe-")}  # less the .dist-info
    assert package == expected_files(), sorted(package ^ expected_files())
    stray = [n for n in names if n.split("/")[1:2] and n.split("/")[1] in NOT_THE_PACKAGE]
    assert not stray and "kgprobe/setup.py" not in names and "kgprobe/pyproject.toml" not in names


def test_the_unpacked_wheel_registers_every_study(wheel, tmp_path):
    """The registry, run from the wheel alone, finds every study the source tree has."""
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = ("import json, kgprobe\nfrom kgprobe.studies.registry import studies\n"
            "print(json.dumps({'from': kgprobe.__file__,\n"
            "                  'modules': sorted(type(s).__module__ for s in studies().values())}))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["from"].startswith(str(tmp_path / "site"))
    packages = {f"kgprobe.studies.{p.parent.name}" for p in ROOT.glob("studies/*/cli.py")}
    registered = {m for m in found["modules"] if m.rsplit(".", 1)[0] in packages}
    assert {m.rsplit(".", 1)[0] for m in registered} == packages, found["modules"]
