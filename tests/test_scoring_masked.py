"""Masked-LM scoring (multiple / single masks, pooling, pseudowords) on a tiny random BERT."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from kgprobe.errors import KgprobeError, ModelError, TemplateError
from kgprobe.models.masked import MaskedScorer
from kgprobe.models.scoring import Scorer, make_scorer

PROMPT = "Paris is the capital of [MASK] ."
SINGLE = ["france", "germany", "person", "animal", "agent"]
MULTI = ["france", "banana", "soccer player", "sports event", "motor race", "person"]


def _pool(values, pooling):
    return {"mean": float(np.mean(values)), "max": float(np.max(values)), "first": float(values[0]), "sum": float(np.sum(values))}[pooling]


def _mask_logprobs(loaded, text):
    """Log-softmax at the mask positions of `text`, tokenised as a whole string by the tokenizer."""
    tok, model = loaded.tokenizer, loaded.model
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        logits = model(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}).logits[0]
    positions = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
    return torch.log_softmax(logits[positions].double(), dim=-1)


def test_scorer_protocol(tiny_bert):
    scorer = make_scorer(tiny_bert)
    assert isinstance(scorer, Scorer) and isinstance(scorer, MaskedScorer)
    scores = scorer.score([PROMPT, "A person is a particular [MASK] ."], MULTI)
    assert scores.shape == (2, len(MULTI)) and scores.dtype == np.float64
    assert np.all(np.isfinite(scores)) and np.all(scores <= 0)


def test_single_token_scores_equal_fill_mask_pipeline(tiny_bert):
    from transformers import pipeline

    fill = pipeline("fill-mask", model=tiny_bert.model, tokenizer=tiny_bert.tokenizer, device="cpu")
    results = fill(PROMPT, targets=SINGLE, top_k=len(SINGLE))
    expected = {r["token_str"]: math.log(r["score"]) for r in results}
    for masks in ("multi", "single"):
        for pooling in ("mean", "max", "first"):
            got = make_scorer(tiny_bert, masks=masks, pooling=pooling).score([PROMPT], SINGLE)[0]
            for cand, value in zip(SINGLE, got):
                assert value == pytest.approx(expected[cand], abs=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "max", "first", "sum"])
def test_multi_mask_equals_brute_force(tiny_bert, pooling):
    tok = tiny_bert.tokenizer
    prompts = [PROMPT, "A motor race is a particular [MASK] .", "[MASK] is a person ."]
    scorer = make_scorer(tiny_bert, masks="multi", pooling=pooling)
    got = scorer.score(prompts, MULTI, batch_size=2)
    assert any(len(tok.tokenize(c)) > 1 for c in MULTI)
    for i, prompt in enumerate(prompts):
        for j, cand in enumerate(MULTI):
            ids = tok(cand, add_special_tokens=False)["input_ids"]
            lp = _mask_logprobs(tiny_bert, prompt.replace("[MASK]", " ".join(["[MASK]"] * len(ids))))
            values = [float(lp[t, ids[t]]) for t in range(len(ids))]
            assert got[i, j] == pytest.approx(_pool(values, pooling), abs=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "max", "first"])
def test_single_mask_equals_brute_force(tiny_bert, pooling):
    tok = tiny_bert.tokenizer
    got = make_scorer(tiny_bert, masks="single", pooling=pooling).score([PROMPT], MULTI)[0]
    lp = _mask_logprobs(tiny_bert, PROMPT)[0]
    for j, cand in enumerate(MULTI):
        ids = tok(cand, add_special_tokens=False)["input_ids"]
        assert got[j] == pytest.approx(_pool([float(lp[i]) for i in ids], pooling), abs=1e-5)


def test_batch_size_does_not_change_scores(tiny_bert):
    scorer = make_scorer(tiny_bert)
    prompts = [PROMPT, "A person is a particular [MASK] .", "x is a [MASK] of y ."]
    a = scorer.score(prompts, MULTI, batch_size=1)
    b = scorer.score(prompts, MULTI, batch_size=64)
    np.testing.assert_allclose(a, b, atol=1e-5)


def _with_embedding_row(loaded, token_id, vector):
    """A copy of the model whose INPUT embedding row `token_id` is `vector` (output head untouched)."""
    model = copy.deepcopy(loaded.model)
    old = model.get_input_embeddings()
    new = torch.nn.Embedding(old.num_embeddings, old.embedding_dim, padding_idx=old.padding_idx)
    with torch.no_grad():
        new.weight.copy_(old.weight)
        new.weight[token_id] = vector
    model.set_input_embeddings(new)
    return type(loaded)(name=loaded.name, model=model, tokenizer=loaded.tokenizer, device="cpu")


@pytest.mark.parametrize("masks", ["multi", "single"])
def test_pseudoword_injection_equals_overwritten_embedding_row(tiny_bert, masks):
    tok = tiny_bert.tokenizer
    gen = torch.Generator().manual_seed(0)
    vx, vy = torch.randn(32, generator=gen), torch.randn(32, generator=gen)
    x_id, y_id = tok.convert_tokens_to_ids("x"), tok.convert_tokens_to_ids("y")
    prompt = "[X] is a particular [MASK] of [Y] ."
    got = make_scorer(tiny_bert, masks=masks).score([prompt], MULTI, pseudowords={"[X]": vx, "Y": vy})
    patched = _with_embedding_row(_with_embedding_row(tiny_bert, x_id, vx), y_id, vy)
    expected = make_scorer(patched, masks=masks).score(["x is a particular [MASK] of y ."], MULTI)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    # per-prompt mappings, and a literal [X] stays text without pseudowords
    per = make_scorer(tiny_bert, masks=masks).score([prompt, prompt], MULTI, pseudowords=[{"[X]": vx, "[Y]": vy}, {"[X]": vy, "[Y]": vx}])
    np.testing.assert_allclose(per[0], got[0], atol=1e-5)
    assert not np.allclose(per[1], got[0])
    literal = make_scorer(tiny_bert, masks=masks).score([prompt], MULTI)
    assert not np.allclose(literal, got)


def test_build_places_masks_and_specials(tiny_bert):
    scorer = MaskedScorer(tiny_bert)
    ids, positions, slots = scorer.build(PROMPT, 3)
    tok = tiny_bert.tokenizer
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert [ids[p] for p in positions] == [tok.mask_token_id] * 3
    assert ids == tok(PROMPT.replace("[MASK]", "[MASK] [MASK] [MASK]"))["input_ids"]
    assert slots == []


def test_errors_are_one_line(tiny_bert, tiny_gpt2):
    scorer = make_scorer(tiny_bert)
    for bad in ["no slot here", "[MASK] and [MASK]"]:
        with pytest.raises(TemplateError) as err:
            scorer.score([bad], ["france"])
        assert "\n" not in str(err.value)
    with pytest.raises(ModelError) as err:
        MaskedScorer(tiny_gpt2)  # causal tokenizer: no mask token
    assert "mask token" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(KgprobeError):
        make_scorer(tiny_bert, pooling="median")
    with pytest.raises(KgprobeError):
        scorer.score([PROMPT], ["france", "   "])
    with pytest.raises(KgprobeError, match="no candidates") as err:
        scorer.score([PROMPT], [])
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError):
        scorer.score([PROMPT], ["france"], pseudowords={"[X]": torch.zeros(7)})


def test_score_tensor_is_differentiable_in_pseudowords(tiny_bert):
    scorer = make_scorer(tiny_bert)
    v = torch.randn(32, generator=torch.Generator().manual_seed(1), requires_grad=True)
    soft = torch.randn(32, generator=torch.Generator().manual_seed(2), requires_grad=True)
    out = scorer.score_tensor(["[X] <s1> a particular [MASK] ."], MULTI, pseudowords={"X": v, "<s1>": soft})
    out[0, 0].backward()
    assert v.grad is not None and soft.grad is not None and float(soft.grad.abs().sum()) > 0
    np.testing.assert_allclose(
        out.detach().numpy(), scorer.score(["[X] <s1> a particular [MASK] ."], MULTI, pseudowords={"X": v, "<s1>": soft}), atol=1e-6
    )
