"""Issue 45: every file a study writes goes through the no-follow atomic writer, and a dry run
keeps out of another study's finished run.

Figures were saved with ``fig.savefig(path)``, which opens `path` itself: a symlink planted at
``OUT/summary.png`` (or ``heatmap_rdfs9.png``, ``depth.png``, ``consistency.png``) had the
figure written into whatever it pointed to. And ``--dry-run`` of one study into the folder of
another study's finished run overwrote that run's ``prompts.jsonl``. Each test is the attack,
then what must hold now.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import kgprobe
from kgprobe.cli import main

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
PRECIOUS = b"precious\n"


def plant(out: Path, names: list[str], victim: Path) -> None:
    """A symlink at each of `names` in `out`, all pointing to `victim`."""
    out.mkdir(parents=True, exist_ok=True)
    victim.write_bytes(PRECIOUS)
    for name in names:
        (out / name).unlink(missing_ok=True)
        (out / name).symlink_to(victim)


def assert_replaced(out: Path, names: list[str], victim: Path) -> None:
    """The victim keeps its bytes; each figure is a PNG file of its own in `out`."""
    assert victim.read_bytes() == PRECIOUS
    for name in names:
        path = out / name
        assert not path.is_symlink() and path.is_file(), name
        assert path.read_bytes()[:8] == PNG, name


def test_save_figure_replaces_a_planted_symlink_and_keeps_its_target(tmp_path):
    """The one way kgprobe saves a figure (`atomic.save_figure`) never writes through a link."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kgprobe.atomic import save_figure

    victim = tmp_path / "victim"
    plant(tmp_path / "out", ["figure.png"], victim)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert save_figure(fig, tmp_path / "out" / "figure.png", dpi=50) == tmp_path / "out" / "figure.png"
    plt.close(fig)
    assert_replaced(tmp_path / "out", ["figure.png"], victim)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["figure.png"]  # no .part left


def test_premise_ablation_figures_never_follow_a_planted_symlink(tmp_path):
    """``summary.png``, ``heatmap_rdfs9.png`` and ``depth.png`` planted as symlinks to a
    victim before a run, and again before ``kgprobe report``: the victim kept its bytes
    only after the fix (the original wrote the PNG into it)."""
    out, victim = tmp_path / "run", tmp_path / "victim.txt"
    figures = ["summary.png", "heatmap_rdfs9.png", "depth.png"]
    plant(out, figures, victim)
    assert main(["study", "premise-ablation", "--model", "random",
                 "--ontology", str(write_zoo(tmp_path)), "--rules", "rdfs9",
                 "--templates", "manual", "--limit", "2", "--pairs", "1", "--candidates", "5",
                 "--depth", "1,2", "--controls", "none", "--resamples", "1000", "--threads", "1",
                 "--out", str(out)]) == 0
    assert_replaced(out, figures, victim)
    plant(out, figures, victim)  # `kgprobe report` draws them again
    assert main(["report", str(out)]) == 0
    assert_replaced(out, figures, victim)


def test_the_consistency_figure_never_follows_a_planted_symlink(tmp_path):
    out, victim = tmp_path / "run", tmp_path / "victim.txt"
    plant(out, ["consistency.png"], victim)
    assert main(["study", "consistency", "--model", "random",
                 "--ontology", str(write_zoo(tmp_path)), "--limit", "2", "--candidates", "5",
                 "--threads", "1", "--out", str(out)]) == 0
    assert_replaced(out, ["consistency.png"], victim)


# ------------------------------------------------------------------ no write bypasses atomic.py

#: Methods that write a file named by their argument (or the object they are called on).
WRITE_METHODS = {"savefig", "write_text", "write_bytes", "to_csv", "to_parquet",
                 "save_pretrained", "savez", "savez_compressed", "savetxt"}
#: ``torch.save`` / ``np.save`` / ``pickle.dump``: a write when called on these modules.
SAVING_MODULES = {"torch", "np", "numpy", "joblib", "pickle"}

#: Where a direct write is right, and why: none of them writes a file a user named.
EXEMPT = {
    ("cli/outcome.py", "quiet_broken_pipe"): "opens os.devnull",
    ("deadline.py", "_child"): "re-opens stdout's own descriptor",
    ("kg/formats.py", "write_answer"): "writes to a stream its caller passes",
    ("kg/formats.py", "write_graph"): "writes to a stream, or to the temporary file of the "
                                      "caller's atomic_path (cli/kg.py)",
    ("models/gguf.py", "_convert_gguf"): "fills a private mkdtemp folder, published by rename",
    ("ontology/formats.py", "_owlapi_run"): "the OWL API's input in a TemporaryDirectory",
    ("reasoning/owl.py", "write_ntriples"): "HermiT's input in a private temporary folder",
    ("reasoning/owl.py", "run"): "HermiT's output in a private temporary folder",
}
#: Not part of what a kgprobe command writes: the tests, the developer benchmarks, and the
#: cross-check that runs in its own environment without kgprobe.
NOT_SCANNED = {"tests", "bench", "crosscheck"}


def _mode(call: ast.Call, position: int) -> str:
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return str(call.args[position].value)
    return next((str(k.value.value) for k in call.keywords
                 if k.arg == "mode" and isinstance(k.value, ast.Constant)), "r")


def _writes(call: ast.Call) -> bool:
    """Does `call` open or write a file by its name, outside kgprobe.atomic?"""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "open" and bool(set("wax+") & set(_mode(call, 1)))
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner == "atomic":
        return False
    if func.attr in WRITE_METHODS or (func.attr in ("save", "dump") and owner in SAVING_MODULES):
        return True
    if func.attr == "open" and owner == "os":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return any(f in flags for f in ("O_WRONLY", "O_RDWR", "O_CREAT")) and "O_NOFOLLOW" not in flags
    if func.attr == "open" and owner not in ("gzip", "zipfile", "tarfile", "self"):
        return bool(set("wax+") & set(_mode(call, 0)))  # Path.open("w")
    return func.attr == "serialize" and len(call.args) >= 2  # pyoxigraph's, to a file


def _inside_atomic_path(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any(
        isinstance(item.context_expr, ast.Call)
        and ast.unparse(item.context_expr.func).split(".")[-1] == "atomic_path"
        for item in node.items)


def direct_writes(root: Path) -> list[str]:
    """``file:line function: call`` for each write in the package at `root` that is neither
    in atomic.py, nor inside a ``with atomic_path(...)`` block, nor in `EXEMPT`."""
    found: list[str] = []

    def walk(node: ast.AST, rel: str, function: str, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            name, inside = function, guarded
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name, inside = child.name, False
            inside = inside or _inside_atomic_path(child)
            if (isinstance(child, ast.Call) and not inside and _writes(child)
                    and (rel, name) not in EXEMPT):
                found.append(f"{rel}:{child.lineno} {name}: {ast.unparse(child)[:70]}")
            walk(child, rel, name, inside)

    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        top = rel.split("/")[0]
        if top in NOT_SCANNED or top.startswith(".") or rel == "atomic.py":  # .venv*, .git
            continue
        walk(ast.parse(path.read_text(encoding="utf-8")), rel, "<module>", False)
    return found


def test_no_file_is_written_around_the_atomic_writer():
    """A grep with eyes: every ``savefig``, ``open(..., "w")``, ``Path.write_text``,
    ``torch.save``… in the package goes through `kgprobe.atomic` (the original had six
    ``fig.savefig(path)``)."""
    assert direct_writes(Path(kgprobe.__file__).parent) == []


def test_the_scan_finds_a_direct_figure_write(tmp_path):
    """The scan above can fail: a ``fig.savefig(path)`` outside atomic_path is found, the
    same call inside one is not."""
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "bad.py").write_text(
        "def draw(fig, out):\n    fig.savefig(out / 'a.png')\n"
        "    with open(out / 'b.txt', 'w') as fh:\n        fh.write('x')\n"
        "def fine(fig, out):\n    with atomic_path(out) as tmp:\n        fig.savefig(tmp)\n",
        encoding="utf-8")
    found = direct_writes(tmp_path)
    assert [f.split(" ")[0] for f in found] == ["studies/bad.py:2", "studies/bad.py:3"]


# ------------------------------------------------------------------ dry runs


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_dry_run_into_another_studys_finished_run_is_refused(tmp_path, capsys):
    """A memorization run (its dry run's prompts.jsonl beside it), then a consistency
    ``--dry-run`` into its folder: the original overwrote prompts.jsonl and exited 0; now it
    is one line naming the folder and the run it holds, exit 2, every file unchanged. A dry
    run of the run's own study still writes its prompts there."""
    out = tmp_path / "run"
    memo = ["study", "memorization", "--task", "subClassOf", "--limit", "5", "--out", str(out)]
    assert main([*memo, "--dry-run"]) == 0
    assert main([*memo, "--model", "random", "--threads", "1"]) == 0
    before = _files(out)
    assert "prompts.jsonl" in before and "results.csv" in before
    capsys.readouterr()
    assert main(["study", "consistency", "--dry-run", "--ontology", str(write_zoo(tmp_path)),
                 "--limit", "2", "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and str(out) in err[0] and "memorization run" in err[0], err
    assert "Traceback" not in err[0]
    assert _files(out) == before
    # the run's own study: its prompts again, beside its results
    assert main([*memo, "--dry-run"]) == 0
    assert _files(out) == before


@pytest.mark.parametrize("config", ['{"study": "memorization", "dry_run": true}', None])
def test_a_dry_run_may_replace_a_dry_run_and_fill_an_empty_folder(tmp_path, config):
    """What stays free: a folder only another study's dry run wrote (its record is replaced
    as a run replaces it), and a folder without results or settings."""
    out = tmp_path / "run"
    out.mkdir()
    if config is not None:
        (out / "config.json").write_text(config, encoding="utf-8")
        (out / "prompts.jsonl").write_text("{}\n", encoding="utf-8")
    assert main(["study", "consistency", "--dry-run", "--ontology", str(write_zoo(tmp_path)),
                 "--limit", "2", "--out", str(out)]) == 0
    assert (out / "prompts.jsonl").read_text(encoding="utf-8") != "{}\n"


@pytest.mark.parametrize("config, results", [
    ('{"study": "memorization", "model": "random"}', False),  # pinned, before its first unit
    (None, True),  # results whose config.json is gone: the study is unknown
])
def test_a_dry_run_refuses_a_run_it_cannot_tell_is_its_own(tmp_path, capsys, config, results):
    out = tmp_path / "run"
    out.mkdir()
    if config is not None:
        (out / "config.json").write_text(config, encoding="utf-8")
    if results:
        (out / "results.csv").write_text("cell,MRR\nall,0.5\n", encoding="utf-8")
    before = _files(out)
    assert main(["study", "consistency", "--dry-run", "--ontology", str(write_zoo(tmp_path)),
                 "--limit", "2", "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and str(out) in err[0] and "--out" in err[0], err
    assert _files(out) == before
