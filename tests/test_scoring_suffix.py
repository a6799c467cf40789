"""Whole-sentence scoring for causal LMs: the text after the slot is read where it holds more
than punctuation, and every scoring path equals one full forward per candidate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from kgprobe.models import trie
from kgprobe.models.cloze import scores_suffix, uses_suffix
from kgprobe.models.score_cache import CachedScorer, ScoreCache
from kgprobe.models.scoring import make_scorer

sys.path.insert(0, str(Path(__file__).parent))
from naive_scoring import naive_scores  # noqa: E402

# (prompt, whether the rule scores its suffix)
PROMPTS = [
    ("One has to be a particular [MASK] if one's composer is a person .", True),
    ("One has to be a particular [MASK] if one's mother is a woman .", True),
    ("Paris is the capital of [MASK] .", False),
    ("A motor race is a particular [MASK] . Therefore , it is an event .", True),
    ("Lionel Messi is a [MASK]", False),
    ("[MASK] is the capital of Germany .", True),
]
CANDIDATES = ["France", "Germany", "soccer player", "sports event", "banana", "a particular agent",
              "x", "capital of France"]  # multi-token ones share first tokens


def test_the_rule_reads_more_than_final_punctuation():
    assert not scores_suffix("") and not scores_suffix(" .") and not scores_suffix(" ?! ")
    assert not scores_suffix(" . »")
    assert scores_suffix(" if one's composer is a person .") and scores_suffix(" [Y] .")
    assert scores_suffix(" of [Y] .") and scores_suffix("s")
    for prompt, expected in PROMPTS:
        assert uses_suffix("auto", prompt) is expected
        assert uses_suffix(True, prompt) and not uses_suffix(False, prompt)


def naive(loaded, scorer, prompt, candidates, *, pooling, with_suffix, vectors=None):
    """One full forward per candidate over prefix + candidate (+ suffix) (`naive_scoring`)."""
    return naive_scores(loaded, scorer, prompt, candidates, pooling=pooling,
                        include_suffix=with_suffix, vectors=vectors)


@pytest.mark.parametrize("model_name", ["tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize("pooling", ["first", "mean", "sum"])
def test_every_path_equals_one_forward_per_candidate(request, monkeypatch, model_name, pooling):
    loaded = request.getfixturevalue(model_name)
    prompts = [p for p, _ in PROMPTS]
    scorer = make_scorer(loaded, pooling=pooling)
    expected = np.stack([naive(loaded, scorer, p, CANDIDATES, pooling=pooling, with_suffix=s)
                         for p, s in PROMPTS])
    # batched prompts (token trie, prompts with equal continuations in one pass)
    got = scorer.score(prompts + prompts[:1], CANDIDATES, batch_size=3)
    np.testing.assert_allclose(got, np.vstack([expected, expected[:1]]), atol=1e-4, rtol=0)
    # one prompt at a time, one candidate per chunk and a trie cut by the node budget
    single = make_scorer(loaded, pooling=pooling)
    single.batch_prompts = False
    np.testing.assert_allclose(single.score(prompts, CANDIDATES, batch_size=64), expected, atol=1e-4, rtol=0)
    np.testing.assert_allclose(single.score(prompts, CANDIDATES, batch_size=1), expected, atol=1e-4, rtol=0)
    monkeypatch.setitem(trie.MAX_NODES, "cpu", 5)
    small = make_scorer(loaded, pooling=pooling)
    np.testing.assert_allclose(small.score(prompts, CANDIDATES, batch_size=64), expected, atol=1e-4, rtol=0)
    assert small.stats["forwards"] > scorer.stats["forwards"]
    # the cached-prefix path (architectures without tree masks) and full sequences
    cached = make_scorer(loaded, pooling=pooling)
    cached._tree_ok = False
    np.testing.assert_allclose(cached.score(prompts, CANDIDATES, batch_size=3), expected, atol=1e-4, rtol=0)
    full = make_scorer(loaded, pooling=pooling, share_prefix=False)
    np.testing.assert_allclose(full.score(prompts, CANDIDATES, batch_size=2), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("model_name", ["tiny_gpt2", "tiny_llama"])
def test_pseudoword_suffix_is_read_and_batched(request, model_name):
    # rdfs7-like hypothesis: only a pseudoword and the full stop after the slot
    loaded = request.getfixturevalue(model_name)
    gen = torch.Generator().manual_seed(3)
    vecs = [{"[X]": torch.randn(loaded.hidden_size, generator=gen),
             "[Y]": torch.randn(loaded.hidden_size, generator=gen)} for _ in range(3)]
    prompt = "Therefore , [X] [MASK] [Y] ."
    scorer = make_scorer(loaded, pooling="mean")
    got = scorer.score([prompt] * 3, CANDIDATES, pseudowords=vecs, batch_size=4)
    for row, v in zip(got, vecs):
        want = naive(loaded, scorer, prompt, CANDIDATES, pooling="mean", with_suffix=True, vectors=v)
        np.testing.assert_allclose(row, want, atol=1e-4, rtol=0)
    # [Y] is read: two pairs that differ only in [Y] score differently
    swapped = [{"[X]": vecs[0]["[X]"], "[Y]": vecs[1]["[Y]"]}]
    assert not np.allclose(scorer.score([prompt], CANDIDATES, pseudowords=swapped)[0], got[0])


@pytest.mark.parametrize("model_name", ["tiny_gpt2", "tiny_llama"])
def test_prompts_that_differ_after_the_slot_score_differently(request, model_name):
    loaded = request.getfixturevalue(model_name)
    a, b = PROMPTS[0][0], PROMPTS[1][0]
    prefix_only = make_scorer(loaded, include_suffix=False).score([a, b], CANDIDATES)
    np.testing.assert_array_equal(prefix_only[0], prefix_only[1])  # the bug this fixes
    whole = make_scorer(loaded).score([a, b], CANDIDATES)
    assert np.all(np.abs(whole[0] - whole[1]) > 1e-3)


def test_the_gradient_path_scores_the_same_sentence(tiny_llama):
    # soft-prompt training scores with gradients (full sequences), evaluation without
    scorer = make_scorer(tiny_llama)
    v = torch.randn(tiny_llama.hidden_size, generator=torch.Generator().manual_seed(2), requires_grad=True)
    prompt = "<s1> is a particular [MASK] of [X] ."
    out = scorer.score_tensor([prompt], CANDIDATES, pseudowords={"[X]": v, "<s1>": v * 2})
    out.sum().backward()
    assert float(v.grad.abs().sum()) > 0
    vec = {"[X]": v.detach(), "<s1>": v.detach() * 2}
    want = naive(tiny_llama, scorer, prompt, CANDIDATES, pooling="sum", with_suffix=True, vectors=vec)
    np.testing.assert_allclose(out.detach().numpy()[0], want, atol=1e-4, rtol=0)


def test_masked_lms_are_unaffected(tiny_bert):
    prompt = PROMPTS[0][0]
    for setting in (True, False):
        np.testing.assert_array_equal(make_scorer(tiny_bert, include_suffix=setting).score([prompt], CANDIDATES),
                                      make_scorer(tiny_bert).score([prompt], CANDIDATES))


def test_a_prefix_only_score_is_never_served_for_the_whole_sentence(tmp_path, tiny_llama):
    cache = ScoreCache(tmp_path)
    prompt = PROMPTS[0][0]
    old = CachedScorer(make_scorer(tiny_llama, include_suffix=False), tiny_llama, cache)
    stored = old.score([prompt], CANDIDATES)
    new = CachedScorer(make_scorer(tiny_llama), tiny_llama, cache)
    got = new.score([prompt], CANDIDATES)
    assert (new.hits, new.misses) == (0, 1)
    np.testing.assert_array_equal(got, make_scorer(tiny_llama).score([prompt], CANDIDATES))
    assert not np.allclose(got, stored)


def test_an_unknown_suffix_setting_is_an_error(tiny_gpt2):
    from kgprobe.errors import ModelError

    with pytest.raises(ModelError, match="include_suffix"):
        make_scorer(tiny_gpt2, include_suffix="yes")


def test_chunks_respect_batch_size_and_node_budget():
    rng = np.random.default_rng(0)
    conts = [(list(rng.integers(0, 4, size=int(rng.integers(1, 7)))),) for _ in range(60)]
    for batch, budget in [(8, 10), (64, 3), (5, 1000), (1, 1)]:
        chunks = trie.chunk_order(conts, batch, budget)
        assert sorted(k for c in chunks for k in c) == list(range(60))
        for chunk in chunks:
            t = trie.CandidateTrie()
            for k in chunk:
                t.add(conts[k][0], [])
            assert len(chunk) <= batch
            assert len(t.tok) <= budget or len(chunk) == 1


def test_memorization_predictions_read_the_suffix(tmp_path, tiny_gpt2_dir):
    # DM prompts all start "One has to be a particular [MASK]": only the suffix tells them apart
    from kgprobe.studies.memorization.study import run_memorization

    run_memorization(str(tiny_gpt2_dir), tmp_path, tasks=["domain"], templates="0", limit=4,
                     progress=False, cache=False)
    preds = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 4 and len({p["prompt"].split("[MASK]")[0] for p in preds}) == 1
    # every prompt ranks the same 785 classes; read up to the slot only, all four rankings
    # (and scores) would be one
    assert len({json.dumps(p["top10"]) for p in preds}) == 4
    firsts = [dict(p["top10"]) for p in preds]
    common = set(firsts[0]).intersection(*firsts[1:])
    assert all(len({f[c] for f in firsts}) == 4 for c in common)
