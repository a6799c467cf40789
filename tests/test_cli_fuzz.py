"""Wrong input to every command ends in one line and exit 2, never a traceback or a silent run.

The real parser is walked (`kgprobe.cli.build_parser`), so a command added without cases here
fails `test_every_command_is_fuzzed`. Each command gets a base command line that is valid and
cheap (studies with `--dry-run`, a store loaded once), and each case changes one thing: a
missing path, a folder where a file is expected, a file where a folder is, a negative, zero or
non-integer number, an unknown name. The error must be one line (`kgprobe: error: …`, or
argparse's own `usage:` + `… error: …`) that names the option or the value it refused.
Commands run in-process; one that accepts its wrong input and starts working is stopped by an
alarm and reported.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kgprobe.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
MCRAE = REPO.parent / "shared" / "data" / "mcrae"
ALARM_S = 60
#: an error line: ours (`kgprobe: error:`, `kg check`'s `kgprobe: damaged:`) or argparse's
ERROR = re.compile(r"kgprobe( [\w-]+)*: (error|damaged): ")

#: Placeholders in the base command lines, filled in by the `world` fixture.
STORE, COPY, OUT, NEW, TTL, FILE, DIR, MISSING = ("{store}", "{copy}", "{out}", "{new}",
                                                   "{ttl}", "{file}", "{dir}", "{missing}")

#: One valid, cheap command line per command (`probe …` are `study …` under their old names).
BASE: dict[str, list[str]] = {
    "kg load": [TTL, "--store", NEW],
    "kg remove": ["ontoprobe", "--store", COPY],
    "kg query": ["ASK { ?s ?p ?o }", "--store", STORE],
    "kg stats": ["--store", STORE],
    "kg export": ["--store", STORE, "--out", OUT + "/all.ttl"],
    "kg tour": ["--store", NEW],
    "kg serve": ["--store", STORE, "--bind", "127.0.0.1:0"],
    "kg pull": ["--endpoint", "http://127.0.0.1:9/sparql", "--store", NEW, "--retries", "0",
                "--timeout", "1"],
    "kg check": ["--store", STORE],
    "reason": ["--store", COPY],
    "generate memorizing": ["--store", STORE, "--out", OUT],
    "generate reasoning": ["--store", STORE, "--out", OUT, "--rules", "rdfs9"],
    "study premise-ablation": ["--dry-run", "--rules", "rdfs9", "--limit", "1", "--out", OUT],
    "study memorization": ["--dry-run", "--task", "domain", "--limit", "1", "--out", OUT],
    "study multiple-choice": ["--dry-run", "--limit", "1", "--out", OUT],
    "study copen": ["--method", "zero-shot", "--dry-run", "--from-kg", "--norms", str(MCRAE),
                    "--store", STORE, "--limit", "2", "--out", OUT],
    "study sta": ["--norms", str(MCRAE), "--dry-run", "--limit", "1", "--out", OUT],
    "study consistency": ["--dry-run", "--rules", "rdfs9", "--limit", "1", "--out", OUT],
    "probe memorizing": ["--dry-run", "--task", "domain", "--limit", "1", "--out", OUT],
    "probe multiple-choice": ["--dry-run", "--limit", "1", "--out", OUT],
    "report": [],
    "demo": ["--out", OUT],
    "export lm-eval": ["--studies", "memorizing", "--task", "domain", "--limit", "1",
                       "--out", OUT],
    "import lm-eval": ["--out", OUT],
    "compare": ["--out", OUT],
    "review sample": [DIR, "--out", OUT + "/sheet.tsv"],
    "review read": [FILE, "--probes", DIR],
    "cache stats": [],
    "cache clear": [],
}

# Each case: (command, the arguments that replace or join the base's, what the line names).
CASES: list[tuple[str, list[str], str]] = []


def case(command: str, *args: str, names: str | None = None) -> None:
    CASES.append((command, list(args), names or args[0]))


def numbers(command: str, option: str, *bad: str) -> None:
    for value in bad:
        case(command, option, value, names=option)


STUDIES = ("study premise-ablation", "study memorization", "study multiple-choice",
           "study copen", "study sta", "study consistency", "probe memorizing",
           "probe multiple-choice")

# paths
case("kg load", MISSING + "/none.ttl", names="none.ttl")
case("kg load", DIR, names=DIR)
case("kg load", "--exclusions", MISSING + "/x.toml", names="x.toml")
case("kg load", "--exclusions", DIR, names=DIR)
case("kg load", "--store", FILE, names=FILE)
case("kg stats", "--store", MISSING, names=MISSING)
case("kg stats", "--store", FILE, names=FILE)
case("kg query", "--store", MISSING, names=MISSING)
case("kg query", "@" + MISSING + "/q.rq", names="q.rq")
case("kg export", "--out", DIR, names="--out")
case("kg export", "--out", FILE + "/x.ttl", names="--out")
case("kg check", "--store", MISSING, names=MISSING)
case("kg check", "--store", FILE, names=FILE)
case("kg remove", "--store", MISSING, names=MISSING)
case("kg serve", "--store", MISSING, names=MISSING)
case("reason", "--provenance", DIR, names="--provenance")
case("reason", "--store", MISSING, names=MISSING)
case("kg tour", "--store", FILE, names=FILE)
for command in ("generate memorizing", "generate reasoning"):
    case(command, "--out", FILE, names="--out")
    case(command, "--store", MISSING, names=MISSING)
    case(command, "--exclusions", MISSING + "/x.toml", names="x.toml")
case("generate reasoning", "--templates", MISSING + "/t.toml", names="t.toml")
case("generate reasoning", "--templates", DIR, names=DIR)
for command in STUDIES:
    case(command, "--out", FILE, names="--out")
case("study premise-ablation", "--ontology", MISSING + "/o.ttl", names="o.ttl")
case("study premise-ablation", "--ontology", DIR, names=DIR)
case("study memorization", "--probes", MISSING, names=MISSING)
case("study memorization", "--probes", FILE, names=FILE)
case("study multiple-choice", "--data", MISSING, names=MISSING)
case("study multiple-choice", "--data", FILE, names=FILE)
case("study copen", "--norms", MISSING, names=MISSING)
case("study copen", "--norms", FILE, names=FILE)
case("study copen", "--hparams", MISSING + "/h.json", names="h.json")
case("study sta", "--norms", MISSING, names=MISSING)
case("study sta", "--vocab-file", MISSING + "/v.txt", names="v.txt")
case("study sta", "--compare", MISSING, DIR, names=MISSING)
case("report", MISSING, names=MISSING)
case("report", FILE, names=FILE)
case("report", DIR, names=DIR)
case("demo", "--out", FILE, names="--out")
case("export lm-eval", "--out", FILE, names="--out")
case("export lm-eval", "--probes", MISSING, names=MISSING)
case("import lm-eval", MISSING, names=MISSING)
case("import lm-eval", FILE, names=FILE)
case("import lm-eval", DIR, names=DIR)
case("import lm-eval", DIR, "--out", FILE, names="--out")
case("compare", MISSING, DIR, names=MISSING)
case("compare", FILE, FILE, names=FILE)
case("compare", DIR, names="at least two run folders")
case("review sample", MISSING, names=MISSING)
case("review sample", FILE, names=FILE)
case("review sample", DIR, "--out", DIR, names="--out")
case("review read", MISSING + "/s.tsv", names="s.tsv")
case("review read", DIR, names=DIR)
case("review read", FILE, "--probes", MISSING, names=MISSING)

# numbers
for command in ("kg query", "kg stats", "kg export"):
    numbers(command, "--retries", "-1", "two")
    numbers(command, "--timeout", "0", "-3", "soon")
    numbers(command, "--page-size", "0", "-5")
numbers("kg serve", "--query-timeout", "0", "-1")
numbers("kg pull", "--instances", "0", "-1", "many")
numbers("kg pull", "--pool", "0", "-2")
numbers("kg pull", "--seed", "-1", "x")
for command in ("generate memorizing", "generate reasoning"):
    numbers(command, "--page-size", "0")
numbers("generate memorizing", "--seed", "-1", "1.5")
numbers("generate memorizing", "--instances-per-class", "0", "-2")
numbers("generate memorizing", "--split-sizes", "-1,10", "10", "a,b")
for command in ("study premise-ablation", "study memorization", "study multiple-choice",
                "study sta"):
    numbers(command, "--limit", "-1", "ten")
    numbers(command, "--threads", "0", "-1")
    numbers(command, "--batch-size", "0", "-8")
for command in ("study premise-ablation", "study memorization"):
    numbers(command, "--seed", "-1")
    numbers(command, "--candidates", "0", "1", "-5", "some")
numbers("study premise-ablation", "--pairs", "0", "-1")
numbers("study premise-ablation", "--fraction", "-0.5", "1.5")
numbers("study premise-ablation", "--memorized-sample", "1", "-3", "x")
numbers("study premise-ablation", "--controls", "gpt2", "none,copy", "")
numbers("study premise-ablation", "--resamples", "0", "-1")
numbers("study premise-ablation", "--min-items", "-1")
numbers("study premise-ablation", "--soft-epochs", "-1")
numbers("study premise-ablation", "--depth", "0", "-1", "7", "1,x")
numbers("study premise-ablation", "--distractors", "-1", "21", "two")
numbers("study copen", "--limit", "-1", "csj=-2", "csj=x", "xyz=3")
numbers("study copen", "--epochs", "0", "-1")
numbers("study copen", "--threads", "0")
numbers("study copen", "--seed", "-1")
numbers("study sta", "--elicitation-limit", "-1")
numbers("study sta", "--random-sets", "-1")
numbers("study sta", "--random-permutations", "-1")
numbers("study sta", "--seed", "-1")
numbers("probe memorizing", "--limit", "-1")
numbers("probe multiple-choice", "--limit", "-1")
numbers("demo", "--limit", "-1")
numbers("demo", "--pairs", "0")
numbers("demo", "--threads", "0")
numbers("demo", "--soft-epochs", "-1")
numbers("demo", "--candidates", "0", "-5")
numbers("export lm-eval", "--limit", "-1")
numbers("export lm-eval", "--seed", "-1")
numbers("export lm-eval", "--candidates", "0", "-5")
numbers("compare", "--resamples", "0", "-1")
numbers("study consistency", "--limit", "-1", "x")
numbers("study consistency", "--believe-at", "0", "-1")
numbers("study consistency", "--seed", "-1")
numbers("compare", "--seed", "-1")
numbers("review sample", "--size", "0", "-1", "some")
numbers("review sample", "--seed", "-1")
for command in ("kg load", "kg stats", "reason", "generate memorizing"):
    numbers(command, "--max-memory", "lots", "-1G")

# names
for command in ("study premise-ablation", "study memorization", "study multiple-choice",
                "study sta", "demo"):
    case(command, "--model", "smollm2-13m", names="smollm2-13m")
case("study copen", "--model", "smollm2-13m", names="smollm2-13m")
case("reason", "--rules", "rdfs99", names="rdfs99")
case("generate reasoning", "--rules", "rdfs99", names="rdfs99")
case("study premise-ablation", "--rules", "rdfs99", names="rdfs99")
case("study consistency", "--rules", "rdfs99", names="rdfs99")
case("study consistency", "--ontology", MISSING + "/o.ttl", names="o.ttl")
case("study consistency", "--model", "smollm2-13m", names="smollm2-13m")
case("export lm-eval", "--rules", "rdfs99", names="rdfs99")
case("study memorization", "--task", "colour", names="colour")
case("study memorization", "--template", "7", names="7")
case("study multiple-choice", "--task", "colour", names="colour")
case("study copen", "--task", "xyz", names="xyz")
case("study premise-ablation", "--templates", "handmade", names="handmade")
case("export lm-eval", "--task", "colour", names="colour")
case("export lm-eval", "--studies", "colour", names="colour")
case("kg load", "--lang", "", names="--lang")
case("kg export", "--graph", "nosuchgraph", names="nosuchgraph")
case("kg remove", "nosuchgraph", names="nosuchgraph")
case("kg query", "--format", "turtle", names="turtle")
case("kg serve", "--bind", "127.0.0.1:99999", names="99999")
case("kg pull", "--endpoint", "not a url", names="not a url")
case("study premise-ablation", "--device", "tpu", names="tpu")
case("study memorization", "--device", "tpu", names="tpu")

#: Commands with positional arguments: a case's positional replaces the base's.
POSITIONAL = {"kg load", "kg query", "kg remove", "report", "import lm-eval", "compare",
              "review sample", "review read"}


def leaf_commands() -> list[str]:
    """Every command the parser knows, by the words that name it ("kg load", "demo")."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found.append(" ".join(path))
        for action in subs:
            for name, child in action.choices.items():
                walk(child, [*path, name])

    walk(build_parser(), [])
    return found


def split(words: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Positionals, and each option with its values."""
    positionals, options, current = [], {}, None
    for word in words:
        if word.startswith("--"):
            current = word
            options[current] = []
        elif current is None:
            positionals.append(word)
        else:
            options[current].append(word)
    return positionals, options


def argv_for(command: str, args: list[str]) -> list[str]:
    """The base command line with `args` applied: an option the case gives replaces the
    base's, and so do its positional arguments."""
    base_pos, base_opts = split(BASE[command])
    pos, opts = split(args)
    if command not in POSITIONAL:
        assert not pos, (command, args)
    merged = {**base_opts, **opts}
    if "--model" in opts:  # a dry run does not look at the model
        merged.pop("--dry-run", None)
    return [*command.split(), *(pos or base_pos),
            *[w for option, values in merged.items() for w in (option, *values)]]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    store = root / "store"
    assert main(["kg", "load", "--default", "--reason", "--store", str(store)]) == 0
    (root / "a-file").write_text("not what you think")
    (root / "a-dir").mkdir()
    (root / "tiny.ttl").write_text("<urn:x:a> <urn:x:p> <urn:x:b> .\n")
    return {"root": root, "store": store}


class Ran(Exception):
    """The command accepted its wrong input and went on working."""


def fill(argv: list[str], world: dict[str, Path], tmp: Path) -> list[str]:
    copy = tmp / "copy"
    if any(COPY in w for w in argv):
        shutil.copytree(world["store"], copy)
    values = {STORE: world["store"], COPY: copy, OUT: tmp / "out", NEW: tmp / "new-store",
              TTL: world["root"] / "tiny.ttl", FILE: world["root"] / "a-file",
              DIR: world["root"] / "a-dir", MISSING: tmp / "missing"}
    filled = []
    for word in argv:
        for key, value in values.items():
            word = word.replace(key, str(value))
        filled.append(word)
    return filled


def run_in_process(argv: list[str], capsys, guard: bool) -> tuple[int, str]:
    def stop(signum, frame):
        raise Ran(f"still running after {ALARM_S} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(ALARM_S)
    try:
        status = main(argv, guard=guard)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return status, capsys.readouterr().err


def test_every_command_is_fuzzed():
    commands = leaf_commands()
    assert len(commands) >= 20
    assert sorted(BASE) == sorted(commands)
    fuzzed = {command for command, _, _ in CASES}
    without = sorted(set(commands) - fuzzed - set(ENV_CASES))
    assert not without, without


#: Commands whose only input is the environment: a file where the score cache's folder goes.
ENV_CASES = {"cache stats": "KGPROBE_CACHE_DIR", "cache clear": "KGPROBE_CACHE"}


@pytest.mark.parametrize("command", sorted(ENV_CASES))
def test_a_file_as_the_score_cache_folder_is_one_line(world, capsys, monkeypatch, command):
    monkeypatch.delenv("KGPROBE_CACHE_DIR", raising=False)
    a_file = world["root"] / "a-file"
    monkeypatch.setenv(ENV_CASES[command], str(a_file))
    status, err = run_in_process(command.split(), capsys, guard=False)
    assert status == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and ENV_CASES[command] in err, err
    assert a_file.read_text() == "not what you think"


@pytest.mark.parametrize("command,args,names", CASES,
                         ids=[f"{c}|{' '.join(a)}" for c, a, _ in CASES])
def test_wrong_input_is_one_line_and_exit_2(world, tmp_path, capsys, command, args, names):
    argv = fill(argv_for(command, args), world, tmp_path)
    needle = fill([names], world, tmp_path)[0]
    if command == "kg serve":  # a server that accepted its input would not return
        proc = subprocess.run([sys.executable, "-m", "kgprobe.cli", *argv], capture_output=True,
                              text=True, timeout=ALARM_S)
        status, err = proc.returncode, proc.stderr
    else:
        status, err = run_in_process(argv, capsys, guard="--max-memory" in args)
    assert "Traceback" not in err, err
    assert status == 2, (status, err)
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR.match(line)]
    assert len(errors) == 1, err
    others = [line for line in lines if line not in errors and not line.startswith("kgprobe: warning:")]
    usage = others and others[0].startswith("usage:")
    assert not others or usage, err  # one line, or argparse's usage + its one error line
    assert needle in errors[0] or Path(needle).name in errors[0], (needle, errors[0])
