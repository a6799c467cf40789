"""Candidate scoring with causal (decoder-only) language models.

The candidate fills the ``[MASK]`` slot and is scored by its conditional log-probability
given the text before the slot::

    score(c) = pool_t log P(c_t | prefix, c_<t)   [ + sum_s log P(suffix_s | prefix, c, suffix_<s) ]

with pooling ``sum`` (default: the candidate's log-probability), ``mean``, ``first`` or
``max``. With ``include_suffix=True`` the total log-probability of the text after the slot
(a fixed string, so this measures how well the candidate fits what follows) is added to
the pooled candidate score; pseudoword positions in the suffix are inputs, never targets.

Token ids: prefix, candidate and suffix are tokenised separately (see `encoding`) and
concatenated: ``front specials + prefix | candidate | suffix``. If that leaves nothing
before the candidate, the tokenizer's BOS (else EOS) token is used as the context.

Prefix sharing: the prefix is run once per prompt with ``use_cache=True``; its
`DynamicCache` is deep-copied and expanded over a batch of candidates
(`Cache.batch_repeat_interleave`), and only the candidates' (right-padded) tokens are run
on top of it. Right padding needs no attention mask under causal attention: padded tokens
come after every scored position. The result equals scoring each full sequence
separately up to float round-off (tested to 1e-4).
"""

from __future__ import annotations

import copy
from typing import Mapping, Sequence

import numpy as np
import torch

from kgprobe.errors import ModelError

from .encoding import Encoded, PromptEncoder, inject, normalize_pseudowords, pool_logprobs, split_prompt
from .models import LoadedModel

__all__ = ["CausalScorer"]


class CausalScorer:
    """Scores candidates as continuations of the prompt's text before ``[MASK]``."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        pooling: str = "sum",
        include_suffix: bool = False,
        share_prefix: bool = True,
    ):
        self.loaded = loaded
        self.pooling = pooling
        self.include_suffix = include_suffix
        self.share_prefix = share_prefix
        tok = loaded.tokenizer
        self.encoder = PromptEncoder(tok)
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.start_id = int(start) if start is not None else None

    @property
    def name(self) -> str:
        return self.loaded.name

    # ------------------------------------------------------------------
    def encode(
        self, prompt: str, candidates: Sequence[str], vectors: Mapping[str, torch.Tensor] | None = None
    ) -> tuple[Encoded, list[list[int]], Encoded]:
        """(prefix incl. specials, candidate ids, suffix) exactly as `score` uses them."""
        enc = self.encoder
        prefix, suffix = split_prompt(prompt, list(vectors) if vectors else ())
        pre, at_start, space = enc.encode_pieces(prefix, at_start=True, space_before=False)
        suf, _, _ = enc.encode_pieces(suffix, at_start=False, space_before=False)
        ids = enc.front + pre.ids
        slots = pre.shifted(len(enc.front))
        if not ids:
            if self.start_id is None:
                raise ModelError(
                    f"prompt {prompt!r} has no text before [MASK] and model '{self.name}' has no BOS/EOS token "
                    "to condition on; put text before the slot"
                )
            ids = [self.start_id]
        mode = enc.candidate_mode(at_start, space)
        cands = [enc.encode_candidate(c, mode, self.name) for c in candidates]
        return Encoded(ids, slots), cands, suf

    # ------------------------------------------------------------------
    def score(
        self,
        prompts: Sequence[str],
        candidates: Sequence[str],
        *,
        pseudowords=None,
        batch_size: int = 32,
    ) -> np.ndarray:
        """Scores [len(prompts), len(candidates)] as float64 numpy (no gradients)."""
        with torch.no_grad():
            out = self.score_tensor(prompts, candidates, pseudowords=pseudowords, batch_size=batch_size)
        return out.double().cpu().numpy()

    def score_tensor(
        self,
        prompts: Sequence[str],
        candidates: Sequence[str],
        *,
        pseudowords=None,
        batch_size: int = 32,
    ) -> torch.Tensor:
        """Like `score` but a float32 tensor on the model's device. With gradients enabled it is
        differentiable with respect to the pseudoword vectors (it then runs full sequences,
        since a cache holding graph tensors cannot be copied)."""
        model = self.loaded.model
        hidden = model.get_input_embeddings().weight.shape[1]
        per_prompt = normalize_pseudowords(pseudowords, len(prompts), hidden)
        rows = []
        for i, prompt in enumerate(prompts):
            vectors = per_prompt[i] if per_prompt else {}
            if not candidates:
                rows.append(torch.zeros(0, device=self._device()))
                continue
            prefix, cands, suffix = self.encode(prompt, candidates, vectors)
            conts = []
            for c in cands:
                if self.include_suffix:
                    targets = [1] * len(c) + [2] * len(suffix.ids)
                    for pos, _ in suffix.slots:
                        targets[len(c) + pos] = 0
                    conts.append((c + suffix.ids, suffix.shifted(len(c)), targets, len(c)))
                else:
                    conts.append((c, [], [1] * len(c), len(c)))
            if self.share_prefix and not torch.is_grad_enabled():
                rows.append(self._score_shared(prefix, conts, vectors, batch_size))
            else:
                rows.append(self._score_full(prefix, conts, vectors, batch_size))
        if not rows:
            return torch.zeros((0, len(candidates)), device=self._device())
        return torch.stack(rows)

    # ------------------------------------------------------------------
    def _device(self):
        return next(self.loaded.model.parameters()).device

    def _inputs(self, rows: list[list[int]], slots: list[list[tuple[int, str]]], vectors) -> dict:
        """Right-padded batch as input_ids, or inputs_embeds when pseudowords occur."""
        device = self._device()
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.encoder.placeholder, dtype=torch.long)
        for b, r in enumerate(rows):
            ids[b, : len(r)] = torch.tensor(r, dtype=torch.long)
        ids = ids.to(device)
        if any(slots):
            embeds = self.loaded.model.get_input_embeddings()(ids)
            for b, s in enumerate(slots):
                if s:
                    inject(embeds, b, s, vectors)
            return {"inputs_embeds": embeds}
        return {"input_ids": ids}

    def _pool(self, token_lp: torch.Tensor, conts) -> torch.Tensor:
        """token_lp [B, W]: log-prob of continuation token t; pool candidate part, add suffix."""
        device = token_lp.device
        width = token_lp.shape[1]
        kinds = torch.zeros((len(conts), width), dtype=torch.long, device=device)
        for b, (_ids, _slots, targets, _n) in enumerate(conts):
            kinds[b, : len(targets)] = torch.tensor(targets, device=device)
        cand_len = torch.tensor([n for *_rest, n in conts], device=device)
        cand_width = int(cand_len.max())
        pooled = pool_logprobs(token_lp[:, :cand_width], cand_len, self.pooling)
        if self.include_suffix:
            pooled = pooled + token_lp.masked_fill(kinds != 2, 0.0).sum(dim=1)
        return pooled

    def _score_shared(self, prefix: Encoded, conts, vectors, batch_size: int) -> torch.Tensor:
        model = self.loaded.model
        out = model(**self._inputs([prefix.ids], [prefix.slots], vectors), use_cache=True)
        last = out.logits[0, -1].float()
        first_lp = last - torch.logsumexp(last, dim=-1)
        cache = out.past_key_values
        del out
        if not hasattr(cache, "batch_repeat_interleave"):  # not a transformers Cache: no sharing
            return self._score_full(prefix, conts, vectors, batch_size)
        result = torch.zeros(len(conts), device=first_lp.device)
        order = sorted(range(len(conts)), key=lambda k: len(conts[k][0]))
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            batch = [conts[k] for k in idx]
            width = max(len(c[0]) for c in batch)
            token_lp = torch.zeros((len(batch), width), device=first_lp.device)
            token_lp[:, 0] = first_lp[torch.tensor([c[0][0] for c in batch], device=first_lp.device)]
            if width > 1:
                rows = [c[0][:-1] for c in batch]
                slots = [[(p, n) for p, n in c[1] if p < len(c[0]) - 1] for c in batch]
                past = copy.deepcopy(cache)
                past.batch_repeat_interleave(len(batch))
                logits = model(**self._inputs(rows, slots, vectors), past_key_values=past, use_cache=True).logits.float()
                del past
                token_lp[:, 1:] = _gather_logprobs(logits, batch, offset=1)
            result[torch.tensor(idx, device=result.device)] = self._pool(token_lp, batch)
        return result

    def _score_full(self, prefix: Encoded, conts, vectors, batch_size: int) -> torch.Tensor:
        """Path without cache: each row is prefix + continuation (minus its last token)."""
        model = self.loaded.model
        p = len(prefix.ids)
        parts = []
        for b in range(0, len(conts), batch_size):
            batch = conts[b : b + batch_size]
            rows = [prefix.ids + c[0][:-1] for c in batch]
            slots = [prefix.slots + [(p + q, n) for q, n in c[1] if q < len(c[0]) - 1] for c in batch]
            logits = model(**self._inputs(rows, slots, vectors)).logits[:, p - 1 :].float()
            parts.append(self._pool(_gather_logprobs(logits, batch, offset=0), batch))
        return torch.cat(parts)


def _gather_logprobs(logits: torch.Tensor, batch, *, offset: int) -> torch.Tensor:
    """log P(cont[t]) from ``logits[:, t - offset]`` for t in [offset, width); zeros past each row's end."""
    width = max(len(c[0]) for c in batch)
    n = width - offset
    targets = torch.zeros((len(batch), n), dtype=torch.long, device=logits.device)
    for b, c in enumerate(batch):
        seq = c[0][offset:]
        targets[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    logits = logits[:, :n]
    lp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    valid = torch.arange(n, device=logits.device).unsqueeze(0) < torch.tensor(
        [len(c[0]) - offset for c in batch], device=logits.device
    ).unsqueeze(1)
    return lp.masked_fill(~valid, 0.0)
