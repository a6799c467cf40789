"""Causal-LM scoring: cached-prefix batched scores equal a naive full-sequence loop."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import sys
from pathlib import Path

from kgprobe.errors import ModelError
from kgprobe.models.causal import CausalScorer
from kgprobe.models.scoring import Scorer, make_scorer

PROMPTS = [
    "Paris is the capital of [MASK] .",
    "A motor race is a particular [MASK] . Therefore , it is an event .",
    "Lionel Messi is a [MASK]",
    "[MASK] is the capital of Germany .",
]
sys.path.insert(0, str(Path(__file__).parent))
from naive_scoring import naive_scores  # noqa: E402

CANDIDATES = ["France", "Germany", "soccer player", "sports event", "banana", "a particular agent", "x"]
MODELS = ["tiny_gpt2", "tiny_llama", "tiny_gemma3"]




@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("pooling,include_suffix", [("sum", False), ("mean", True), ("first", False), ("max", True)])
def test_cached_batched_scores_equal_naive_loop(request, model_name, pooling, include_suffix):
    loaded = request.getfixturevalue(model_name)
    scorer = make_scorer(loaded, pooling=pooling, include_suffix=include_suffix)
    assert isinstance(scorer, CausalScorer) and isinstance(scorer, Scorer)
    got = scorer.score(PROMPTS, CANDIDATES, batch_size=3)
    assert got.shape == (len(PROMPTS), len(CANDIDATES))
    for i, prompt in enumerate(PROMPTS):
        expected = naive_scores(loaded, scorer, prompt, CANDIDATES, pooling=pooling, include_suffix=include_suffix)
        np.testing.assert_allclose(got[i], expected, atol=1e-4, rtol=0)
    # batch size and the uncached path agree too
    np.testing.assert_allclose(scorer.score(PROMPTS, CANDIDATES, batch_size=64), got, atol=1e-4, rtol=0)
    full = make_scorer(loaded, pooling=pooling, include_suffix=include_suffix, share_prefix=False)
    np.testing.assert_allclose(full.score(PROMPTS, CANDIDATES, batch_size=2), got, atol=1e-4, rtol=0)


def test_tokenization_boundaries(tiny_gpt2):
    tok = tiny_gpt2.tokenizer
    scorer = make_scorer(tiny_gpt2)
    prefix, cands, suffix = scorer.encode("Paris is the capital of [MASK] .", ["France", "soccer player"])
    assert prefix.ids == tok("Paris is the capital of", add_special_tokens=False)["input_ids"]
    assert cands[0] == tok(" France", add_special_tokens=False)["input_ids"]  # mid-sentence: leading space
    assert cands[1] == tok(" soccer player", add_special_tokens=False)["input_ids"]
    assert suffix.ids == tok(" .", add_special_tokens=False)["input_ids"]
    # at the start of the text: no leading space, BOS as context
    prefix, cands, _ = scorer.encode("[MASK] is the capital .", ["Paris"])
    assert prefix.ids == [tok.bos_token_id] and cands[0] == tok("Paris", add_special_tokens=False)["input_ids"]
    # glued to the previous word: no space
    _, cands, _ = scorer.encode("Messi's[MASK] .", ["s"])
    assert cands[0] == tok("s", add_special_tokens=False)["input_ids"]


def _patched(loaded, token_id, vector):
    model = copy.deepcopy(loaded.model)
    old = model.get_input_embeddings()
    new = torch.nn.Embedding(old.num_embeddings, old.embedding_dim)
    with torch.no_grad():
        new.weight.copy_(old.weight)
        new.weight[token_id] = vector
    model.set_input_embeddings(new)
    return model


@pytest.mark.parametrize("model_name", ["tiny_gpt2", "tiny_llama"])
def test_pseudowords_equal_overwritten_embedding_row(request, model_name):
    loaded = request.getfixturevalue(model_name)
    tok = loaded.tokenizer
    gen = torch.Generator().manual_seed(5)
    hidden = loaded.model.get_input_embeddings().weight.shape[1]
    vx, vy = torch.randn(hidden, generator=gen), torch.randn(hidden, generator=gen)
    prompt = "Person is an agent . Therefore , [X] is a particular [MASK] of [Y] ."
    scorer = make_scorer(loaded, include_suffix=True)
    got = scorer.score([prompt], CANDIDATES, pseudowords={"[X]": vx, "[Y]": vy})[0]
    # naive: same ids, pseudo positions through inputs_embeds
    expected = naive_scores(loaded, scorer, prompt, CANDIDATES, pooling="sum", include_suffix=True, vectors={"[X]": vx, "[Y]": vy})
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    # the one-position slot equals a real token whose input embedding row holds the vector
    x_id = tok.convert_tokens_to_ids("Ġperson")
    assert x_id != tok.unk_token_id
    no_suffix = make_scorer(loaded, include_suffix=False)
    got_x = no_suffix.score([prompt], CANDIDATES, pseudowords={"[X]": vx})[0]
    prefix, cands, _ = no_suffix.encode(prompt, CANDIDATES, {"[X]": vx})
    (pos, _name), = prefix.slots
    ids = list(prefix.ids)
    ids[pos] = x_id
    model = _patched(loaded, x_id, vx)
    for j, cand in enumerate(cands):
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([ids + cand])).logits[0].double(), -1)
        value = sum(float(lp[len(ids) - 1 + t, cand[t]]) for t in range(len(cand)))
        assert got_x[j] == pytest.approx(value, abs=1e-4)
    # literal [X] without pseudowords stays text
    assert not np.allclose(no_suffix.score([prompt], CANDIDATES)[0], got_x)


def test_sliding_window_prefix_longer_than_window(tiny_gemma3):
    # window of 3 tokens < prefix length: the cached sliding layers must still match.
    assert tiny_gemma3.model.config.sliding_window == 3
    scorer = make_scorer(tiny_gemma3, include_suffix=True)
    prompt = "What is the type of it ? (a) work , (b) person . It is a particular [MASK] of the correct option ."
    got = scorer.score([prompt], CANDIDATES, batch_size=4)[0]
    expected = naive_scores(tiny_gemma3, scorer, prompt, CANDIDATES, pooling="sum", include_suffix=True)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_no_context_without_bos_is_an_error(tiny_gpt2):
    loaded = copy.copy(tiny_gpt2)
    scorer = CausalScorer(loaded)
    scorer.start_id = None
    with pytest.raises(ModelError) as err:
        scorer.score(["[MASK] is here ."], ["Paris"])
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------------------
# Multiple choice (OntoProbe §5 protocol)
# ----------------------------------------------------------------------------------------

MC_PROMPTS = [
    "What is the type of Paris? (a) work, (b) place, (c) person, (d) event",
    "What is the superclass of motor race? (a) sports event, (b) fruit, (c) agent",
]
MC_GOLDS = ["(b) place", "(a) sports event"]


def _naive_letter_logprobs(loaded, text_ids, letters):
    with torch.no_grad():
        lp = torch.log_softmax(loaded.model(input_ids=torch.tensor([text_ids])).logits[0, -1].double(), -1)
    tok = loaded.tokenizer
    return {l: float(lp[tok(l, add_special_tokens=False)["input_ids"][0]]) for l in letters}


@pytest.mark.parametrize("chat", [False, True])
def test_multiple_choice_scores_letters_as_next_token(tiny_llama, chat):
    from kgprobe.prompts.multiple_choice import score_multiple_choice

    loaded = copy.copy(tiny_llama)
    loaded.tokenizer = copy.deepcopy(tiny_llama.tokenizer)
    if chat:
        loaded.tokenizer.chat_template = (
            "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        )
    result = score_multiple_choice(loaded, MC_PROMPTS, MC_GOLDS, batch_size=2)
    assert result.golds == ["b", "a"] and len(result.predictions) == 2
    assert list(result.scores[0]) == ["a", "b", "c", "d"] and list(result.scores[1]) == ["a", "b", "c"]
    for q, (prompt, row) in enumerate(zip(MC_PROMPTS, result.scores)):
        message = f"{prompt}\nAnswer with the letter of the correct option."
        tok = loaded.tokenizer
        if chat:
            text = tok.apply_chat_template([{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True)
            assert text.startswith("<|user|>")
            ids = tok(text + "(", add_special_tokens=False)["input_ids"]
        else:
            ids = tok(message + "\nAnswer: (")["input_ids"]
        expected = _naive_letter_logprobs(loaded, ids, row)
        for letter in row:
            assert row[letter] == pytest.approx(expected[letter], abs=1e-4)
        assert result.predictions[q] == max(row, key=row.get)
    assert result.accuracy == sum(p == g for p, g in zip(result.predictions, result.golds)) / 2


def test_multiple_choice_data_and_errors(tiny_bert, tiny_llama, tmp_path):
    from kgprobe.errors import KgprobeError
    from kgprobe.prompts.multiple_choice import load_multiple_choice, score_multiple_choice

    path = tmp_path / "mc.jsonl"
    path.write_text('{"prompt": "Q? (a) x, (b) y", "gold": "(b) y", "cands": ["x", "y"]}\n\n', encoding="utf-8")
    prompts, golds = load_multiple_choice(path)
    assert prompts == ["Q? (a) x, (b) y"] and golds == ["(b) y"]
    with pytest.raises(KgprobeError):
        load_multiple_choice(tmp_path / "missing.jsonl")
    with pytest.raises(ModelError):
        score_multiple_choice(tiny_bert, prompts, golds)
    with pytest.raises(KgprobeError):
        score_multiple_choice(tiny_llama, prompts, ["y"])


def test_score_tensor_is_differentiable_in_pseudowords(tiny_llama):
    scorer = make_scorer(tiny_llama, include_suffix=True)
    hidden = tiny_llama.model.get_input_embeddings().weight.shape[1]
    v = torch.randn(hidden, generator=torch.Generator().manual_seed(1), requires_grad=True)
    prompt = "So [X] is a [MASK] of <s1> ."
    out = scorer.score_tensor([prompt], CANDIDATES, pseudowords={"[X]": v, "<s1>": v * 2})
    out.sum().backward()
    assert v.grad is not None and float(v.grad.abs().sum()) > 0
    cached = scorer.score([prompt], CANDIDATES, pseudowords={"[X]": v.detach(), "<s1>": v.detach() * 2})
    np.testing.assert_allclose(out.detach().numpy(), cached, atol=1e-4)


def test_pseudowords_with_scaled_embeddings(tiny_gemma3):
    # Gemma multiplies its embeddings by sqrt(hidden): vectors are injected as the first layer sees them.
    from kgprobe.pseudowords.sampler import sample_pseudoword_sets

    (vectors,) = sample_pseudoword_sets(tiny_gemma3, 1, seed=0)
    prompt = "[X] is a particular [MASK] of [Y] ."
    scorer = make_scorer(tiny_gemma3, pooling="mean", include_suffix=True)
    got = scorer.score([prompt], CANDIDATES, pseudowords=vectors)[0]
    expected = naive_scores(tiny_gemma3, scorer, prompt, CANDIDATES, pooling="mean", include_suffix=True, vectors=vectors)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_an_empty_candidate_set_is_a_one_line_error(tiny_llama):
    from kgprobe.errors import KgprobeError

    with pytest.raises(KgprobeError, match="no candidates") as err:
        make_scorer(tiny_llama).score(["Paris is the capital of [MASK] ."], [])
    assert "\n" not in str(err.value)
