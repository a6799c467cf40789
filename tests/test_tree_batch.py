"""Prompts that share candidates scored in one batched trie pass equal one-at-a-time scoring."""

from __future__ import annotations

import numpy as np
import pytest
import torch

PROMPTS = ["Paris is the capital of [MASK] .", "Berlin is the capital of [MASK] . Therefore ,",
           "A person is a particular [MASK] .", "[X] is a particular [MASK] .", "[X] is a particular [MASK] ."]
CANDS = ["France", "Germany", "banana", "person", "agent", "sports event", "motor race", "fruit",
         "work", "place", "capital of France", "soccer player"]


@pytest.mark.parametrize("name", ["tiny_gpt2", "tiny_llama", "tiny_gemma3"])
def test_batched_prompts_score_like_single_prompts(name, request):
    loaded = request.getfixturevalue(name)
    torch.manual_seed(0)
    vectors = [{}, {}, {}, {"[X]": torch.randn(loaded.hidden_size)}, {"[X]": torch.randn(loaded.hidden_size)}]
    batched = loaded.scorer()
    single = loaded.scorer()
    single.batch_prompts = False
    a = batched.score(PROMPTS, CANDS, pseudowords=vectors, batch_size=5)
    b = single.score(PROMPTS, CANDS, pseudowords=vectors, batch_size=5)
    assert np.abs(a - b).max() < 1e-4
    assert not np.allclose(a[3], a[4])  # the two pseudowords really differ
    assert batched.stats["forwards"] < single.stats["forwards"]
