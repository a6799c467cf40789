"""Pseudoword sampling: radius, separation, determinism, anchors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgprobe.errors import KgprobeError, ModelError
from kgprobe.models.scoring import make_scorer
from kgprobe.pseudowords.sampler import (
    PAPER_COEFFICIENT,
    PseudowordError,
    anchor_for,
    sample_pseudoword_sets,
    sample_pseudowords,
    sampling_radius,
)


@pytest.fixture()
def vocab():
    return torch.randn(60, 16, generator=torch.Generator().manual_seed(11))


def test_paper_coefficient():
    assert PAPER_COEFFICIENT == 0.5


def test_radius_excludes_anchor_token(vocab):
    anchor = vocab[7]  # the anchor is itself a vocabulary row (distance 0): excluded
    d = torch.linalg.vector_norm(vocab - anchor, dim=1)
    d[7] = float("inf")
    assert sampling_radius(vocab, anchor, 0.5) == pytest.approx(0.5 * float(d.min()), rel=1e-6)
    outside = vocab.mean(0)
    assert sampling_radius(vocab, outside, 0.3) == pytest.approx(
        0.3 * float(torch.linalg.vector_norm(vocab - outside, dim=1).min()), rel=1e-6
    )


def test_samples_on_sphere_and_separated(vocab):
    anchor = vocab[7]
    radius = sampling_radius(vocab, anchor)
    pts = sample_pseudowords(vocab, anchor, 25, seed=3)
    assert pts.shape == (25, 16) and pts.dtype == vocab.dtype
    dist = torch.linalg.vector_norm(pts - anchor, dim=1)
    torch.testing.assert_close(dist, torch.full_like(dist, radius), rtol=1e-5, atol=1e-6)
    pair = torch.cdist(pts.double(), pts.double())
    pair.fill_diagonal_(float("inf"))
    assert float(pair.min()) >= radius * (1 - 1e-5)
    # with coefficient <= 0.5 no pseudoword is closer than the radius to a real token
    assert float(torch.cdist(pts.double(), vocab.double()).min()) >= radius * (1 - 1e-5)


def test_deterministic_by_seed(vocab):
    a = sample_pseudowords(vocab, vocab[0], 5, seed=42)
    b = sample_pseudowords(vocab, vocab[0], 5, seed=42)
    c = sample_pseudowords(vocab, vocab[0], 5, seed=43)
    assert torch.equal(a, b) and not torch.allclose(a, c)
    assert torch.equal(sample_pseudowords(vocab, vocab[0], 3, seed=42), a[:3])  # prefix-stable
    assert sample_pseudowords(vocab, vocab[0], 0, seed=1).shape == (0, 16)


def test_impossible_separation_is_a_clear_error():
    plane = torch.randn(30, 2, generator=torch.Generator().manual_seed(0))
    # at most 6 points fit on a circle with pairwise distance >= its radius
    with pytest.raises(PseudowordError) as err:
        sample_pseudowords(plane, plane[0], 7, seed=0, max_tries=200)
    assert isinstance(err.value, KgprobeError) and "\n" not in str(err.value) and "fewer" in str(err.value)
    with pytest.raises(PseudowordError):
        sample_pseudowords(plane, plane[0], 1, coefficient=0.0, seed=0)


def test_anchors(tiny_bert, tiny_gpt2, tiny_gemma3):
    emb = tiny_bert.model.get_input_embeddings().weight
    assert torch.equal(anchor_for(tiny_bert), emb[tiny_bert.tokenizer.mask_token_id])
    gpt_emb = tiny_gpt2.model.get_input_embeddings().weight
    torch.testing.assert_close(anchor_for(tiny_gpt2), gpt_emb.double().mean(0).float())
    torch.testing.assert_close(anchor_for(tiny_bert, "mean"), emb.double().mean(0).float())
    with pytest.raises(ModelError):
        anchor_for(tiny_gpt2, "mask")
    with pytest.raises(ModelError):
        anchor_for(tiny_gpt2, "median")
    # Gemma scales its embeddings: the matrix is what the first layer sees
    module = tiny_gemma3.model.get_input_embeddings()
    ids = torch.arange(module.weight.shape[0])
    torch.testing.assert_close(tiny_gemma3.input_embeddings(), module(ids).detach())


def test_sets_for_a_model_feed_the_scorer(tiny_bert):
    sets = sample_pseudoword_sets(tiny_bert, 10, seed=0)
    assert len(sets) == 10 and all(set(s) == {"[X]", "[Y]"} for s in sets)
    flat = torch.stack([v for s in sets for v in s.values()])
    assert torch.unique(flat, dim=0).shape[0] == 20
    scores = make_scorer(tiny_bert).score(["[X] is a particular [MASK] ."] * 10, ["person", "agent"], pseudowords=sets)
    assert scores.shape == (10, 2) and np.isfinite(scores).all()
    assert not np.allclose(scores[0], scores[1])
