"""bfloat16 weights rank like float32 (the GPU setting, `--dtype bfloat16`)."""

from __future__ import annotations

import numpy as np

from kgprobe.models.loading import load_model
from kgprobe.reasoning.memorizing_sets import reference_sets
from kgprobe.studies.metrics import evaluate, gold_indices


def test_bfloat16_ranks_like_float32(tiny_llama_dir):
    mset = reference_sets(["type"])["type"]
    records = [r for r in mset.records if r.split == "test"][:120]
    candidates = mset.candidates[:60] + sorted({r.answers[0] for r in records} - set(mset.candidates[:60]))
    prompts = [f"{r.subject} is a particular [MASK] ." for r in records]
    golds = [gold_indices(candidates, r.answers) for r in records]
    full = load_model(str(tiny_llama_dir), dtype="float32")
    half = load_model(str(tiny_llama_dir), dtype="bfloat16")
    assert next(half.model.parameters()).dtype.is_floating_point and str(next(half.model.parameters()).dtype) == "torch.bfloat16"
    a = full.scorer().score(prompts, candidates, batch_size=64)
    b = half.scorer().score(prompts, candidates, batch_size=64)
    assert not np.array_equal(a, b)  # really computed in another precision
    same_top1 = np.mean(a.argmax(1) == b.argmax(1))
    delta = abs(evaluate(a, golds)["MRR"] - evaluate(b, golds)["MRR"])
    assert same_top1 >= 0.99, same_top1
    assert 100 * delta <= 0.5, delta


def test_device_auto_picks_what_is_there_and_a_bad_dtype_is_one_line(tiny_gpt2_dir):
    import pytest
    import torch

    from kgprobe.errors import ModelError

    loaded = load_model(str(tiny_gpt2_dir), device="auto", dtype="float16")
    assert loaded.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert next(loaded.model.parameters()).dtype == torch.float16
    with pytest.raises(ModelError, match="dtype"):
        load_model(str(tiny_gpt2_dir), dtype="float8")
