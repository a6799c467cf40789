"""kgprobe against OpenPrompt 1.0.1 itself: the bundled templates rendered, tokenized and scored.

crosscheck/openprompt_check.py runs in .venv-openprompt (OpenPrompt 1.0.1, transformers 4.39.3;
`make crosscheck` builds it, `make test` too), builds a tiny random BERT and GPT-2 from a fixed
seed, saves them, and writes what OpenPrompt makes of every manual and soft template. Here kgprobe
loads the same saved models and must agree: the same sentence, the same token ids (soft positions
and the mask where OpenPrompt puts them) and the same log-probabilities (to 1e-4).

Two differences are OpenPrompt's and are asserted as such, so a change on either side shows:
its MixedTemplate forgets the space before a ``{"soft"}`` part (vectors, so no token changes),
and its LM tokenizer wrapper drops ``{"soft"}`` parts altogether (their text is empty), so with
GPT-2 a soft template is scored by OpenPrompt without its soft vectors; kgprobe is compared with
the same prompt without them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from kgprobe.models.loading import load_model
from kgprobe.ontology.verbalize import load_templates

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv-openprompt" / "bin" / "python"
pytestmark = pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no .venv-openprompt: run "
                                "`make crosscheck` (`make test` builds it first)")
TOL = 1e-4


@pytest.fixture(scope="module")
def openprompt(tmp_path_factory):
    out = tmp_path_factory.mktemp("openprompt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of kgprobe's
    run = subprocess.run([str(VENV_PYTHON), str(ROOT / "crosscheck" / "openprompt_check.py"),
                          "--templates", str(ROOT / "ontology" / "templates.toml"),
                          "--out", str(out)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    data = json.loads((out / "openprompt.json").read_text(encoding="utf-8"))
    models = {name: load_model(str(out / name), local_files_only=True) for name in ("bert", "gpt2")}
    return data, models


def _spaced_soft(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\s*\[SOFT\]\s*", " [SOFT] ", text)).strip()


def _template(case: dict):
    rel = load_templates()[case["relation"]]
    tmpl = (rel.manual if case["kind"] == "manual" else rel.soft)[case["index"]]
    assert tmpl.source == case["template"]
    return tmpl


def _prompt(case: dict, drop_soft: bool = False) -> tuple[str, dict]:
    """kgprobe's prompt of the case and its soft vectors (named slots)."""
    tmpl = _template(case)
    vectors = {} if drop_soft else {f"<soft{i}>": torch.tensor(v)
                                    for i, v in enumerate(case["soft_vectors"])}
    soft = "" if drop_soft or not vectors else list(vectors)
    return tmpl.render(case["text_a"], case["text_b"], case["meta"], soft=soft), vectors


def test_the_pinned_openprompt_ran_over_every_bundled_template(openprompt):
    data, _ = openprompt
    assert data["versions"]["openprompt"] == "1.0.1"
    assert data["versions"]["transformers"] == "4.39.3"
    templates = load_templates()
    want = {(rel, kind, i) for rel, spec in templates.relations.items()
            for kind in ("manual", "soft") for i in range(len(getattr(spec, kind)))}
    for model in ("bert", "gpt2"):
        got = {(c["relation"], c["kind"], c["index"]) for c in data["cases"] if c["model"] == model}
        assert got == want
    kinds = {(c["kind"], bool(c["meta"]), bool(c["text_b"])) for c in data["cases"]}
    assert {("manual", True, False), ("soft", False, False), ("manual", False, True)} <= kinds


def test_the_rendered_text_is_openprompts(openprompt):
    data, _ = openprompt
    for case in data["cases"]:
        ours = _template(case).render(case["text_a"], case["text_b"], case["meta"])
        assert _spaced_soft(ours) == _spaced_soft(case["rendered"]), case["template"]


def _check_ids(ours: list[int], slots: list[int], case: dict) -> None:
    theirs = case["input_ids"]
    assert len(ours) == len(theirs) and slots == case["soft_positions"], case["template"]
    assert [t for i, t in enumerate(ours) if i not in slots] == \
        [t for i, t in enumerate(theirs) if i not in slots], case["template"]


def _check_scores(scores: np.ndarray, case: dict) -> None:
    assert np.max(np.abs(scores - np.array(case["logprobs"]))) <= TOL, case["template"]
    normalized = scores - np.logaddexp.reduce(scores)  # OpenPrompt: log-softmax over the words
    assert np.max(np.abs(normalized - np.array(case["label_logprobs"]))) <= TOL


def test_bert_token_ids_and_log_probabilities_match(openprompt):
    data, models = openprompt
    scorer = models["bert"].scorer(masks="multi")
    cases = [c for c in data["cases"] if c["model"] == "bert"]
    assert any(c["soft_positions"] for c in cases)
    for case in cases:
        prompt, vectors = _prompt(case)
        ids, masks, slots = scorer.build(prompt, 1, vectors)
        _check_ids(ids, [p for p, _ in slots], case)
        assert masks == case["mask_position"]
        for cand, cid in zip(case["candidates"], case["candidate_ids"]):
            assert scorer.encoder.encode_candidate(cand, "space") == [cid]
        _check_scores(scorer.score([prompt], case["candidates"], pseudowords=vectors or None)[0],
                      case)


def test_gpt2_token_ids_and_log_probabilities_match(openprompt):
    data, models = openprompt
    # OpenPrompt reads the distribution at the slot only: the prefix-only term of the score
    scorer = models["gpt2"].scorer(pooling="sum", include_suffix=False)
    for case in (c for c in data["cases"] if c["model"] == "gpt2"):
        drop = case["kind"] == "soft"
        if drop:  # OpenPrompt's LM wrapper skips the empty text of soft parts (see above)
            assert case["soft_positions"] == []
        prompt, vectors = _prompt(case, drop_soft=drop)
        prefix, cands, _ = scorer.encode(prompt, case["candidates"], vectors or None)
        _check_ids(prefix.ids, [p for p, _ in prefix.slots], case)
        assert case["mask_position"] == [len(prefix.ids) - 1]  # the logits that predict the slot
        assert cands == [[cid] for cid in case["candidate_ids"]]
        _check_scores(scorer.score([prompt], case["candidates"], pseudowords=vectors or None)[0],
                      case)
