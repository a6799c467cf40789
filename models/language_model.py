"""The one model interface every study talks to.

In the spirit of lm-evaluation-harness's three-method ``LM``, a `LanguageModel` is a loaded
model and its tokenizer with the few operations the studies need:

* `scorer` — rank candidate fillers of a prompt's ``[MASK]`` slot (pseudoword and soft
  vectors at ``[X]``, ``[Y]``, ``<s1>`` slots), returning a `Scorer`;
* `slot_distribution` — the model's own distribution at a slot over a fixed vocabulary
  (STA), returning a `SlotScorer`;
* `next_token_logits` — the distribution of the token after each of some token rows, and
  `letter_scores` — each option letter's score as a multiple-choice answer;
* `trained_on` — the model after seeing a relation's training answers: a pretrained model
  returns itself, the frequency baseline fits its counts (`models.baselines`);
* `generate` — the model's own greedy answer to prompts (open answers, `models.generation`);
* `score_segments` — the mean log-probability of tagged text segments of whole prompts
  (COPEN's zero-shot parts), from `token_logprobs` per token;
* `features` — frozen hidden states of prompts for probing (COPEN linear);
* `input_embeddings` — the static input embeddings pseudowords are sampled near.

`MaskedLM` (``models/masked_lm.py``) and `CausalLM` (``models/causal_lm.py``) implement it;
what differs between them is a class attribute, not a ``kind`` test in a study:
`fills_masks` (a slot anywhere in the text is read in one pass), `answers_next_token`,
`default_pooling` (of a multi-token candidate), `feature_pooling` (which token's hidden state
is a prompt's feature), `pseudoword_anchor`. `kind` stays as the name written into run
settings (``config.json``). A new model family is one more subclass; `load_model` picks it.
The baselines (`models.baselines.Baseline`: ``frequency``, ``random``) answer the same calls
without torch or weights; they are registered as virtual subclasses, so
``isinstance(baseline, LanguageModel)`` holds. They, the served and the prior models declare
which calls they answer (`models.capabilities`) and refuse the rest in one line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import torch
from kgprobe.errors import ModelError
from kgprobe.models.baselines import Baseline
from kgprobe.models.capabilities import refusal
from kgprobe.models.cloze import AUTO
from kgprobe.models.encoding import POOLINGS
from kgprobe.models.segments import ALL, Prompt, TaggedIds, score_prompts

__all__ = ["LanguageModel", "Scorer", "SlotScorer", "Pseudowords"]

Pseudowords = Mapping[str, torch.Tensor] | Sequence[Mapping[str, torch.Tensor]] | None


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores candidates for prompts (models and baselines alike)."""

    name: str

    def score(self, prompts: Sequence[str], candidates: Sequence[str], *,
              pseudowords: Pseudowords = None, batch_size: int = 32) -> np.ndarray:
        """Return float scores [len(prompts), len(candidates)]; higher is better."""
        ...


class SlotScorer(Protocol):
    """Scores every candidate of a fixed vocabulary for the ``[MASK]`` slot of prompts."""

    vocabulary: Any  # models.distributions.Vocabulary
    method: str

    def score(self, prompts: Sequence[str]) -> np.ndarray:
        """[len(prompts), len(vocabulary)] log-scores; higher is better."""
        ...

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        ...


@dataclass(eq=False)
class LanguageModel(ABC):
    """A model ready for probing: weights in eval mode on `device`, plus its tokenizer."""

    name: str
    model: Any  # transformers.PreTrainedModel
    tokenizer: Any  # transformers tokenizer
    device: str
    #: Where the weights were read from (a directory); for presets and GGUF files, the cache entry.
    source: str | None = None
    #: Timings and cache facts of the load (``{"converted": bool, "seconds": float}``).
    info: dict = field(default_factory=dict)

    #: The family's name in run settings and messages ("masked", "causal").
    kind: ClassVar[str]
    #: A ``[MASK]`` slot anywhere in a text is read in one pass; else only a slot that ends
    #: the prompt can be read from one distribution (the next token).
    fills_masks: ClassVar[bool]
    #: It can answer with the next token after a question (an option letter).
    answers_next_token: ClassVar[bool]
    #: How token log-probabilities of a multi-token candidate are pooled by default.
    default_pooling: ClassVar[str]
    #: Which token's final hidden state is a prompt's feature by default (COPEN App. A.2).
    feature_pooling: ClassVar[str]
    #: Where pseudowords are sampled: near the mask token or the mean embedding.
    pseudoword_anchor: ClassVar[str]
    #: The transformers auto class `load_model` reads the weights with.
    auto_class: ClassVar[str]
    #: Its scores go through the persistent score cache (`models.score_cache`).
    caches_scores: ClassVar[bool] = True

    # ------------------------------------------------------------------ training data
    def trained_on(self, answers: Iterable[Sequence[str] | str]) -> "LanguageModel":
        """The model after seeing the gold answers of a relation's training records.

        Every study hands each model the training answers of the relation it asks, the same
        way, so none asks which model learns from them: a pretrained model's knowledge comes
        from pretraining and it returns itself without reading `answers` (a study may pass a
        lazy iterable and pay nothing); the frequency baseline returns a copy fitted to them.
        """
        return self

    # ------------------------------------------------------------------ ranking fillers
    def scorer(self, *, masks: str = "multi", pooling: str | None = None,
               include_suffix: bool | str = AUTO, share_prefix: bool = True) -> Scorer:
        """A `Scorer` of candidate fillers of the ``[MASK]`` slot.

        `pooling` ``"mean"`` | ``"max"`` | ``"first"`` | ``"sum"`` (default `default_pooling`).
        Masked LMs use `masks` (``"multi"`` | ``"single"``); causal LMs use `include_suffix`
        (add the log-probability of the text after the slot: ``"auto"``, the default, where
        it holds more than punctuation, see `models.cloze`; True / False always / never) and
        `share_prefix`; each ignores the other's options.
        """
        if pooling is not None and pooling not in POOLINGS:
            raise ModelError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
        return self._scorer(masks=masks, pooling=pooling or self.default_pooling,
                            include_suffix=include_suffix, share_prefix=share_prefix)

    @abstractmethod
    def _scorer(self, *, masks: str, pooling: str, include_suffix: bool | str, share_prefix: bool) -> Scorer:
        ...

    # ------------------------------------------------------------------ distributions
    @abstractmethod
    def slot_distribution(self, vocabulary: Any, *, batch_size: int = 32) -> SlotScorer:
        """The model's own distribution at a prompt's slot over a single-token `vocabulary`
        (`models.distributions.Vocabulary`); where the model does not `fill_masks`, the slot
        must end the prompt."""

    @abstractmethod
    def next_token_logits(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        """Float32 logits [len(rows), V] of the token after each row of token ids."""

    def letter_scores(self, questions: Sequence[str], options: Sequence[Mapping[str, str]], *,
                      instruction: str = "", use_chat_template: bool | None = None,
                      batch_size: int = 4) -> list[dict[str, float]]:
        """Per question, letter → log-probability of that option letter as the token after
        the question (`options`: letter → option text, per question; `models.letters`)."""
        from kgprobe.models.letters import letter_logprobs

        return letter_logprobs(self, questions, options, instruction=instruction,
                               use_chat_template=use_chat_template, batch_size=batch_size)

    # ------------------------------------------------------------------ open answers
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 8,
                 stop: Sequence[str] = ("\n", "."), chat: bool = False,
                 candidates: Sequence[Sequence[str]] | None = None,
                 batch_size: int = 16, pseudowords=None) -> list[str]:
        """The model's own answer to each prompt: its greedy continuation, at most
        `max_new_tokens` tokens, cut at the first `stop` text (`models.generation`).
        `candidates` (per prompt) are read only by the baselines (copy names one, random draws
        one); `chat` asks for the model's chat template where it has one; `pseudowords` (one
        slot → vector mapping, or one per prompt) are placed at their slots, as a scorer
        places them. Only a model that continues text can answer: a masked LM says so in one
        line."""
        raise refusal(self.name, "generate", f"it is a {self.kind} LM; --answers generate "
                      "needs a causal LM (a decoder such as smollm2-135m)")

    # ------------------------------------------------------------------ text segments
    @abstractmethod
    def segment_frame(self, front: list[int], back: list[int]) -> tuple[list[int], list[int]]:
        """The ids before and after a segmented prompt's text, given the tokenizer's own special
        tokens around a text (`front`, `back`); see `models.segments.PromptCodec`."""

    @abstractmethod
    def token_logprobs(self, encoded: Sequence[TaggedIds], parts: Sequence[str] = (ALL,),
                       groups: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
        """Per encoded prompt, the log-probability of each token of the requested `parts` (NaN
        where not scored). `groups` (indices into `encoded`) share a prefix where the model
        can run it once."""

    def score_segments(self, prompts: Sequence[Prompt], parts: Sequence[str],
                       spans: Sequence[tuple[int, int]] | None = None) -> dict[str, np.ndarray]:
        """Part → mean log-probability per prompt; every distinct prompt is scored once, and
        the prompts of a span (one item's choices) share their prefix where the model can."""
        return score_prompts(self, prompts, parts, spans)

    @abstractmethod
    def features(self, prompts: Sequence[Prompt], pooling: str | None = None,
                 spans: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        """[len(prompts), hidden] frozen final hidden states (`pooling` default
        `feature_pooling`)."""

    # ------------------------------------------------------------------ embeddings
    def input_embeddings(self) -> torch.Tensor:
        """The static input embeddings [V, H] as the first layer sees them.

        Equals ``model.get_input_embeddings()(arange(V))``: the weight matrix, times
        ``embed_scale`` for models whose embedding module scales its output (Gemma). Pseudoword
        vectors live in this space and are injected unchanged through ``inputs_embeds``.
        """
        module = self.model.get_input_embeddings()
        with torch.no_grad():
            weight = module.weight.detach()
            scale = getattr(module, "embed_scale", None)
            scale = 1.0 if scale is None else scale
            if isinstance(scale, torch.Tensor):
                scale = scale.to(weight.dtype)
            return weight * scale if not (isinstance(scale, float) and scale == 1.0) else weight

    @property
    def hidden_size(self) -> int:
        """Width of the input embeddings (and of pseudoword vectors)."""
        return int(self.model.get_input_embeddings().weight.shape[1])


LanguageModel.register(Baseline)
