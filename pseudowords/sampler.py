"""Pseudowords: input embeddings without lexical meaning (OntoProbe §3.2.2).

Following the paper, a pseudoword is a vector sampled at distance ``d`` from an anchor
embedding (the ``[MASK]`` token's for masked LMs, which "can be used to predict all the
words in the vocabulary and appear anywhere in the sentence")::

    d = coefficient * min_{w in V, w != anchor} || e_w - e_anchor ||_2      (coefficient 0.5, App. A)

and every pseudoword is at least ``d`` away from every other one so they stay
distinguishable. With coefficient <= 0.5 a pseudoword is also at least ``d`` away from every
vocabulary embedding (triangle inequality), so it never coincides with a real token.

Causal LMs have no ``[MASK]`` token; our documented choice is the mean input embedding of
the vocabulary (the centre of the embedding cloud, closest in spirit to "could be any
word"); `anchor_for(loaded, "mask")` is still available when the tokenizer has a mask token.

Embeddings are those the model's first layer sees (`LanguageModel.input_embeddings`: Gemma's
scaled embeddings included), and the vectors are injected unchanged via ``inputs_embeds``.
"""

from __future__ import annotations

from typing import Sequence

import torch
from kgprobe.errors import KgprobeError, ModelError

__all__ = [
    "PAPER_COEFFICIENT",
    "PseudowordError",
    "sample_pseudowords",
    "sampling_radius",
    "anchor_for",
    "sample_pseudoword_sets",
]

#: Coefficient used by the paper (Appendix A).
PAPER_COEFFICIENT = 0.5


class PseudowordError(KgprobeError):
    """Pseudowords cannot be sampled with the requested settings."""


def sampling_radius(embeddings: torch.Tensor, anchor: torch.Tensor, coefficient: float = PAPER_COEFFICIENT) -> float:
    """``coefficient`` x the smallest L2 distance from `anchor` to a vocabulary embedding.

    Rows at distance ~0 (the anchor token itself when it is in the vocabulary) are excluded.
    """
    if embeddings.dim() != 2 or anchor.dim() != 1 or embeddings.shape[1] != anchor.shape[0]:
        raise ValueError(f"need embeddings [V, H] and anchor [H], got {tuple(embeddings.shape)} and {tuple(anchor.shape)}")
    if not coefficient > 0:
        raise PseudowordError(f"pseudoword coefficient must be positive, got {coefficient}; use e.g. 0.5")
    emb = embeddings.detach().double()
    a = anchor.detach().to(emb.device).double()
    dist = torch.linalg.vector_norm(emb - a, dim=1)
    tol = 1e-6 * max(1.0, float(torch.linalg.vector_norm(a)))
    others = dist[dist > tol]
    if others.numel() == 0:
        raise PseudowordError("every vocabulary embedding equals the anchor; cannot derive a sampling distance")
    return coefficient * float(others.min())


def sample_pseudowords(
    embeddings: torch.Tensor,
    anchor: torch.Tensor,
    n: int,
    *,
    coefficient: float = PAPER_COEFFICIENT,
    seed: int,
    max_tries: int = 1000,
) -> torch.Tensor:
    """`n` vectors [n, H] on the sphere of radius `sampling_radius` around `anchor`.

    Directions are uniform (normalised Gaussians from a `torch.Generator` seeded with
    `seed`, so results are reproducible). A candidate closer than the radius to an earlier
    pseudoword is rejected; after `max_tries` rejections for one pseudoword a
    `PseudowordError` is raised (lower `n` or `coefficient`).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    radius = sampling_radius(embeddings, anchor, coefficient)
    hidden = anchor.shape[0]
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    a = anchor.detach().cpu().double()
    chosen: list[torch.Tensor] = []
    for k in range(n):
        for _ in range(max_tries):
            direction = torch.randn(hidden, generator=gen, dtype=torch.float64)
            norm = torch.linalg.vector_norm(direction)
            if norm == 0:
                continue
            point = a + radius * direction / norm
            if all(float(torch.linalg.vector_norm(point - q)) >= radius for q in chosen):
                chosen.append(point)
                break
        else:
            raise PseudowordError(
                f"could not place pseudoword {k + 1} of {n} at least {radius:.4g} from the others after {max_tries} tries; "
                "sample fewer pseudowords or lower the coefficient"
            )
    out = torch.stack(chosen) if chosen else torch.empty((0, hidden), dtype=torch.float64)
    return out.to(device=embeddings.device, dtype=embeddings.dtype)


def anchor_for(loaded, kind: str = "auto", matrix: torch.Tensor | None = None) -> torch.Tensor:
    """Anchor embedding [H] of a loaded model.

    ``"mask"``: the mask token's embedding (the paper's choice; needs a mask token).
    ``"mean"``: the mean input embedding over the vocabulary.
    ``"auto"``: ``"mask"`` for masked LMs, ``"mean"`` for causal LMs.
    `matrix`: the model's `input_embeddings()`, when the caller already has it.
    """
    if kind == "auto":
        kind = loaded.pseudoword_anchor
    if matrix is None:
        matrix = loaded.input_embeddings()
    if kind == "mask":
        mask_id = getattr(loaded.tokenizer, "mask_token_id", None)
        if mask_id is None:
            raise ModelError(f"model '{loaded.name}' has no mask token to anchor pseudowords; use anchor 'mean'")
        return matrix[int(mask_id)].detach().clone()
    if kind == "mean":
        return matrix.detach().double().mean(dim=0).to(matrix.dtype)
    raise ModelError(f"unknown pseudoword anchor {kind!r}; use mask, mean or auto")


def sample_pseudoword_sets(
    loaded,
    n_sets: int,
    slots: Sequence[str] = ("[X]", "[Y]"),
    *,
    coefficient: float = PAPER_COEFFICIENT,
    seed: int = 0,
    anchor: str = "auto",
) -> list[dict[str, torch.Tensor]]:
    """`n_sets` mappings slot -> vector (the paper samples 10 pairs for [X], [Y]); all mutually separated."""
    matrix = loaded.input_embeddings()  # a [V, H] copy for Gemma: build it once
    vectors = sample_pseudowords(
        matrix, anchor_for(loaded, anchor, matrix), n_sets * len(slots), coefficient=coefficient, seed=seed
    )
    return [{slot: vectors[i * len(slots) + j] for j, slot in enumerate(slots)} for i in range(n_sets)]
