"""Candidate scoring with masked language models (OntoProbe §3.1.2).

*Multiple masks* (``masks="multi"``): a candidate of n tokens is scored in the prompt with n
``[MASK]`` tokens; the i-th token's log-probability is read at the i-th mask. One forward
pass per (prompt, distinct candidate length) serves every candidate of that length.

*Single mask* (``masks="single"``): one ``[MASK]``; every token of the candidate is scored
at that same mask (an independent prediction of each token).

The token log-probs are pooled with ``mean`` (paper default), ``max``, ``first`` or ``sum``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch
from kgprobe.errors import ModelError
from kgprobe.models.encoding import (
    PromptEncoder,
    TensorScorer,
    inject,
    pool_logprobs,
    split_prompt,
)
from kgprobe.models.language_model import LanguageModel

__all__ = ["MaskedScorer"]


class MaskedScorer(TensorScorer):
    """Scores candidates at the ``[MASK]`` slot of a masked LM. See module docstring."""

    def __init__(self, loaded: LanguageModel, *, masks: str = "multi", pooling: str = "mean"):
        if masks not in ("multi", "single"):
            raise ModelError(f"unknown mask method {masks!r}; use multi or single")
        tok = loaded.tokenizer
        if getattr(tok, "mask_token_id", None) is None:
            raise ModelError(
                f"tokenizer of model '{loaded.name}' has no mask token, so masked scoring is impossible; "
                "use a masked LM such as BERT or a causal method"
            )
        self.loaded = loaded
        self.masks = masks
        self.pooling = pooling
        self.encoder = PromptEncoder(tok)
        self.mask_id = int(tok.mask_token_id)
        pad = tok.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.mask_id

    @property
    def name(self) -> str:
        return self.loaded.name

    # ------------------------------------------------------------------
    def _prepare(self, prompt: str, vectors: Mapping[str, torch.Tensor] | None):
        enc = self.encoder
        prefix, suffix = split_prompt(prompt, list(vectors) if vectors else ())
        pre, at_start, space = enc.encode_pieces(prefix, at_start=True, space_before=False)
        suf, _, _ = enc.encode_pieces(suffix, at_start=False, space_before=False)
        return pre, suf, enc.candidate_mode(at_start, space)

    def build(self, prompt: str, n_masks: int, vectors: Mapping[str, torch.Tensor] | None = None):
        """(ids, mask positions, pseudoword slots) of `prompt` with `n_masks` masks (for tests, too)."""
        pre, suf, _ = self._prepare(prompt, vectors)
        front, back = self.encoder.front, self.encoder.back
        start = len(front) + len(pre.ids)
        ids = front + pre.ids + [self.mask_id] * n_masks + suf.ids + back
        slots = pre.shifted(len(front)) + suf.shifted(start + n_masks)
        return ids, list(range(start, start + n_masks)), slots

    # ------------------------------------------------------------------
    def _score_tensor(self, prompts: Sequence[str], candidates: Sequence[str],
                      per_prompt: list | None, batch_size: int) -> torch.Tensor:
        model = self.loaded.model
        device = next(model.parameters()).device
        scores = torch.zeros((len(prompts), len(candidates)), dtype=torch.float32, device=device)
        if not prompts:
            return scores

        # Candidate ids per tokenisation mode, grouped by length.
        cand_cache: dict[str, list[list[int]]] = {}
        jobs = []  # (prompt index, n_masks, ids, mask positions, slots)
        modes = []
        max_len = getattr(model.config, "max_position_embeddings", None)
        for i, prompt in enumerate(prompts):
            vectors = per_prompt[i] if per_prompt else None
            _pre, _suf, mode = self._prepare(prompt, vectors)
            modes.append(mode)
            if mode not in cand_cache:
                cand_cache[mode] = [self.encoder.encode_candidate(c, mode, self.name) for c in candidates]
            lengths = sorted({len(c) for c in cand_cache[mode]}) if self.masks == "multi" else [1]
            for n in lengths:
                ids, positions, slots = self.build(prompt, n, vectors)
                if max_len and len(ids) > max_len:
                    raise ModelError(f"prompt {prompt[:40]!r}… needs {len(ids)} tokens but model "
                                     f"'{self.name}' takes at most {max_len}; shorten the prompt")
                jobs.append((i, n, ids, positions, slots))

        groups = {
            mode: _group_by_length(cids, self.masks == "multi", device) for mode, cids in cand_cache.items()
        }
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][2]))
        for b in range(0, len(order), batch_size):
            batch = [jobs[j] for j in order[b : b + batch_size]]
            logits = self._forward(batch, per_prompt, device)
            for row, (i, n, _ids, positions, _slots) in enumerate(batch):
                at_mask = logits[row, positions].float()  # [n, V]
                lp = at_mask - torch.logsumexp(at_mask, dim=-1, keepdim=True)
                group = groups[modes[i]]
                if self.masks == "multi":
                    index, cand_ids, lengths = group[n]
                    token_lp = lp[torch.arange(n, device=lp.device).unsqueeze(0), cand_ids]  # [k, n]
                else:
                    index, cand_ids, lengths = group[0]
                    token_lp = lp[0][cand_ids]  # [k, Lmax]
                scores[i, index.to(device)] = pool_logprobs(token_lp, lengths, self.pooling)
        return scores

    def _forward(self, batch, per_prompt, device) -> torch.Tensor:
        model = self.loaded.model
        width = max(len(job[2]) for job in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, job in enumerate(batch):
            ids[row, : len(job[2])] = torch.tensor(job[2])
            attention[row, : len(job[2])] = 1
        ids, attention = ids.to(device), attention.to(device)
        if any(job[4] for job in batch):
            embeds = model.get_input_embeddings()(ids)
            for row, job in enumerate(batch):
                if job[4]:
                    inject(embeds, row, job[4], per_prompt[job[0]])
            return model(inputs_embeds=embeds, attention_mask=attention).logits
        return model(input_ids=ids, attention_mask=attention).logits


def _group_by_length(cand_ids: list[list[int]], by_length: bool, device) -> dict:
    """{length: (candidate indices, ids [k, L], lengths)}; with by_length=False one padded group 0."""
    if not by_length:
        width = max(len(c) for c in cand_ids)
        padded = torch.tensor([c + [c[0]] * (width - len(c)) for c in cand_ids], device=device)
        lengths = torch.tensor([len(c) for c in cand_ids], device=device)
        return {0: (torch.arange(len(cand_ids)), padded, lengths)}
    groups: dict[int, list[int]] = {}
    for k, c in enumerate(cand_ids):
        groups.setdefault(len(c), []).append(k)
    return {
        n: (
            torch.tensor(members),
            torch.tensor([cand_ids[k] for k in members], device=device),
            torch.full((len(members),), n, device=device),
        )
        for n, members in groups.items()
    }
