"""One scoring interface for every model family.

A `Scorer` ranks candidate fillers of the ``[MASK]`` slot of prompts::

    scorer = make_scorer(load_model("bert-base-cased"), masks="multi", pooling="mean")
    scores = scorer.score(["Person is a particular [MASK] ."], ["animal", "agent", "work"])
    # scores: np.ndarray [n_prompts, n_candidates], higher = better (log-probabilities)

Prompts contain exactly one literal ``[MASK]``. Pseudoword slots (``[X]``, ``[Y]``) are
replaced by one position each whose input embedding is the given vector::

    scorer.score(prompts, candidates, pseudowords={"[X]": vec})          # shared
    scorer.score(prompts, candidates, pseudowords=[{"[X]": v1}, ...])    # one per prompt

Implementations: `MaskedScorer` (multiple / single masks, mean / max / first pooling;
OntoProbe §3.1.2), `CausalScorer` (candidate log-probability after the prefix, cached
prefix, optional suffix), and the baselines in `kgprobe.studies.metrics` (frequency,
random). The paper's 20-option protocol (§5) for instruct/chat causal
models is `kgprobe.prompts.multiple_choice`.
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import torch
from kgprobe.errors import ModelError
from kgprobe.models.causal import CausalScorer
from kgprobe.models.encoding import MASK, POOLINGS
from kgprobe.models.loading import LoadedModel
from kgprobe.models.masked import MaskedScorer

__all__ = [
    "MASK",
    "POOLINGS",
    "Scorer",
    "MaskedScorer",
    "CausalScorer",
    "make_scorer",
]

Pseudowords = Mapping[str, torch.Tensor] | Sequence[Mapping[str, torch.Tensor]] | None


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores candidates for prompts (models and baselines alike)."""

    name: str

    def score(
        self,
        prompts: Sequence[str],
        candidates: Sequence[str],
        *,
        pseudowords: Pseudowords = None,
        batch_size: int = 32,
    ) -> np.ndarray:
        """Return float scores [len(prompts), len(candidates)]; higher is better."""
        ...


def make_scorer(
    loaded: LoadedModel,
    *,
    masks: str = "multi",
    pooling: str | None = None,
    include_suffix: bool = False,
    share_prefix: bool = True,
) -> Scorer:
    """The scorer for `loaded`'s family.

    masked: `masks` ``"multi"`` | ``"single"``; `pooling` ``"mean"`` (default) | ``"max"`` |
    ``"first"`` | ``"sum"``. causal: `pooling` ``"sum"`` (default) | ``"mean"`` | ``"first"`` |
    ``"max"``; `include_suffix` adds the log-probability of the text after the slot;
    `masks` is ignored.
    """
    if pooling is not None and pooling not in POOLINGS:
        raise ModelError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
    if loaded.kind == "masked":
        return MaskedScorer(loaded, masks=masks, pooling=pooling or "mean")
    if loaded.kind == "causal":
        return CausalScorer(loaded, pooling=pooling or "sum", include_suffix=include_suffix, share_prefix=share_prefix)
    raise ModelError(f"model '{loaded.name}' has unknown kind {loaded.kind!r}; load it with load_model")
