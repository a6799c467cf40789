"""Issue 26, "a newcomer's first hour": what a first user meets is one line naming the input
and the fix (exit 2), fast, never a traceback, nothing written; help on every option."""

from __future__ import annotations

import re

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgprobe.cli import main

REPO = Path(__file__).resolve().parents[1]


def kgprobe(*argv: str, env: dict | None = None, timeout: float = 120):
    """`python -m kgprobe.cli ARGV` as a user runs it: (exit status, stdout, stderr)."""
    full = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "kgprobe.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, env=full)
    return proc.returncode, proc.stdout, proc.stderr


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("kgprobe: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("store") / "s"
    assert main(["kg", "load", "--default", "--reason", "--store", str(path)]) == 0
    return path


# ------------------------------------------------------------------ 1. slow or misleading errors


def test_unknown_model_fails_fast_with_the_presets_and_a_suggestion(tmp_path):
    start = time.perf_counter()
    status, _, err = kgprobe("study", "memorization", "--model", "smollm2-13m",
                             "--out", str(tmp_path / "run"), "--limit", "2")
    took = time.perf_counter() - start
    line = one_line_error(err)
    assert status == 2
    assert "smollm2-135m" in line and "gemma3-270m" in line
    assert "did you mean 'smollm2-135m'" in line
    assert "Retrying" not in err
    assert took < 5, took  # the hub's retries took 30 s; the interpreter's start is ~1 s
    assert not (tmp_path / "run").exists()


def test_a_cached_hub_id_is_kept_and_an_uncached_one_refused_offline(tmp_path):
    cache = tmp_path / "hub"
    snap = cache / "models--someone--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (cache / "models--someone--tiny" / "refs").mkdir()
    (cache / "models--someone--tiny" / "refs" / "main").write_text("0" * 40)
    code = ("from kgprobe.models.names import check_model_name as c\n"
            "c('someone/tiny')\n"
            "try:\n    c('someone/tinny')\nexcept Exception as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"},
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "unknown model 'someone/tinny'" in out.stdout and "HF_HUB_OFFLINE" in out.stdout


def test_preset_names_match_the_presets():
    from kgprobe.models.gguf import PRESETS
    from kgprobe.models.names import PRESET_NAMES

    assert sorted(PRESETS) == sorted(PRESET_NAMES)


@pytest.mark.parametrize("query,expected", [
    ("SELEC ?s WHERE { ?s ?p ?o }", "not a SPARQL query: it starts with 'SELEC'"),
    ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "SPARQL update (INSERT), and this command only "
                                                "reads"),
    ("SELECT ?s WHERE { ?s foo:bar ?o }", "unknown prefix 'foo:'"),
])
def test_query_errors_say_what_is_wrong(store, capsys, query, expected):
    assert main(["kg", "query", "--store", str(store), query]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert expected in line
    assert "expected CONSTRUCT" not in line
    if "prefix" in expected:
        assert "rdfs:" in line and "\\u{" not in line


def test_a_declared_prefix_and_prefixes_in_strings_are_not_unknown(store, capsys):
    query = ("PREFIX foo: <http://x/> SELECT ?s WHERE { ?s foo:bar ?o . "
             "?s rdfs:label 'a:b'@en . ?s ?p <http://a:1/x> }")
    assert main(["kg", "query", "--store", str(store), query]) == 0


@pytest.mark.parametrize("bind", ["7879", ":7879", "localhost:http"])
def test_serve_bind_takes_host_and_port(store, capsys, bind):
    assert main(["kg", "serve", "--bind", bind, "--store", str(store)]) == 2
    assert "takes HOST:PORT" in one_line_error(capsys.readouterr().err)


def test_stale_store_messages_name_options_that_exist(tmp_path, capsys):
    path = tmp_path / "s"
    assert main(["kg", "load", "--default", "--reason", "--store", str(path)]) == 0
    extra = tmp_path / "extra.ttl"
    extra.write_text("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                     "<urn:x:A> rdfs:subClassOf <urn:x:B> .\n<urn:x:B> rdfs:subClassOf <urn:x:C> .\n")
    assert main(["kg", "load", str(extra), "--store", str(path)]) == 0
    capsys.readouterr()
    assert main(["kg", "stats", "--store", str(path)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "kgprobe reason" in line and "--reason" not in line
    # generate reasoning refuses the stale store as generate memorizing does ...
    for kind in ("memorizing", "reasoning"):
        out = tmp_path / kind
        assert main(["generate", kind, "--store", str(path), "--out", str(out)]) == 2
        assert "(or pass --reason)" in one_line_error(capsys.readouterr().err)
        assert not out.exists()
    # ... and takes --reason (and --wait) like it
    out = tmp_path / "items"
    assert main(["generate", "reasoning", "--store", str(path), "--out", str(out), "--reason",
                 "--wait", "--rules", "rdfs9"]) == 0
    assert (out / "rdfs9.jsonl").stat().st_size > 0


# ------------------------------------------------------------------ 2. silent success on nonsense


@pytest.mark.parametrize("text", ["", "# only a comment\n@prefix ex: <urn:x:> .\n"])
def test_an_empty_source_is_refused(tmp_path, capsys, text):
    empty = tmp_path / "empty.ttl"
    empty.write_text(text)
    store = tmp_path / "s"
    assert main(["kg", "load", str(empty), "--store", str(store)]) == 2
    assert "holds no RDF statements" in one_line_error(capsys.readouterr().err)
    assert not store.exists()


def test_generate_refuses_a_store_without_sources(tmp_path, capsys):
    store = tmp_path / "s"
    assert main(["kg", "load", "--default", "--store", str(store)]) == 0
    assert main(["kg", "remove", "ontoprobe", "--store", str(store)]) == 0
    capsys.readouterr()
    out = tmp_path / "probes"
    assert main(["generate", "memorizing", "--store", str(store), "--out", str(out)]) == 2
    assert "holds no sources" in one_line_error(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("argv", [
    ["study", "memorization", "--model", "frequency", "--limit", "3"],
    ["study", "memorization", "--dry-run", "--limit", "3"],
    ["study", "premise-ablation", "--dry-run", "--limit", "2"],
])
def test_more_candidates_than_there_are_is_refused(tmp_path, capsys, argv):
    out = tmp_path / "run"
    assert main([*argv, "--candidates", "100000", "--out", str(out)]) == 2
    line = one_line_error(capsys.readouterr().err)
    # the bundled ontology's class pool (784 distinct labels as prompts word them)
    found = re.search(r"only (\d+) candidates to rank; give K ≤ \1\b", line)
    assert found and int(found.group(1)) > 700, line
    assert not out.exists()


def test_a_k_within_the_pool_still_runs(tmp_path):
    out = tmp_path / "run"
    assert main(["study", "premise-ablation", "--dry-run", "--limit", "2", "--candidates", "20",
                 "--out", str(out)]) == 0
    assert (out / "prompts.jsonl").stat().st_size > 0


# ------------------------------------------------------------------ 3. tracebacks


def test_outputs_are_checked_before_any_work(tmp_path, capsys):
    store = tmp_path / "s"
    assert main(["kg", "load", "--default", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["kg", "export", "--out", str(tmp_path), "--store", str(store)]) == 2
    assert "takes a file name" in one_line_error(capsys.readouterr().err)
    assert main(["reason", "--provenance", str(tmp_path), "--store", str(store)]) == 2
    assert "--provenance" in one_line_error(capsys.readouterr().err)
    assert main(["kg", "stats", "--store", str(store)]) == 0  # nothing was committed
    assert "urn:kgprobe:inferred" not in capsys.readouterr().out
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    assert main(["study", "memorization", "--model", "frequency", "--limit", "2",
                 "--out", str(a_file)]) == 2
    assert "takes a folder" in one_line_error(capsys.readouterr().err)
    assert a_file.read_text() == "mine"
    assert main(["kg", "export", "--out", str(a_file / "x.ttl"), "--store", str(store)]) == 2
    assert "is a file, not a folder" in one_line_error(capsys.readouterr().err)
    assert main(["kg", "export", "--out", str(tmp_path / "new" / "x.ttl"), "--store",
                 str(store)]) == 0
    assert (tmp_path / "new" / "x.ttl").stat().st_size > 0


def test_kg_export_to_a_folder_is_one_line_as_a_user_runs_it(tmp_path):
    status, _, err = kgprobe("kg", "export", "--out", str(tmp_path), "--store",
                             str(tmp_path / "none"))
    assert status == 2 and "takes a file name" in one_line_error(err)


# ------------------------------------------------------------------ 4. help


#: Options of files another engineer owns at the time of writing (studies/copen); remove the
#: entries once they have help.
WITHOUT_HELP_YET = {("study copen", "--method"), ("study copen", "--out")}


def all_options():
    import argparse

    from kgprobe.cli import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk(child, [*path, name])
            else:
                yield " ".join(path), action

    return list(walk(build_parser(), []))


def test_every_option_has_help():
    import argparse

    options = all_options()
    assert len(options) > 150  # every subcommand was walked
    missing = {(cmd, (a.option_strings or [a.dest])[0]) for cmd, a in options
               if not a.help and a.help != argparse.SUPPRESS}
    assert missing <= WITHOUT_HELP_YET, sorted(missing - WITHOUT_HELP_YET)


def test_help_shows_defaults_and_every_kg_command(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("(default: smollm2-135m)", "(default: 6)", "(default: 5)",
                  "(default: out/premise-ablation)"):
        assert shown in text
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    from kgprobe.cli import build_parser

    kg_parser = next(a for a in build_parser()._actions if a.dest == "command").choices["kg"]
    kg_commands = next(a for a in kg_parser._actions if a.dest == "kg_command").choices
    assert "remove" in kg_commands
    assert "the knowledge graph: " + ", ".join(kg_commands) in text


def test_version():
    status, out, err = kgprobe("--version")
    assert status == 0, err
    assert out.strip().startswith("kgprobe ") and out.strip().split()[1][0].isdigit()


def test_one_spelling_shown_the_old_one_still_read(capsys):
    from kgprobe.cli import build_parser

    parser = build_parser()
    old = parser.parse_args(["export", "lm-eval", "--out", "x", "--tasks", "reasoning"])
    new = parser.parse_args(["export", "lm-eval", "--out", "x", "--studies", "reasoning"])
    plain = parser.parse_args(["export", "lm-eval", "--out", "x"])
    assert old.tasks == new.tasks == "reasoning" and plain.tasks == "memorizing,reasoning"
    with pytest.raises(SystemExit):
        main(["export", "lm-eval", "--help"])
    text = capsys.readouterr().out
    assert "--studies" in text and "--tasks" not in text
    args = parser.parse_args(["study", "memorization", "--out", "x", "--templates", "1"])
    assert args.template == "1"
    assert parser.parse_args(["study", "memorization", "--out", "x"]).template == "all"


def test_a_refused_k_leaves_a_new_run_folder_as_it_was(tmp_path, tiny_gpt2_dir, capsys):
    """premise-ablation pins its settings before it reads the ontology: a K found too large
    there must not leave a config.json that refuses the corrected rerun."""
    out = tmp_path / "run"
    argv = ["study", "premise-ablation", "--model", str(tiny_gpt2_dir), "--rules", "rdfs9",
            "--limit", "1", "--templates", "manual", "--out", str(out)]
    assert main([*argv, "--candidates", "100000"]) == 2
    assert re.search(r"only \d{3} candidates", one_line_error(capsys.readouterr().err))
    assert not out.exists()


@pytest.mark.parametrize("answer,refused", [("missing", True), ("gated", False),
                                            ("found", False), ("unreachable", True)])
def test_an_uncached_hub_id_is_looked_up_once(monkeypatch, answer, refused):
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    from kgprobe.errors import ModelError
    from kgprobe.models import names

    class Response:
        headers: dict = {}
        status_code = 404
        request = None

    def model_info(name, timeout):
        assert timeout <= names.HUB_TIMEOUT
        if answer == "missing":
            raise RepositoryNotFoundError("404", response=Response())
        if answer == "gated":
            raise GatedRepoError("403", response=Response())
        if answer == "unreachable":
            raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "model_info", model_info)
    monkeypatch.setattr(names, "_cached", lambda name: False)
    monkeypatch.setattr(names, "_offline", lambda: False)
    if refused:
        with pytest.raises(ModelError, match="unknown model 'someone/model'"):
            names.check_model_name("someone/model")
    else:
        names.check_model_name("someone/model")
