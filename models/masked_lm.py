"""`MaskedLM`: the model interface for BERT-like masked language models.

A masked LM reads a ``[MASK]`` anywhere in a sentence in one pass (OntoProbe §3.1.2), scores
text segments by their pseudo-log-likelihood, takes a prompt's [CLS] state as its feature
(COPEN App. A.2) and samples pseudowords near the mask embedding (OntoProbe §3.2.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import torch
from kgprobe.models.capabilities import refusal
from kgprobe.models.distributions import MaskDistribution, Vocabulary
from kgprobe.models.language_model import LanguageModel, Scorer
from kgprobe.models.masked import MaskedScorer
from kgprobe.models.segments import (
    ALL,
    Prompt,
    TaggedIds,
    batched_features,
    masked_pll,
)

__all__ = ["MaskedLM"]


@dataclass(eq=False)
class MaskedLM(LanguageModel):
    """A masked LM (`AutoModelForMaskedLM`) behind the `LanguageModel` interface."""

    kind: ClassVar[str] = "masked"
    fills_masks: ClassVar[bool] = True
    answers_next_token: ClassVar[bool] = False
    default_pooling: ClassVar[str] = "mean"  # the paper's mean over the masks
    feature_pooling: ClassVar[str] = "first"  # [CLS]
    auto_class: ClassVar[str] = "AutoModelForMaskedLM"
    pseudoword_anchor: ClassVar[str] = "mask"

    def _scorer(self, *, masks: str, pooling: str, include_suffix: bool | str, share_prefix: bool) -> Scorer:
        return MaskedScorer(self, masks=masks, pooling=pooling)

    def slot_distribution(self, vocabulary: Vocabulary, *, batch_size: int = 32) -> MaskDistribution:
        return MaskDistribution(self, vocabulary, batch_size=batch_size)

    def next_token_logits(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        raise refusal(self.name, "next_token", "it is a masked LM; use a causal (instruct) model")

    def segment_frame(self, front: list[int], back: list[int]) -> tuple[list[int], list[int]]:
        """The tokenizer's own special tokens on both sides ([CLS] … [SEP])."""
        return front, back

    def token_logprobs(self, encoded: Sequence[TaggedIds], parts: Sequence[str] = (ALL,),
                       groups: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
        return masked_pll(self, encoded, parts)

    def features(self, prompts: Sequence[Prompt], pooling: str | None = None,
                 spans: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        return batched_features(self, prompts, pooling or self.feature_pooling)
