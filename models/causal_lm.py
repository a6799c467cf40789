"""`CausalLM`: the model interface for GPT-like causal (decoder-only) language models.

A causal LM reads only the token after its prefix: a slot is scored as the continuation of the
text before it (a slot that ends the prompt is one next-token distribution), segments by
log P(token | tokens before it), a prompt's feature is its last token's state (COPEN App. A.2),
and pseudowords are sampled near the mean input embedding (it has no mask token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import torch
from kgprobe.models.causal import CausalScorer, last_token_logits
from kgprobe.models.distributions import NextTokenDistribution, Vocabulary
from kgprobe.models.language_model import LanguageModel, Scorer
from kgprobe.models.segments import (
    ALL,
    Prompt,
    TaggedIds,
    batched_features,
    causal_logprobs,
    shared_prefix_features,
)

__all__ = ["CausalLM"]


@dataclass(eq=False)
class CausalLM(LanguageModel):
    """A causal LM (`AutoModelForCausalLM`) behind the `LanguageModel` interface."""

    kind: ClassVar[str] = "causal"
    fills_masks: ClassVar[bool] = False
    answers_next_token: ClassVar[bool] = True
    default_pooling: ClassVar[str] = "sum"  # the candidate's sequence log-probability
    feature_pooling: ClassVar[str] = "last"
    auto_class: ClassVar[str] = "AutoModelForCausalLM"
    pseudoword_anchor: ClassVar[str] = "mean"

    def _scorer(self, *, masks: str, pooling: str, include_suffix: bool | str, share_prefix: bool) -> Scorer:
        return CausalScorer(self, pooling=pooling, include_suffix=include_suffix, share_prefix=share_prefix,
                            chat=getattr(self, "chat", None))

    def slot_distribution(self, vocabulary: Vocabulary, *, batch_size: int = 32) -> NextTokenDistribution:
        return NextTokenDistribution(self, vocabulary, batch_size=batch_size)

    def next_token_logits(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        pad = self.tokenizer.pad_token_id
        return last_token_logits(self.model, rows, pad if pad is not None else 0)

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 8,
                 stop: Sequence[str] = ("\n", "."), chat: bool = False,
                 candidates: Sequence[Sequence[str]] | None = None,
                 batch_size: int = 16, pseudowords=None) -> list[str]:
        """Greedy continuations, batched with left padding (`models.generation`; with
        `pseudowords`, from input embeddings with the vectors at their slots:
        `models.vector_generation`). A chat template is not applied here: the study hands the
        prompt already wrapped."""
        from kgprobe.models.generation import greedy_generate

        if pseudowords is not None:
            from kgprobe.models.vector_generation import greedy_generate_vectors

            return greedy_generate_vectors(self, prompts, pseudowords,
                                           max_new_tokens=max_new_tokens, stop=stop,
                                           batch_size=batch_size)

        return greedy_generate(self, prompts, max_new_tokens=max_new_tokens, stop=stop,
                               batch_size=batch_size)

    def segment_frame(self, front: list[int], back: list[int]) -> tuple[list[int], list[int]]:
        """Nothing after the text (no token after it is read); before it, the tokenizer's
        specials, else its BOS (else EOS) token so that the first text token is scored too."""
        if not front:
            tok = self.tokenizer
            start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
            front = [int(start)] if start is not None else []
        return front, []

    def token_logprobs(self, encoded: Sequence[TaggedIds], parts: Sequence[str] = (ALL,),
                       groups: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
        return causal_logprobs(self, encoded, groups)

    def features(self, prompts: Sequence[Prompt], pooling: str | None = None,
                 spans: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        pooling = pooling or self.feature_pooling
        if pooling == "last":  # causal attention: the common prefix of a span runs once
            return shared_prefix_features(self, prompts, spans)
        return batched_features(self, prompts, pooling)
