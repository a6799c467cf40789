"""Every benchmark script still runs: `--help`, then a tiny run whose JSON line has its keys.

Nothing else runs bench/, so a refactor that moves a name a script imports breaks it silently
(bench/study.py once failed at its first import). Each script found by globbing bench/*.py
needs an entry in `TINY` (its tiny arguments); a new script without one fails here with a
message saying to add it. The scripts run as users run them (`python bench/x.py`, subprocesses
with this interpreter and environment), all at once in a thread pool: most of their time is
imports and model loading, which two cores share well.

Placeholders in the arguments: ``{tmp}`` (a folder of the script's own), ``{gpt2}`` (the tiny
GPT-2 of tests/conftest.py), ``{repo}`` (the checkout).
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

HAS_REASONABLE = importlib.util.find_spec("reasonable") is not None

#: script → its tiny arguments (one run), or a list of runs made in order (the last one's JSON
#: line is checked), or a function of the script's folder that prepares inputs and returns them.
TINY: dict = {
    "behaviour_check.py": [
        ["run", "--cli", "python -m kgprobe.cli", "--out", "{tmp}/out", "--only", "dry-memorizing"],
        ["compare", "{tmp}/out", "{tmp}/out"]],
    "backends.py": ["--model", "{gpt2}", "--served", "none", "--task", "type", "--limit", "2",
                    "--candidates", "3"],
    "bundled_wording.py": [],  # the bundled ontology read twice: about 10 s
    "chains.py": ["--depths", "5,10", "--anchor-depths", "6,8"],
    "claim_power.py": ["--q", "100", "--heuristics", "copy", "--limit", "2",
                       "--out", "{tmp}/claims"],
    "compare_coverage.py": ["--reps", "3", "--resamples", "20"],
    "config_trace.py": [["premise-ablation", "--dry-run", "--ontology", "bundled", "--rules",
                         "rdfs9", "--limit", "2", "--out", "{tmp}/pa"],
                        ["memorization", "--dry-run", "--ontology", "bundled", "--task", "domain",
                         "--limit", "2", "--out", "{tmp}/memorization"]],
    "copen_generation.py": ["--repeat", "1", "--source", "{repo}/tests/data/ontologies/wine.ttl"],
    "load.py": [["--obo", "{repo}/tests/data/formats/zoo.obo"], ["--triples", "2000"]],
    "paper_agreement.py": lambda tmp: _agreement_inputs(tmp) + ["--json"],
    "paper_official_prompts.py": lambda tmp: [str(_official_checkout(tmp)), str(tmp / "off.jsonl")],
    "startup.py": ["--repeat", "1"],
    "sign_flip.py": ["--items", "20", "--resamples", "500", "--repeat", "1"],
    "rdfs_closure.py": ["--sizes", "1k"] + ([] if HAS_REASONABLE else ["--skip-reasonable"]),
    "scoring.py": ["--model", "{gpt2}", "--prompts", "1", "--naive-requests", "2", "--matmul-size", "64",
                   "--reference-requests", "1", "--suffix-prompts", "1", "--suffix-naive-requests", "2",
                   "--threads", "1"],
    "two_way_coverage.py": ["--reps", "3", "--items", "6", "--pairs", "3", "--resamples", "20"],
    "gpu.py": lambda tmp: ["run", "--models", "{gpt2}", "--device", "cpu", "--prompts-all", "1",
                           "--prompts-k", "2", "--k", "3", "--pairs", "1", "--matmul-size", "64",
                           "--agreement-prompts", "2", "--source", str(write_zoo(tmp))],
    "study.py": lambda tmp: ["--models", "{gpt2}", "--prompts-all", "1", "--prompts-k", "2", "--k", "3",
                             "--pairs", "1", "--matmul-size", "64", "--source", str(write_zoo(tmp))],
}
#: Helper modules of another script, run through it (and checked in its JSON line).
MODULES = {"scoring_suffix.py": "scoring.py"}
#: Scripts another script starts as a process (checked by `test_llama_echo_sorts_like_sorted`
#: here and by tests/test_served_model.py, whose server it starts).
STARTED_BY = {"llama_echo.py": "backends.py"}
#: The keys each script's JSON line must have (a script not listed: any JSON object).
KEYS = {
    "backends.py": {"bench", "probes", "export_mismatches", "pairs", "metrics", "tolerance"},
    "behaviour_check.py": {"bench", "mode", "identical", "files", "differences"},
    "bundled_wording.py": {"labels", "candidate pools (before, after)", "reasoning items"},
    "claim_power.py": {"bench", "power", "false_claims", "false_claim_rate"},
    "compare_coverage.py": {"bench", "reps", "accuracy", "mrr", "mrr_skewed"},
    "config_trace.py": {"study", "exit", "places", "returns", "functions", "modules"},
    "copen_generation.py": {"bench", "reasoned_s", "unreasoned_s", "closure_model_s", "items", "same_items"},
    "gpu.py": {"bench", "device", "models", "matmul_tflops", "paper_scale"},
    "load.py": {"bench", "triples", "kgprobe_load_s", "kgprobe_peak_mb", "rdflib_parse_s", "speedup"},
    "paper_agreement.py": {"bench", "groups"},
    "paper_official_prompts.py": {"bench", "prompts", "groups", "out"},
    "rdfs_closure.py": {"bench", "engines", "closure_triples", "kgprobe_s", "owlrl_s", "reasonable_s", "agree"},
    "sign_flip.py": {"bench", "resamples", "cases", "same_p"},
    "scoring.py": {"bench", "kgprobe", "naive", "lm_eval", "max_abs_diff", "flops", "suffix_case"},
    "study.py": {"bench", "paper_scale", "models", "matmul_flops"},
    "startup.py": {"bench", "help", "kg_load", "kg_load_empty_tag_cache", "reason", "import_torch", "cpu_ratio_to_import_torch"},
    "two_way_coverage.py": {"bench", "reps", "two_way", "one_way", "pigeonhole"},
}
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py"))

# The authors' data.py, reduced to the interface bench/paper_official_prompts.py drives: one
# example per memorizing task and per reasoning rule (their templates as OpenPrompt writes them).
FAKE_DATA_PY = '''
from openprompt.data_utils import InputExample


class DatasetLoader:
    def __init__(self, task, labels, pattern, *rest):
        self.task, self.labels, self.pattern = task, labels, pattern

    def load_data(self):
        if self.task.endswith("-22"):
            example = InputExample(meta={"1": "dog is a mammal .", "2": "rex is a dog .", "h": "rex"})
            template = '{"meta": "1"} {"meta": "2"} {"meta": "h"}' + self.pattern + ' {"mask"} .'
            return [example], [[self.labels["mammal"]]], None, template
        return [InputExample(text_a="rex" + self.pattern, text_b=".")], [[self.labels["dog"]]], None, None
'''


def _official_checkout(tmp: Path) -> Path:
    repo = tmp / "checkout"
    (repo / "data" / "memorizing").mkdir(parents=True)
    (repo / "data.py").write_text(FAKE_DATA_PY, encoding="utf-8")
    for task in ("type", "subClassOf", "subPropertyOf", "domain", "range"):  # 20 training records + 1
        (repo / "data" / "memorizing" / f"{task}.jsonl").write_text("{}\n" * 21, encoding="utf-8")
    return repo


def _agreement_inputs(tmp: Path) -> list[str]:
    official = [{"group": "type", "template": 0, "index": 0, "text": "rex is a [MASK] .", "golds": ["dog"]},
                {"group": "type", "template": 0, "index": 1, "text": "tom is a [MASK] .", "golds": ["cat"]}]
    ours = [{"study": "memorization", "task": "type", "template": 0, "extra": {"record": 20},
             "text": "rex  is a [MASK] .", "golds": ["dog"]},
            {"study": "memorization", "task": "type", "template": 0, "extra": {"record": 21},
             "text": "tom is an [MASK] .", "golds": ["cat"]}]
    for name, rows in (("official.jsonl", official), ("prompts.jsonl", ours)):
        (tmp / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [str(tmp / "official.jsonl"), str(tmp / "prompts.jsonl")]


def _runs(script: str, tmp: Path, places: dict) -> list[list[str]]:
    spec = TINY[script]
    spec = spec(tmp) if callable(spec) else spec
    runs = spec if spec and isinstance(spec[0], list) else [spec]
    return [[a.format(**places) for a in run] for run in runs]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def results(tmp_path_factory, tiny_gpt2_dir) -> dict:
    """script → (the --help run, the tiny runs), every script started at once."""
    def one(script: str):
        tmp = tmp_path_factory.mktemp(script.removesuffix(".py"))
        places = {"tmp": str(tmp), "gpt2": str(tiny_gpt2_dir), "repo": str(ROOT)}
        helped = _run([str(BENCH / script), "--help"], ROOT)
        done = []
        for argv in _runs(script, tmp, places):
            done.append(_run([str(BENCH / script), *argv], ROOT))
            if done[-1].returncode:
                break
        return helped, done

    runnable = [s for s in SCRIPTS if s in TINY]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(runnable, pool.map(one, runnable)))


def _json_line(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, f"rc {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON line on stdout:\n{run.stdout[-2000:]}"
    return json.loads(lines[-1])


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_runs_at_a_tiny_size(script, request):
    if script in STARTED_BY:
        assert f'"{script}"' in (BENCH / STARTED_BY[script]).read_text(encoding="utf-8")
        return
    assert script in TINY or script in MODULES, (
        f"bench/{script} has no tiny arguments: add them to TINY in tests/test_bench_smoke.py "
        f"(and its JSON line's keys to KEYS)")
    results = request.getfixturevalue("results")  # after the check: it runs every script
    if script in MODULES:
        user = MODULES[script]
        assert f"from {script.removesuffix('.py')} import" in (BENCH / user).read_text(encoding="utf-8")
        assert "suffix_case" in _json_line(results[user][1][-1])  # what it computes came back
        return
    helped, runs = results[script]
    assert helped.returncode == 0 and "usage:" in helped.stdout, helped.stderr[-2000:]
    for run in runs[:-1]:
        _json_line(run)
    line = _json_line(runs[-1])
    assert isinstance(line, dict) and line
    missing = KEYS.get(script, set()) - set(line)
    assert not missing, f"bench/{script}: its JSON line lacks {sorted(missing)}: {line}"


def test_what_the_tiny_runs_measured(results):
    """The tiny runs measured something real: the engines agreed, both contenders ran, the
    comparisons counted what differs."""
    closure = _json_line(results["rdfs_closure.py"][1][-1])
    assert closure["agree"] is True and closure["owlrl_s"] is not None
    assert (closure["reasonable_s"] is not None) == HAS_REASONABLE  # ran exactly when installed
    scoring = _json_line(results["scoring.py"][1][-1])
    assert scoring["lm_eval"] is not None, scoring.get("lm_eval_reason")  # lm-eval is in the test extra
    assert scoring["max_abs_diff"]["kgprobe_vs_lm_eval"] <= 1e-4
    agreement = _json_line(results["paper_agreement.py"][1][-1])
    assert agreement["groups"] == [{"group": "type", "template": 0, "official": 2, "same_text": 1,
                                    "same_golds": 2}]
    official = _json_line(results["paper_official_prompts.py"][1][-1])
    assert official["prompts"] == 9 + 6  # one per memorizing task × template (9) and per rule (6)
    pa, memorization = (_json_line(run) for run in results["config_trace.py"][1])
    for trace, study, places in ((pa, "premise_ablation", 20), (memorization, "memorization", 12)):
        assert trace["exit"] == 0 and f"studies/{study}/plan.py" in trace["modules"], trace
        assert trace["places"] <= places and trace["returns"] <= 15, trace
    check = _json_line(results["behaviour_check.py"][1][-1])
    assert check["identical"] is True and check["files"] > 0
    obo = _json_line(results["load.py"][1][0])  # --obo: the three commands and the anchor ran
    assert obo["terms"] == 2 and isinstance(obo["within_targets"], bool)
    assert all(obo[k]["cpu_s"] > 0 for k in ("load_reason", "memorizing", "reasoning",
                                             "fastobo_rdflib", "load_to_generate"))


def test_llama_echo_sorts_like_sorted():
    """bench/llama_echo.py's stand-in for ``sorted`` in llama_cpp's echo: the first `top`
    pairs of Python's order, ties at the cut and equal values included, for an array row and
    a list; anything else (no `top`, a key, short lists, NaN) exactly the built-in."""
    import numpy as np

    spec = importlib.util.spec_from_file_location("llama_echo", BENCH / "llama_echo.py")
    echo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(echo)
    rng = np.random.default_rng(0)
    row = rng.standard_normal(5000).astype(np.float32)
    row[rng.integers(0, 5000, 300)] = row.max()  # ties at the top
    row[rng.integers(0, 5000, 300)] = np.sort(row)[-40]  # ties at a cut
    for values in (row, row.tolist()):
        for top in (0, 1, 5, 40, 41, 400, 6000):
            want = sorted(zip(values, range(len(values))), reverse=True)[:top]
            got = echo.fast_sorted(zip(values, range(len(values))), reverse=True, top=top)
            assert got == want and [type(v) for v, _ in got] == [type(v) for v, _ in want], top
    assert echo.fast_sorted(zip(row, range(len(row))), reverse=True) == sorted(
        zip(row, range(len(row))), reverse=True)  # no request's logprobs known: all of them
    with_nan = row.copy()
    with_nan[3] = np.nan
    assert len(echo.fast_sorted(zip(with_nan, range(5000)), reverse=True, top=5)) == 5
    assert echo.fast_sorted([3, 1, 2]) == [1, 2, 3]
    assert echo.fast_sorted(zip([3, 1], range(2)), reverse=True, top=1) == [(3, 0)]


@pytest.mark.slow
def test_llama_echo_answers_what_llama_cpp_answers(tmp_path):
    """On SmolLM2's GGUF in llama.cpp: the echo answers (tokens, offsets, log-probabilities,
    top log-probabilities) with `fast_sorted` equal the unpatched ones (`time` mode)."""
    run = _run([str(BENCH / "llama_echo.py"), "time", "--requests", "1"], tmp_path)
    line = _json_line(run)
    assert line["same_answers"] is True and line["tokens"] > 10, line
    assert line["builtin_cpu_s"] > 0 and line["fast_cpu_s"] > 0


def test_rdfs_closure_without_reasonable_says_how_to_run(tmp_path):
    """Asked for `reasonable` where it is missing, the bench stops with one line naming both
    ways on (installing it, --skip-reasonable), not a worker's traceback."""
    if HAS_REASONABLE:
        run = _run([str(BENCH / "rdfs_closure.py"), "--help"], ROOT)
        assert "--skip-reasonable" in run.stdout
        return
    run = _run([str(BENCH / "rdfs_closure.py"), "--sizes", "1k"], tmp_path)
    assert run.returncode == 2 and "--skip-reasonable" in run.stderr and "Traceback" not in run.stderr
