"""One request stream per study, for multiple choice, consistency, COPEN and STA: what a run
asks its model is what its dry run writes to ``prompts.jsonl``, line for line.

Each test runs a study through the command line with a recording model — a tiny model of
tests/conftest.py, loaded through the normal ``--model`` path, whose methods the study calls
(ranking scorers, option letters, text-part log-probabilities, features, slot distributions)
note what they are asked before the real model answers — and compares that with the dry run
of the same settings.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.studies.dry_run import PROMPTS_FILE


def _sibling(name: str):
    """A test module beside this one (pytest runs with --import-mode=importlib: no sys.path)."""
    spec = importlib.util.spec_from_file_location(f"_stream_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recording:
    """A scorer (ranking or slot distribution) that notes what it is asked, then lets the real
    one answer."""

    def __init__(self, inner, asked: list, kind: str):
        self._inner, self._asked, self._kind = inner, asked, kind

    def score(self, prompts, *args, **kwargs):
        cands = tuple(args[0]) if args else None
        self._asked.extend((self._kind, p, cands) for p in prompts)
        return self._inner.score(prompts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.fixture
def recording(monkeypatch):
    """(method, what was asked, its candidates or options) for every call of a loaded model's
    scorers, letter scores, next-token rows, text-part scores and features, in order; the
    study loads its model as always (`models.loading.load_model`), unaware of the recording."""
    import kgprobe.models.loading as loading

    real, asked = loading.load_model, []

    def load_model(*args, **kwargs):
        loaded = real(*args, **kwargs)
        scorer, slots = loaded.scorer, loaded.slot_distribution
        letters, rows = loaded.letter_scores, loaded.next_token_logits
        segments, features = loaded.score_segments, loaded.features
        loaded.scorer = lambda *a, **k: Recording(scorer(*a, **k), asked, "score")
        loaded.slot_distribution = lambda *a, **k: Recording(slots(*a, **k), asked, "slots")

        def letter_scores(questions, options, **k):
            asked.extend(("letters", q, tuple(o)) for q, o in zip(questions, options))
            return letters(questions, options, **k)

        def next_token_logits(batch):
            asked.extend(("row", list(r), None) for r in batch)
            return rows(batch)

        def score_segments(prompts, parts, spans=None):
            asked.extend(("segments", "".join(s.text for s in p), tuple(parts)) for p in prompts)
            return segments(prompts, parts, spans)

        def features_of(prompts, pooling=None, spans=None):
            asked.extend(("features", "".join(s.text for s in p), None) for p in prompts)
            return features(prompts, pooling, spans)

        loaded.letter_scores, loaded.next_token_logits = letter_scores, next_token_logits
        loaded.score_segments, loaded.features = score_segments, features_of
        return loaded

    monkeypatch.setattr(loading, "load_model", load_model)
    return asked


def run_and_dry(tmp_path: Path, study: str, model: str, *args: str) -> tuple[list[dict], Path]:
    """The dry run's prompts and the run's folder, both of `study` with `args`."""
    dry, run = tmp_path / "dry", tmp_path / "run"
    assert main(["study", study, *args, "--dry-run", "--out", str(dry)]) == 0
    assert main(["study", study, *args, "--model", model, "--threads", "1", "--out", str(run)]) == 0
    rows = [json.loads(line) for line in (dry / PROMPTS_FILE).read_text().splitlines()]
    assert rows
    return rows, run


def of_kind(asked: list, kind: str) -> list:
    return [(what, extra) for k, what, extra in asked if k == kind]


# --------------------------------------------------------------------------- multiple choice

def test_multiple_choice_letters_are_asked_after_the_dry_runs_text(tmp_path, tiny_llama_dir,
                                                                    recording):
    """Letter answers: the model reads exactly the dry run's text (its tokens are the ones the
    next letter is scored after) and chooses among as many letters, the gold among them."""
    from transformers import AutoTokenizer

    prompts, _ = run_and_dry(tmp_path, "multiple-choice", str(tiny_llama_dir), "--controls", "none", "--task",
                             "type,rdfs9-12", "--limit", "2", "--chat", "off")
    letters, rows = of_kind(recording, "letters"), of_kind(recording, "row")
    assert len(letters) == len(rows) == len(prompts) == 4
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    for (question, options), (row, _), line in zip(letters, rows, prompts):
        assert line["text"].startswith(question)
        assert row == tok(line["text"], add_special_tokens=True)["input_ids"]
        assert len(options) == line["n_candidates"] and line["golds"][0] in options


def test_multiple_choice_option_texts_are_the_dry_runs(tmp_path, tiny_bert_dir, recording):
    """Text answers: each question's cloze prompt and its options' texts, the gold's among them."""
    data = tmp_path / "short"  # questions short enough for the tiny BERT's 64 positions
    (data / "reasoning").mkdir(parents=True)
    questions = [{"prompt": "X is a cat. What is X? (a) dog, (b) animal, (c) car", "gold": "(b) animal"},
                 {"prompt": "What is Paris? (a) a city, (b) a river, (c) a sport", "gold": "(a) a city"},
                 {"prompt": "What is Y? (a) work, (b) place", "gold": "(b) place"}]
    (data / "reasoning" / "rdfs9-22.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    prompts, _ = run_and_dry(tmp_path, "multiple-choice", str(tiny_bert_dir), "--controls", "none", "--answer", "text",
                             "--data", str(data), "--limit", "2")
    asked = of_kind(recording, "score")
    assert [text for text, _ in asked] == [r["text"] for r in prompts]
    assert len(prompts) == 2
    for (_, cands), line in zip(asked, prompts):
        assert len(cands) == line["n_candidates"] and line["golds"][0] in cands


# --------------------------------------------------------------------------- consistency

@pytest.mark.parametrize("candidates", ["all", "3"])
def test_consistency_scores_what_its_dry_run_writes(tmp_path, tiny_bert_dir, recording,
                                                    candidates):
    zoo = tmp_path / "zoo.ttl"
    zoo.write_text(_sibling("test_consistency").TTL)
    prompts, _ = run_and_dry(tmp_path, "consistency", str(tiny_bert_dir), "--ontology", str(zoo),
                             "--candidates", candidates, "--no-cache")
    asked = of_kind(recording, "score")
    # the model's own stream first, as the dry run writes it; then the controls' (its
    # content-free prior, frequency, copy, random: `studies.consistency.controls`), which ask
    # the same prompts (the prior's inner model their content-free forms)
    texts = [r["text"] for r in prompts]
    assert [text for text, _ in asked[:len(prompts)]] == texts
    for (_, cands), line in zip(asked, prompts):
        assert len(cands) == line["n_candidates"] and set(line["golds"]) <= set(cands)
    from kgprobe.models.prior import content_free

    later = {text for text, _ in asked[len(prompts):]}
    assert later and later <= set(texts) | {content_free(t) for t in texts}


# --------------------------------------------------------------------------- COPEN

@pytest.mark.parametrize("method", ["zero-shot", "linear"])
def test_copen_scores_what_its_dry_run_writes(tmp_path, tiny_bert_dir, recording, method):
    """Zero-shot: every choice prompt the text parts are scored on; linear probing: every
    prompt whose features are read (train, dev, test, CiC's out-of-context twins), in order."""
    data = _sibling("test_copen").official_fixture(tmp_path / "copen")
    args = ["--data", str(data), "--method", method, "--limit", "2"]
    if method == "linear":
        args += ["--train-limit", "4", "--seeds", "1", "--epochs", "1"]
    prompts, _ = run_and_dry(tmp_path, "copen", str(tiny_bert_dir), *args)
    kind = "segments" if method == "zero-shot" else "features"
    asked = of_kind(recording, kind)
    assert [text for text, _ in asked] == [r["text"] for r in prompts]
    assert {r["task"] for r in prompts} == {"csj", "cpj", "cic"}
    if method == "zero-shot":
        assert all(list(parts) == r["extra"]["parts"] for (_, parts), r in zip(asked, prompts))
    else:
        assert any(r["extra"].get("context") is False for r in prompts)


# --------------------------------------------------------------------------- STA

def test_sta_asks_what_its_dry_run_writes(tmp_path, tiny_bert_dir, recording):
    """Every retrieval and elicitation prompt of the run, in the run's order, is the dry run's
    (the dry run has no model to drop targets outside its vocabulary: the tiny model knows
    every word of this test's)."""
    sta = _sibling("test_sta")
    norms = tmp_path / "mcrae"
    norms.mkdir()
    lines = [sta.HEADER] + [f"{c}\t{f}\tx\t{label}\t{pf}\t{ph}" for c, f, label, pf, ph in sta.ROWS]
    (norms / "CONCS_FEATS_concstats_brm.txt").write_text("\n".join(lines) + "\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(w for w in sta.VOCAB if w.islower()) + "\n")
    prompts, _ = run_and_dry(tmp_path, "sta", str(tiny_bert_dir), "--norms", str(norms),
                             "--vocab-file", str(vocab), "--conditions", "top-dec,random",
                             "--limit", "2", "--elicitation-limit", "2")
    asked = of_kind(recording, "slots")
    assert [text for text, _ in asked] == [r["text"] for r in prompts]
    assert {r["task"] for r in prompts} == {"retrieval", "elicitation"}
