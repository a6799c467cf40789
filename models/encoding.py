"""Turning a prompt with a ``[MASK]`` slot (and optional pseudoword slots) into token ids.

Both scorer families build their inputs from separately tokenised pieces:

    front specials + prefix pieces + <slot: [MASK]s or candidate tokens> + suffix pieces (+ back specials)

Every text piece is tokenised on its own (``add_special_tokens=False``) *as it appears in
the sentence*: a piece that follows a space is encoded as a mid-sentence word (a BPE
tokenizer's leading-space tokens such as ``ĠFrance``), a piece at the very start as a
sentence-initial word, and a piece glued to what precedes it (``[X]'s``) without a space.
Mid-sentence encoding takes the ids of ``". " + piece`` minus those of ``"."`` (checked to be
a prefix, otherwise falls back to encoding ``" " + piece``); this works for byte-level BPE
(GPT-2, RoBERTa, SmolLM2), SentencePiece with or without a dummy prefix (Llama, Gemma) and
WordPiece (BERT), where spaces do not matter. Candidates are encoded the same way, so a
candidate's ids do not depend on the surrounding words (only on whether a space precedes
the slot), and scorers (and tests' reference loops) concatenate these ids.

Pseudoword slots (``[X]``, ``[Y]``, or any literal key such as a soft token ``<s1>``) given
with a vector become ONE position each; its id is a placeholder and its input embedding is
replaced by the vector (`inputs_embeds`). Without a vector for a slot, its literal text stays
part of the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from kgprobe.errors import KgprobeError, ModelError, TemplateError
from kgprobe.ontology.verbalize import MASK

__all__ = [
    "MASK",
    "Pseudo",
    "Encoded",
    "PromptEncoder",
    "split_prompt",
    "normalize_pseudowords",
]


@dataclass(frozen=True)
class Pseudo:
    """A pseudoword slot in a split prompt (name like ``"[X]"``)."""

    name: str


@dataclass
class Encoded:
    """Token ids with pseudoword positions (``slots``: (position, slot name))."""

    ids: list[int]
    slots: list[tuple[int, str]]

    def shifted(self, offset: int) -> list[tuple[int, str]]:
        return [(p + offset, n) for p, n in self.slots]


def slot_key(name: str) -> str:
    """Slot keys are the literal text of the slot (``"[X]"``, ``"<s1>"``); a bare ``"X"`` means ``"[X]"``."""
    name = str(name).strip()
    if (name.startswith("[") and name.endswith("]")) or (name.startswith("<") and name.endswith(">")):
        return name
    return f"[{name}]"


def normalize_pseudowords(
    pseudowords: Mapping[str, torch.Tensor] | Sequence[Mapping[str, torch.Tensor]] | None,
    n_prompts: int,
    hidden_size: int,
) -> list[dict[str, torch.Tensor]] | None:
    """One ``{"[X]": vector}`` dict per prompt (shared mapping -> repeated), validated."""
    if pseudowords is None:
        return None
    if isinstance(pseudowords, Mapping):
        per_prompt: Sequence[Mapping[str, torch.Tensor]] = [pseudowords] * n_prompts
    else:
        per_prompt = list(pseudowords)
        if len(per_prompt) != n_prompts:
            raise ValueError(f"got {len(per_prompt)} pseudoword mappings for {n_prompts} prompts; pass one per prompt or one shared mapping")
    out = []
    for mapping in per_prompt:
        norm: dict[str, torch.Tensor] = {}
        for key, vec in (mapping or {}).items():
            vec = torch.as_tensor(vec)
            if vec.dim() != 1 or vec.shape[0] != hidden_size:
                raise ValueError(f"pseudoword {key!r} must be a 1-D vector of size {hidden_size}, got shape {tuple(vec.shape)}")
            norm[slot_key(key)] = vec
        out.append(norm)
    return out


def split_prompt(prompt: str, slot_names: Sequence[str] = ()) -> tuple[list, list]:
    """Split at the single ``[MASK]``; pseudoword slots named in `slot_names` become `Pseudo`."""
    count = prompt.count(MASK)
    if count != 1:
        raise TemplateError(f"prompt must contain exactly one {MASK} slot, found {count}: {prompt!r}; fix the template")
    before, after = prompt.split(MASK)
    return _split_slots(before, slot_names), _split_slots(after, slot_names)


def _split_slots(text: str, slot_names: Sequence[str]) -> list:
    if not slot_names:
        return [text] if text else []
    pattern = "(" + "|".join(re.escape(n) for n in sorted(set(slot_names), key=len, reverse=True)) + ")"
    pieces: list = []
    names = set(slot_names)
    for part in re.split(pattern, text):
        if part in names:
            pieces.append(Pseudo(part))
        elif part:
            pieces.append(part)
    return pieces


def split_slots(text: str, slot_names: Sequence[str]) -> list:
    """A text without a ``[MASK]`` (a generation prompt) split at the pseudoword slots named."""
    return _split_slots(text, slot_names)


class PromptEncoder:
    """Tokenises prompt pieces and candidates consistently (see module docstring)."""

    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        self._cache: dict[tuple[str, str], list[int]] = {}
        self._anchor_space = self._ids(".")
        self._anchor_glued = self._ids("a")
        core = self._ids("a")
        full = list(tokenizer("a", add_special_tokens=True)["input_ids"])
        self.front: list[int] = []
        self.back: list[int] = []
        for i in range(len(full) - len(core) + 1):
            if full[i : i + len(core)] == core:
                self.front, self.back = full[:i], full[i + len(core) :]
                break
        placeholder = tokenizer.unk_token_id
        if placeholder is None:
            placeholder = tokenizer.pad_token_id
        self.placeholder: int = int(placeholder) if placeholder is not None else 0

    def _ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def encode_text(self, body: str, mode: str) -> list[int]:
        """Ids of `body` (no surrounding spaces) at the sentence ``start``, after a ``space``, or ``glued``."""
        key = (body, mode)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if mode == "start":
            ids = self._ids(body)
        else:
            anchor_text, anchor = (".", self._anchor_space) if mode == "space" else ("a", self._anchor_glued)
            sep = " " if mode == "space" else ""
            full = self._ids(anchor_text + sep + body)
            if full[: len(anchor)] == anchor and len(full) > len(anchor):
                ids = full[len(anchor) :]
            else:
                ids = self._ids(sep + body)
        self._cache[key] = ids
        return ids

    def encode_pieces(self, pieces: Sequence, *, at_start: bool, space_before: bool) -> tuple[Encoded, bool, bool]:
        """Encode text/`Pseudo` pieces in order; returns (encoded, at_start, space_before) after them."""
        ids: list[int] = []
        slots: list[tuple[int, str]] = []
        for piece in pieces:
            if isinstance(piece, Pseudo):
                slots.append((len(ids), piece.name))
                ids.append(self.placeholder)
                at_start, space_before = False, False
                continue
            body = piece.strip()
            if not body:
                space_before = space_before or bool(piece)
                continue
            if at_start:
                mode = "start"
            elif space_before or piece[0].isspace():
                mode = "space"
            else:
                mode = "glued"
            ids.extend(self.encode_text(body, mode))
            at_start, space_before = False, piece[-1].isspace()
        return Encoded(ids, slots), at_start, space_before

    def encode_verbatim(self, text: str, slot_names: Sequence[str] = (), *,
                        front: bool = False) -> Encoded:
        """`text`'s ids as rendered, its spaces and newlines kept (a chat template's header,
        which ends where the assistant's statement starts), after the tokenizer's specials
        with `front`; a pseudoword slot named in `slot_names` is its vector there too."""
        ids, slots = list(self.front) if front else [], []
        for piece in _split_slots(text, slot_names):
            if isinstance(piece, Pseudo):
                slots.append((len(ids), piece.name))
                ids.append(self.placeholder)
            elif piece:
                ids.extend(self._ids(piece))
        return Encoded(ids, slots)

    def candidate_mode(self, at_start: bool, space_before: bool) -> str:
        return "start" if at_start else ("space" if space_before else "glued")

    def encode_candidate(self, candidate: str, mode: str, model_name: str = "model") -> list[int]:
        body = " ".join(str(candidate).split())
        ids = self.encode_text(body, mode) if body else []
        if not ids:
            raise ModelError(f"candidate {candidate!r} has no tokens for {model_name}; remove empty candidates")
        return ids


POOLINGS = ("mean", "max", "first", "sum")


def check_candidates(candidates: Sequence[str], model_name: str) -> None:
    """Ranking nothing is a mistake upstream (an empty label set), not an empty result."""
    if len(candidates) == 0:
        raise KgprobeError(f"no candidates to rank for {model_name}; give at least one candidate "
                           "(is the ontology's label set empty?)")


class TensorScorer:
    """Shared `score` of the model scorers: their differentiable `score_tensor` without
    gradients, as float64 numpy."""

    def score(self, prompts: Sequence[str], candidates: Sequence[str], *, pseudowords=None,
              batch_size: int = 32) -> np.ndarray:
        """Scores [len(prompts), len(candidates)] as float64 numpy (no gradients)."""
        with torch.no_grad():
            out = self.score_tensor(prompts, candidates, pseudowords=pseudowords,
                                    batch_size=batch_size)
        return out.double().cpu().numpy()

    def score_tensor(self, prompts: Sequence[str], candidates: Sequence[str], *, pseudowords=None,
                     batch_size: int = 32) -> torch.Tensor:
        """Like `score` but a float32 tensor on the model's device. With gradients enabled it is
        differentiable with respect to the pseudoword vectors (e.g. trained soft tokens)."""
        check_candidates(candidates, self.name)
        hidden = self.loaded.model.get_input_embeddings().weight.shape[1]
        per_prompt = normalize_pseudowords(pseudowords, len(prompts), hidden)
        return self._score_tensor(prompts, candidates, per_prompt, batch_size)

    def _score_tensor(self, prompts: Sequence[str], candidates: Sequence[str],
                      per_prompt: list | None, batch_size: int) -> torch.Tensor:
        raise NotImplementedError


def pool_logprobs(token_lp: torch.Tensor, lengths: torch.Tensor, pooling: str) -> torch.Tensor:
    """Pool per-token log-probs [N, L] (valid entries ``[:, :lengths]``) into [N] scores."""
    n, width = token_lp.shape
    valid = torch.arange(width, device=token_lp.device).unsqueeze(0) < lengths.to(token_lp.device).unsqueeze(1)
    if pooling == "first":
        return token_lp[:, 0]
    if pooling == "max":
        return token_lp.masked_fill(~valid, float("-inf")).max(dim=1).values
    total = token_lp.masked_fill(~valid, 0.0).sum(dim=1)
    if pooling == "sum":
        return total
    if pooling == "mean":
        return total / lengths.to(total.dtype)
    raise ValueError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")


def inject(embeds: torch.Tensor, row: int, slots: Sequence[tuple[int, str]], vectors: Mapping[str, torch.Tensor]) -> None:
    """Write pseudoword vectors into ``embeds[row, position]`` in place."""
    for pos, name in slots:
        embeds[row, pos] = vectors[name].to(device=embeds.device, dtype=embeds.dtype)
