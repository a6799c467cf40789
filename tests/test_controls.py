"""The two controls that read prompts: ``copy`` (named candidates first) and ``prior:MODEL``
(the model asked with the content removed). Hand-made prompts, tiny models built here."""

from __future__ import annotations

import csv
import json

import kgprobe
import numpy as np
import pytest
from kgprobe.errors import ModelError
from kgprobe.models.baselines import CopyModel, mention
from kgprobe.models.registry import BASELINES
from kgprobe.models.loading import load_model
from kgprobe.models.names import check_model_name
from kgprobe.models.prior import CONTENT_FREE, PriorModel, content_free


def _order(model, prompt: str, cands: list[str]) -> list[str]:
    row = model.scorer().score([prompt], cands)[0]
    return [cands[i] for i in np.argsort(-row, kind="stable")]


# ------------------------------------------------------------------------------ copy


def test_copy_ranks_named_candidates_first_earlier_before_later_then_by_frequency():
    copy = load_model("copy", seed=0).trained_on([["place"], ["work"], ["work"]])
    assert isinstance(copy, CopyModel) and "copy" in BASELINES
    cands = ["thing", "place", "mammal", "dog", "work", "event"]
    prompt = "[X] is a dog . Dog is a mammal . Therefore , [X] is a particular [MASK] ."
    order = _order(copy, prompt, cands)
    # dog named before mammal; then the unnamed by training count (work 2, place 1), then the rest
    assert order[:4] == ["dog", "mammal", "work", "place"]
    assert set(order[4:]) == {"thing", "event"}
    # a prompt naming nothing ranks exactly as frequency does
    freq = load_model("frequency", seed=0).trained_on([["place"], ["work"], ["work"]])
    assert _order(copy, "[X] is a [MASK] .", cands) == _order(freq, "[X] is a [MASK] .", cands)


def test_copy_matches_whole_words_case_insensitively_and_prefers_the_longer_label():
    assert mention("person", "A personality is a [MASK] .") is None
    assert mention("Person", "a PERSON is a [MASK] .") == 2
    assert mention("sports team", "one played for a Sports  team .") == 17
    assert mention("mask", "X is a [MASK] .") is None  # the slot is not a mention
    copy = load_model("copy", seed=0)
    cands = ["team", "sports", "sports team", "person"]
    assert _order(copy, "one played for a sports team .", cands)[:3] == ["sports team", "sports", "team"]


def test_copy_is_seeded_like_frequency_and_answers_letters_from_the_question():
    cands = [f"c{i}" for i in range(10)]
    one = load_model("copy", seed=1).scorer().score(["p [MASK]"], cands)
    assert np.array_equal(one, load_model("copy", seed=1).scorer().score(["p [MASK]"], cands))
    assert not np.array_equal(one, load_model("copy", seed=2).scorer().score(["p [MASK]"], cands))
    scores = load_model("copy").letter_scores(["Rex is a dog. What is Rex?"],
                                              [{"a": "cat", "b": "dog", "c": "fish"}])[0]
    assert max(scores, key=scores.get) == "b"


# ------------------------------------------------------------------------------ prior


def test_content_free_drops_premises_and_blanks_the_subject():
    hyp = f"Therefore , {CONTENT_FREE} is a particular [MASK] ."
    assert content_free("[X] is a dog . Dog is a mammal . Therefore , [X] is a particular [MASK] .") == hyp
    assert content_free("Therefore , [Y] is a particular [MASK] .") == hyp
    assert content_free("Barack Obama is a [MASK] .") == f"{CONTENT_FREE} is a [MASK] ."
    assert content_free("Rex has class [MASK] .") == f"{CONTENT_FREE} has class [MASK] ."
    assert (content_free("One has to be a particular [MASK] if one played for a sports team .")
            == f"One has to be a particular [MASK] if {CONTENT_FREE} .")
    # A label holding a sentence end is not taken for a premise's end.
    assert content_free("Yahoo! is a [MASK] .") == f"{CONTENT_FREE} is a [MASK] ."
    assert (content_free("Rex is a dog . Yahoo! has class [MASK] .")
            == f"{CONTENT_FREE} has class [MASK] .")
    with pytest.raises(ModelError, match="no subject"):
        content_free("The weather today is [MASK] .")
    with pytest.raises(ModelError, match=r"\[MASK\]"):
        content_free("no slot here")


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_gpt2_dir"])
def test_prior_scores_prompts_differing_in_premises_or_subject_alike(fixture, request, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    from kgprobe.models.score_cache import cached_scorer

    path = str(request.getfixturevalue(fixture))
    check_model_name(f"prior:{path}")
    prior = load_model(f"prior:{path}")
    plain = load_model(path)
    assert isinstance(prior, PriorModel) and prior.name == f"prior:{path}"
    assert prior.fills_masks == plain.fills_masks and prior.trained_on([["x"]]) is prior
    cands = ["person", "animal", "agent", "place"]
    prompts = ["Person is an agent . Therefore , [X] is a particular [MASK] .",
               "Therefore , [Y] is a particular [MASK] .",
               "Paris is a place . Therefore , Berlin is a particular [MASK] ."]
    scorer = cached_scorer(prior.scorer(), prior)
    rows = scorer.score(prompts, cands)
    assert np.allclose(rows[0], rows[1]) and np.allclose(rows[0], rows[2])
    # the wrapped model's own scores of the content-free prompt...
    free = plain.scorer().score([content_free(prompts[0])], cands)[0]
    assert np.allclose(rows[0], free)
    # ...which are not the plain model's scores of the prompt with its content
    assert not np.allclose(plain.scorer().score(prompts[:1], cands)[0], rows[0])
    # the cache keeps the prior as its own model: the plain model's key differs
    assert cached_scorer(plain.scorer(), plain).model_key != scorer.model_key
    assert np.allclose(cached_scorer(prior.scorer(), prior).score(prompts, cands), rows)
    with pytest.raises(ModelError, match="ranks candidates only"):
        prior.letter_scores(["q"], [{"a": "x"}])


def test_prior_scores_each_content_free_text_and_candidate_once(tiny_gpt2_dir):
    """Prompts that strip to one text are scored once, candidates asked before are not asked
    again, and every score equals the wrapped scorer's own score of the stripped text."""
    prior, plain = load_model(f"prior:{tiny_gpt2_dir}"), load_model(str(tiny_gpt2_dir))
    scorer = prior.scorer()
    asked = []
    inner_score = scorer.inner.score

    def counting(prompts, cands, **kw):
        asked.append((list(prompts), list(cands)))
        return inner_score(prompts, cands, **kw)

    scorer.inner.score = counting
    prompts = ["Person is an agent . Therefore , [X] is a particular [MASK] .",
               "Rex is a dog . Therefore , [Y] is a particular [MASK] .",
               "[X] is a [MASK] ."]
    first = scorer.score(prompts, ["person", "animal", "agent"])
    second = scorer.score(prompts[:2], ["agent", "place"])
    texts = [content_free(prompts[0]), content_free(prompts[2])]
    assert asked == [(texts, ["person", "animal", "agent"]), ([texts[0]], ["place"])]
    reference = plain.scorer()
    for prompt, row in zip(prompts, first):
        assert np.allclose(row, reference.score([content_free(prompt)],
                                                ["person", "animal", "agent"])[0], atol=1e-4)
    assert np.allclose(second[0], reference.score([texts[0]], ["agent", "place"])[0], atol=1e-4)
    assert np.array_equal(first[0][2], second[1][0])  # "agent": the kept score


def test_prior_refuses_a_control_inside():
    for name in ("prior:frequency", "prior:prior:random", "prior:"):
        with pytest.raises(ModelError, match="prior control"):
            check_model_name(name)
        with pytest.raises(ModelError, match="prior control"):
            load_model(name)


def test_a_study_runs_the_prior_and_copy_through_model(tiny_bert_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    for model in (f"prior:{tiny_bert_dir}", "copy"):
        out = tmp_path / model.replace("/", "_").replace(":", "_")
        kgprobe.run("memorization", model=model, out=out, task="domain", limit=2,
                    candidates="5")
        with open(out / "results.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert rows and int(rows[0]["n"]) == 2, rows
        assert json.loads((out / "config.json").read_text())["model"] == model


# ------------------------------------------------------------------------------ compare


def test_compare_refuses_runs_with_other_candidates_naming_them(tmp_path, capsys):
    from kgprobe.cli import main

    every, twenty = tmp_path / "all", tmp_path / "k20"
    kgprobe.run("memorization", model="frequency", out=every, task="domain", limit=3,
                candidates="all")
    kgprobe.run("memorization", model="random", out=twenty, task="domain", limit=3,
                candidates="20")
    recorded = {p: json.loads((p / "config.json").read_text()) for p in (every, twenty)}
    assert recorded[every]["candidates"] == "all" and recorded[twenty]["candidates"] == "20"
    capsys.readouterr()

    def refusal() -> str:
        assert main(["compare", str(every), str(twenty), "--out", str(tmp_path / "cmp")]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in lines[0], lines
        return lines[0]

    assert "setting 'candidates' is '20', but 'all'" in refusal()
    # a folder from before config.json recorded its candidates: its cells still tell
    config = every / "config.json"
    config.write_text(json.dumps({k: v for k, v in recorded[every].items() if k != "candidates"}))
    assert "setting 'candidates' (its protocol column) is 'K=20', but 'all'" in refusal()
    assert not (tmp_path / "cmp").exists()
    # and it resumes: the recorded candidates are not a pinned setting
    kgprobe.run("memorization", model="frequency", out=every, task="domain", limit=3,
                candidates="all")
    assert json.loads(config.read_text())["candidates"] == "all"
