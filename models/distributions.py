"""Candidate vocabularies and slot scorers for the tacit-assumption (STA) study.

The paper ranks the target word among a fixed vocabulary with a masked LM's distribution at
``[MASK]``. Three scorers (`SlotScorer`s; `LanguageModel.slot_distribution` picks the first or
the second for a model) cover both model families, all over one fixed candidate list:

* `MaskDistribution` (masked LMs): log-softmax over the model's whole vocabulary at the
  mask, read at each single-token candidate — the paper's method. This is
  `MaskedScorer(masks="single", pooling="first")` over single-token candidates.
* `NextTokenDistribution` (causal LMs, slot at the end of the prompt, e.g. "Everyone knows
  that a bear has [MASK] ."): the next-token distribution after the text before the slot,
  read at single-token candidates — the causal analogue of the mask distribution, one
  forward pass per prompt.
* `SentenceLikelihood` (causal LMs, slot inside the sentence, e.g. "A [MASK] has fur ."):
  log P(candidate, rest of the sentence | text before the slot), i.e. the sentence's
  log-likelihood with the candidate in the slot, up to a constant. Costs one pass over
  candidate + sentence per candidate, so retrieval restricts causal candidates to the norm
  concepts by default.

`probabilities` gives the probability of each candidate: the model's own probability for
the two distributions (out of the model's whole vocabulary, as the paper reports), and for
sentence likelihoods the posterior over the candidate list (softmax of the log-likelihoods),
since a sentence probability is not a distribution over fillers.

A `Vocabulary` maps words to candidate indices. Single-token vocabularies are keyed by token
id, so two spellings of one token (an uncased model's "Paris"/"paris") are one candidate,
never a tie that would cost the target a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import torch
from kgprobe.models.causal import CausalScorer, last_token_logits
from kgprobe.models.encoding import MASK, PromptEncoder
from kgprobe.models.language_model import LanguageModel, SlotScorer

__all__ = [
    "Vocabulary",
    "single_token_vocabulary",
    "word_vocabulary",
    "SlotScorer",
    "MaskDistribution",
    "NextTokenDistribution",
    "SentenceLikelihood",
    "softmax_rows",
]


@dataclass
class Vocabulary:
    """The candidate fillers of a slot, and how other words map onto them."""

    words: list[str]
    #: "single-token" (candidates are token ids) or "words" (any string).
    kind: str
    #: token id of each candidate (single-token vocabularies only).
    token_ids: list[int] = field(default_factory=list)
    #: words of the source list that are not candidates (multi-token, or duplicate tokens).
    dropped: list[str] = field(default_factory=list)
    _encoder: PromptEncoder | None = None
    _by_id: dict[int, int] = field(default_factory=dict)
    _by_word: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.words)

    def index(self, word: str) -> int | None:
        """The candidate index of `word`, or None when the vocabulary cannot produce it."""
        hit = self._by_word.get(word)
        if hit is not None or self.kind == "words" or self._encoder is None:
            return hit
        ids = self._encoder.encode_text(" ".join(word.split()), "space")
        return self._by_id.get(ids[0]) if len(ids) == 1 else None

    def __contains__(self, word: str) -> bool:
        return self.index(word) is not None


def single_token_vocabulary(words: Iterable[str], loaded: LanguageModel) -> Vocabulary:
    """`words` that the model writes as ONE token after a space ("LAMA ∩ model vocabulary").

    The first word of each token id is kept; later spellings of the same token and
    multi-token words are listed in `dropped`.
    """
    encoder = PromptEncoder(loaded.tokenizer)
    unk = getattr(loaded.tokenizer, "unk_token_id", None)
    kept: list[str] = []
    ids: list[int] = []
    dropped: list[str] = []
    by_id: dict[int, int] = {}
    for word in words:
        body = " ".join(str(word).split())
        if not body:
            continue
        tok = encoder.encode_text(body, "space")
        if len(tok) != 1 or tok[0] in by_id or tok[0] == unk:  # [UNK] is no word
            dropped.append(word)
            continue
        by_id[tok[0]] = len(kept)
        kept.append(word)
        ids.append(tok[0])
    return Vocabulary(kept, "single-token", ids, dropped, encoder, by_id, {w: i for i, w in enumerate(kept)})


def word_vocabulary(words: Iterable[str]) -> Vocabulary:
    """Any words (multi-token allowed), duplicates removed: for sentence likelihoods."""
    kept = list(dict.fromkeys(" ".join(str(w).split()) for w in words if str(w).strip()))
    return Vocabulary(kept, "words", _by_word={w: i for i, w in enumerate(kept)})


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax of log-scores (stable; -inf stays 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    top = np.max(scores, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(scores - top)
    return e / e.sum(axis=1, keepdims=True)


class _SingleTokenDistribution:
    """A distribution read at one position: candidates must each be one token."""

    def __init__(self, loaded: LanguageModel, vocabulary: Vocabulary, *, batch_size: int = 32):
        if vocabulary.kind != "single-token":
            raise ValueError(f"{type(self).__name__} needs a single-token vocabulary")
        self.loaded = loaded
        self.vocabulary = vocabulary
        self.batch_size = batch_size


class MaskDistribution(_SingleTokenDistribution):
    """A masked LM's distribution at the mask, over single-token candidates."""

    method = "mask distribution"

    def __init__(self, loaded: LanguageModel, vocabulary: Vocabulary, *, batch_size: int = 32):
        super().__init__(loaded, vocabulary, batch_size=batch_size)
        self._scorer = loaded.scorer(masks="single", pooling="first")

    def score(self, prompts: Sequence[str]) -> np.ndarray:
        return self._scorer.score(list(prompts), self.vocabulary.words, batch_size=self.batch_size)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return np.exp(scores)


class NextTokenDistribution(_SingleTokenDistribution):
    """A causal LM's next-token distribution where the slot starts, over single-token candidates.

    Prompts are tokenised exactly as `CausalScorer` does (same `PromptEncoder` pieces, BOS
    when nothing precedes the slot), right-padded into batches of similar length, and only
    the last real position is projected onto the vocabulary (``logits_to_keep``): one cheap
    forward pass per prompt, which matters for gemma3's 262k-word output layer. The result
    equals `CausalScorer(pooling="first")` on the same candidates (tested).
    """

    method = "next-token distribution"

    def __init__(self, loaded: LanguageModel, vocabulary: Vocabulary, *, batch_size: int = 32):
        super().__init__(loaded, vocabulary, batch_size=batch_size)
        self._causal = CausalScorer(loaded, pooling="first")  # for its prompt encoding only
        self._ids = torch.tensor(vocabulary.token_ids, dtype=torch.long)

    def _prefix_ids(self, prompt: str) -> list[int]:
        before = prompt.split(MASK, 1)[0]
        if not before.strip() or not before.endswith(" "):
            # The vocabulary's token ids are the mid-sentence (after a space) spellings.
            raise ValueError(f"the slot must follow text and a space for next-token scoring: {prompt!r}")
        prefix, _cands, _suffix = self._causal.encode(prompt, [])
        return prefix.ids

    @torch.no_grad()
    def score(self, prompts: Sequence[str]) -> np.ndarray:
        model = self.loaded.model
        device = next(model.parameters()).device
        rows = [self._prefix_ids(p) for p in prompts]
        out = np.zeros((len(rows), len(self.vocabulary)), dtype=np.float64)
        pad = self._causal.encoder.placeholder
        ids_dev = self._ids.to(device)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for b in range(0, len(order), self.batch_size):
            idx = order[b:b + self.batch_size]
            logits = last_token_logits(model, [rows[i] for i in idx], pad)
            lp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
            out[idx] = lp[:, ids_dev].double().cpu().numpy()
        return out

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return np.exp(scores)


class SentenceLikelihood:
    """log P(candidate + the sentence after the slot | the text before it), causal LMs."""

    method = "sentence log-likelihood"

    def __init__(self, loaded: LanguageModel, vocabulary: Vocabulary, *, batch_size: int = 32):
        self.vocabulary = vocabulary
        self.batch_size = batch_size
        self._scorer = loaded.scorer(pooling="sum", include_suffix=True)

    def score(self, prompts: Sequence[str]) -> np.ndarray:
        return self._scorer.score(list(prompts), self.vocabulary.words, batch_size=self.batch_size)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        return softmax_rows(scores)

