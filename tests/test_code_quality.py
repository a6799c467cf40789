"""Two rules of the code's shape (issue 24), checked so they stay true.

* No function is more than 15 cyclomatic complexity (ruff's C901, `[tool.ruff.lint.mccabe]` in
  pyproject.toml): past that a function is several decisions in one body and is better read as
  named helpers. A genuinely flat dispatch may stay, if its docstring has a line starting
  "Complexity:" that says why.
* No module uses another module's private names (`from .x import _y`, `x._y`): a leading
  underscore says "only this module relies on it", so a name another module needs is made
  public where it is defined, or moved to where it is used.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not the package: tests may reach into privates; bench/ and crosscheck/ are measuring scripts.
OUTSIDE = ("tests/", "bench/", "crosscheck/", ".")
ESCAPE = "Complexity:"


def _ours(rel: str) -> bool:
    return not rel.startswith(OUTSIDE)


def _package_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if _ours(p.relative_to(ROOT).as_posix()))


def _ruff_findings() -> list[dict]:
    # The excludes are given again on the command line, so a finding outside the package never
    # reaches the parsing below; ruff reads max-complexity from pyproject.toml.
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "C901",
         "--output-format", "json", "--exit-zero",
         "--extend-exclude", "tests,bench,crosscheck,.venv*", "."],
        cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _function_at(path: Path, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line:
            return node
    raise AssertionError(f"{path}:{line}: ruff names a function ast does not find")


def _explained(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    doc = ast.get_docstring(node) or ""
    return any(line.strip().startswith(ESCAPE) for line in doc.splitlines())


def test_ruff_reads_the_complexity_limit_from_pyproject():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"] == 15


def test_no_function_over_complexity_15_without_a_reason():
    findings = _ruff_findings()
    unexplained, explained = [], []
    for f in findings:
        path = Path(f["filename"])
        rel = path.relative_to(ROOT).as_posix()
        if not _ours(rel):
            continue
        line = f["location"]["row"]
        where = f"{rel}:{line}: {f['message']}"
        (explained if _explained(_function_at(path, line)) else unexplained).append(where)
    assert not unexplained, "split these or say why in a 'Complexity:' line:\n" + "\n".join(unexplained)
    # The escape is for a few flat dispatches, not a way around the rule.
    assert len(explained) <= 5, explained


def test_the_complexity_check_sees_a_complex_function(tmp_path):
    """The rule above passes vacuously if ruff finds nothing at all; it must find this, and
    the escape must take a "Complexity:" line only."""
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(20))
    (tmp_path / "deep.py").write_text(f"def deep(x):\n{branches}\n    return -1\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "C901",
                          "--output-format", "json", "--exit-zero", "."],
                         cwd=tmp_path, capture_output=True, text=True)
    found = json.loads(run.stdout)
    assert [f["code"] for f in found] == ["C901"], run.stdout + run.stderr
    node = _function_at(tmp_path / "deep.py", found[0]["location"]["row"])
    assert node.name == "deep" and not _explained(node)
    said = ast.parse('def f():\n    """Flat.\n\n    Complexity: one branch per rule."""\n')
    mentioned = ast.parse('def f():\n    """Its complexity: high."""\n')
    assert _explained(said.body[0]) and not _explained(mentioned.body[0])


# --- private names across modules ------------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["kgprobe", *parts])


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a `from … import` reads from."""
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _kgprobe_modules() -> set[str]:
    names = set()
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT).as_posix()
        if not rel.startswith((".", "tests/")):
            names.add(_module_name(p))
    return names


def private_uses(path: Path, modules: set[str]) -> list[str]:
    """Each private name `path` takes from another kgprobe module, as `line: what`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    aliases: dict[str, str] = {}  # a local name bound to a kgprobe module → that module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    aliases[a.asname] = a.name
                elif a.name in modules:  # `import kgprobe.x.y` binds `kgprobe`
                    aliases[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(path, node)
            if not source.startswith("kgprobe") or source == here:
                continue
            for a in node.names:
                if _private(a.name):
                    found.append(f"{node.lineno}: from {source} import {a.name}")
                elif f"{source}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{source}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = _dotted(node.value)
            if owner is None:
                continue
            head, _, rest = owner.partition(".")
            if head in aliases:
                module = ".".join(filter(None, [aliases[head], rest]))
                if module in modules and module != here:
                    found.append(f"{node.lineno}: {owner}.{node.attr}")
    return found


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def test_no_private_name_is_used_across_modules():
    modules = _kgprobe_modules()
    uses = [f"{p.relative_to(ROOT).as_posix()}:{use}"
            for p in _package_files() for use in private_uses(p, modules)]
    assert not uses, "\n".join(uses)


def test_the_private_name_check_sees_each_form(tmp_path, monkeypatch):
    """Each form the rule forbids is found, and what it allows is not."""
    probe = ROOT / "kg" / "probe_for_test.py"
    code = ("from kgprobe.kg.meta import _X\n"
            "from .meta import __all__, public\n"
            "from . import meta\n"
            "import kgprobe.kg.store as store\n"
            "import kgprobe.ontology.model\n"
            "meta._y\nstore._z\nkgprobe.ontology.model._w\nself._fine\nmeta.__doc__\n")
    modules = {"kgprobe", "kgprobe.kg", "kgprobe.kg.meta", "kgprobe.kg.store",
               "kgprobe.ontology", "kgprobe.ontology.model", "kgprobe.kg.probe_for_test"}
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: code)
    found = private_uses(probe, modules)
    assert found == ["1: from kgprobe.kg.meta import _X", "6: meta._y", "7: store._z",
                     "8: kgprobe.ontology.model._w"], found
