"""Scoring whole prompts by parts, and frozen features, for the COPEN methods.

`models.scoring` ranks fillers of one ``[MASK]`` slot; COPEN's zero-shot probing instead
scores a *text part* of a filled prompt (Tables 8 and 11): the query entity, the candidate,
the concept, the answer word, or all of it. A prompt is therefore a list of `Segment`s, each
tagged with the part it belongs to, and scoring returns one log-probability per token:

* causal LMs (`causal_logprobs`): log P(token | every token before it), one forward pass per
  prompt; the first text token is conditioned on the tokenizer's BOS (else EOS) token, as in
  `CausalScorer`;
* masked LMs (`masked_pll`): the pseudo-log-likelihood of the paper, one masked copy per
  scored token, log P(token | the prompt with that token masked).

Each `LanguageModel` picks its own (`token_logprobs`) and frames a prompt's ids with its own
special tokens (`segment_frame`); the functions here serve both.

A part's score is the mean log-probability of its tokens; ``all`` averages every text token
(the negative log-perplexity, which orders prompts as the paper's negative perplexity does).

Segments are tokenised piece by piece with `models.encoding.PromptEncoder`, like the
project's scorers, so a part's tokens never depend on its neighbours.

`batched_features` and `shared_prefix_features` return the final hidden state of one token per
prompt (Appendix A.2: [CLS] for BERT-like models, the last token for GPT-like ones; the model's
`feature_pooling`) from the model's base network, without running the vocabulary head.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
import torch
from kgprobe.models.encoding import PromptEncoder

ALL = "all"
#: Log-probability budget per forward pass: tokens × vocabulary floats (~256 MB).
_LOGIT_BUDGET = 64_000_000
#: Padded tokens per batch of the rest of a shared-prefix group: small batches of similar
#: length waste less compute on padding than one wide batch (CPU-bound).
_GROUP_BUDGET = 128


@dataclass(frozen=True)
class Segment:
    text: str
    tag: str = ""  # the part this text belongs to ("" for template words)


Prompt = tuple[Segment, ...]


@dataclass
class TaggedIds:
    """A segmented prompt's token ids, each tagged with the part it came from."""

    ids: list[int]
    tags: list[str | None]  # None for special tokens, "" for template words, else the part


class SegmentModel(Protocol):
    """What the functions here use of a `models.language_model.LanguageModel` (which imports
    this module, so it is named by its shape here)."""

    model: Any
    tokenizer: Any

    @property
    def hidden_size(self) -> int: ...

    def segment_frame(self, front: list[int], back: list[int]) -> tuple[list[int], list[int]]: ...

    def token_logprobs(self, encoded: Sequence[TaggedIds], parts: Sequence[str],
                       groups: Sequence[Sequence[int]] | None) -> list[np.ndarray]: ...


class PromptCodec:
    """Token ids of segmented prompts for one model (cached per model)."""

    def __init__(self, loaded: SegmentModel):
        self.loaded = loaded
        self.enc = PromptEncoder(loaded.tokenizer)
        self.front, self.back = loaded.segment_frame(list(self.enc.front), list(self.enc.back))

    def encode(self, prompt: Sequence[Segment]) -> TaggedIds:
        ids: list[int] = []
        tags: list[str | None] = []
        at_start, space = True, False
        for seg in prompt:
            if not seg.text:
                continue
            e, at_start, space = self.enc.encode_pieces([seg.text], at_start=at_start, space_before=space)
            ids.extend(e.ids)
            tags.extend([seg.tag] * len(e.ids))
        front, back = self.front, self.back
        return TaggedIds(front + ids + back, [None] * len(front) + tags + [None] * len(back))


def _device(loaded: SegmentModel) -> torch.device:
    return next(loaded.model.parameters()).device


def _batches(lengths: Sequence[int], budget_tokens: int) -> list[list[int]]:
    """Indices grouped by length so that a batch stays under `budget_tokens` padded tokens."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out, cur, width = [], [], 0
    for i in order:
        w = max(width, lengths[i])
        if cur and w * (len(cur) + 1) > budget_tokens:
            out.append(cur)
            cur, w = [], lengths[i]
        cur.append(i)
        width = w
    if cur:
        out.append(cur)
    return out


def _pad(rows: Sequence[Sequence[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[b, : len(r)] = 1
    return ids.to(device), mask.to(device)


def _vocab(loaded: SegmentModel) -> int:
    return int(loaded.model.get_output_embeddings().weight.shape[0])


def _lcp(rows: Sequence[Sequence[int]]) -> int:
    n = min(len(r) for r in rows)
    for i in range(n):
        if any(r[i] != rows[0][i] for r in rows):
            return i
    return n


def _shared_runs(module, rows: Sequence[Sequence[int]], pad: int, device, budget: int):
    """Run `rows` (one group) as: their common prefix once, then every row's rest in batches
    on a copy of the prefix's key/value cache (right-padded: under causal attention padding
    comes after every real position, so it changes nothing). Yields ``("prefix", L, output)``
    then ``("rest", L, batch_rows, output)``; with no usable prefix, L is 0 and every row
    runs whole. Each row keeps at least one token for the second pass."""
    L = min(_lcp(rows), min(len(r) for r in rows) - 1) if len(rows) > 1 else 0
    cache = None
    if L >= 1:
        out = module(input_ids=torch.tensor([list(rows[0][:L])], device=device), use_cache=True)
        cache = out.past_key_values
        yield "prefix", L, None, out
    else:
        L = 0
    for batch in _batches([len(r) - L for r in rows], budget):
        ids, mask = _pad([list(rows[i][L:]) for i in batch], pad, device)
        if cache is None:
            out = module(input_ids=ids, attention_mask=mask)
        else:
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(batch))
            out = module(input_ids=ids, past_key_values=past, use_cache=True)
        yield "rest", L, batch, out


@torch.no_grad()
def causal_logprobs(loaded: SegmentModel, encoded: Sequence[TaggedIds],
                    groups: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
    """Per prompt, log P(token | tokens before it) of every token that has one before it (NaN
    for the first); the prompts of a group (indices into `encoded`, e.g. one item's choices)
    run their common prefix once."""
    groups = groups if groups is not None else [[i] for i in range(len(encoded))]
    model, device = loaded.model, _device(loaded)
    pad = loaded.tokenizer.pad_token_id or 0
    budget = max(32, min(_GROUP_BUDGET, _LOGIT_BUDGET // _vocab(loaded)))
    out: list[np.ndarray] = [np.full(len(e.ids), np.nan) for e in encoded]
    for group in groups:
        rows = [encoded[i].ids for i in group]
        first = None  # log-probs of the token after the prefix, from the prefix's last logits
        for kind, L, batch, res in _shared_runs(model, rows, pad, device, budget):
            logits = res.logits.float()
            if kind == "prefix":
                lse = torch.logsumexp(logits[0], dim=-1)
                ids = torch.tensor(rows[0][:L], device=device)
                shared = (logits[0, :-1].gather(-1, ids[1:].unsqueeze(-1)).squeeze(-1) - lse[:-1]).cpu().numpy()
                first = (logits[0, -1] - lse[-1]).cpu().numpy()
                for i in group:
                    out[i][1:L] = shared
                continue
            lse = torch.logsumexp(logits[:, :-1], dim=-1)
            ids, _ = _pad([list(rows[b][L:]) for b in batch], pad, device)
            lp = (logits[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1) - lse).cpu().numpy()
            for k, b in enumerate(batch):
                i, n = group[b], len(rows[b])
                if first is not None:
                    out[i][L] = first[rows[b][L]]
                out[i][L + 1:n] = lp[k, : n - L - 1]
    return out


@torch.no_grad()
def masked_pll(loaded: SegmentModel, encoded: Sequence[TaggedIds], parts: Sequence[str] = (ALL,)) -> list[np.ndarray]:
    """Per prompt, the pseudo-log-likelihood of the tokens of the requested `parts` (every text
    token for ``all``; NaN elsewhere), one masked copy each."""
    wanted = set(parts)

    def scored(tag: str | None) -> bool:
        return tag is not None and (ALL in wanted or tag in wanted)

    model, device = loaded.model, _device(loaded)
    mask_id = loaded.tokenizer.mask_token_id
    pad = loaded.tokenizer.pad_token_id or 0
    copies = [(i, p) for i, e in enumerate(encoded) for p, tag in enumerate(e.tags) if scored(tag)]
    out: list[np.ndarray] = [np.full(len(e.ids), np.nan) for e in encoded]
    budget = max(32, _LOGIT_BUDGET // _vocab(loaded))
    for batch in _batches([len(encoded[i].ids) for i, _ in copies], budget):
        rows = []
        for k in batch:
            i, p = copies[k]
            row = list(encoded[i].ids)
            row[p] = mask_id
            rows.append(row)
        ids, att = _pad(rows, pad, device)
        logits = model(input_ids=ids, attention_mask=att).logits.float()
        pos = torch.tensor([copies[k][1] for k in batch], device=device)
        at = logits[torch.arange(len(batch), device=device), pos]
        gold = torch.tensor([encoded[copies[k][0]].ids[copies[k][1]] for k in batch], device=device)
        lp = (at.gather(-1, gold.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(at, dim=-1)).cpu().numpy()
        for b, k in enumerate(batch):
            i, p = copies[k]
            out[i][p] = lp[b]
    return out


def part_score(enc: TaggedIds, token_lp: np.ndarray, part: str) -> float:
    """Mean log-probability of the part's scored tokens (NaN when it has none)."""
    sel = [i for i, t in enumerate(enc.tags) if t is not None and (part == ALL or t == part)
           and not np.isnan(token_lp[i])]
    return float(np.mean(token_lp[sel])) if sel else float("nan")


def _unique_groups(prompts: Sequence[Prompt], spans: Sequence[tuple[int, int]] | None):
    """Distinct prompts, the index of each prompt among them, and the groups (spans of
    `prompts`) as lists of distinct-prompt indices, each distinct prompt in one group only."""
    unique = list(dict.fromkeys(prompts))
    index = {p: i for i, p in enumerate(unique)}
    spans = spans if spans is not None else [(i, i + 1) for i in range(len(prompts))]
    placed: set[int] = set()
    groups = []
    for a, b in spans:
        g = [index[p] for p in dict.fromkeys(prompts[a:b]) if index[p] not in placed]
        placed.update(g)
        if g:
            groups.append(g)
    groups += [[i] for i in range(len(unique)) if i not in placed]
    return unique, index, groups


def score_prompts(loaded: SegmentModel, prompts: Sequence[Prompt], parts: Sequence[str],
                  spans: Sequence[tuple[int, int]] | None = None) -> dict[str, np.ndarray]:
    """Score every distinct prompt once; returns part → score per prompt. `spans` group the
    prompts that share a prefix (one item's choices) for causal models."""
    codec = PromptCodec(loaded)
    unique, index, groups = _unique_groups(prompts, spans)
    encoded = [codec.encode(p) for p in unique]
    lps = loaded.token_logprobs(encoded, parts, groups)
    per_unique = {part: np.array([part_score(e, lp, part) for e, lp in zip(encoded, lps)])
                  for part in parts}
    return {part: scores[[index[p] for p in prompts]] if prompts else np.zeros(0)
            for part, scores in per_unique.items()}


# ----------------------------------------------------------------------------- features

#: How a prompt's final hidden states become one feature vector (not `encoding.POOLINGS`,
#: which pool a candidate's token log-probabilities).
FEATURE_POOLINGS = ("first", "last", "mean")


def base_network(model) -> torch.nn.Module:
    """The transformer under the LM head (``model.bert``, ``model.model``, ``model.transformer``)."""
    base = getattr(model, "base_model", None)
    return base if base is not None and base is not model else model


def pooled_hidden(loaded: SegmentModel, rows: Sequence[TaggedIds], pooling: str,
                  base: torch.nn.Module | None = None) -> torch.Tensor:
    """[len(rows), hidden] final hidden states (differentiable; callers choose no_grad)."""
    base = base or base_network(loaded.model)
    device = _device(loaded)
    pad = loaded.tokenizer.pad_token_id or 0
    ids, mask = _pad([r.ids for r in rows], pad, device)
    hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state
    if pooling == "first":
        return hidden[:, 0]
    lengths = mask.sum(dim=1)
    if pooling == "last":
        return hidden[torch.arange(len(rows), device=device), lengths - 1]
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / m.sum(dim=1)
    raise ValueError(f"unknown pooling {pooling!r}; use one of {', '.join(FEATURE_POOLINGS)}")


@torch.no_grad()
def batched_features(loaded: SegmentModel, prompts: Sequence[Prompt], pooling: str,
                     budget_tokens: int = 2048) -> np.ndarray:
    """Frozen features of each prompt, distinct prompts run once, in length-sorted batches."""
    encoded, index = _encode_unique(loaded, prompts)
    base = base_network(loaded.model)
    hidden = np.zeros((len(encoded), loaded.hidden_size), dtype=np.float32)
    for batch in _batches([len(e.ids) for e in encoded], budget_tokens):
        hidden[batch] = pooled_hidden(loaded, [encoded[i] for i in batch], pooling, base).float().cpu().numpy()
    return hidden[[index[p] for p in prompts]] if prompts else hidden[:0]


@torch.no_grad()
def shared_prefix_features(loaded: SegmentModel, prompts: Sequence[Prompt],
                           spans: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """The last token's final hidden state of each prompt under causal attention: the prompts
    of a span (one item's choices) run their common prefix once."""
    codec = PromptCodec(loaded)
    unique, index, groups = _unique_groups(prompts, spans)
    encoded = [codec.encode(p) for p in unique]
    base = base_network(loaded.model)
    hidden = np.zeros((len(unique), loaded.hidden_size), dtype=np.float32)
    pad = loaded.tokenizer.pad_token_id or 0
    for group in groups:
        rows = [encoded[i].ids for i in group]
        for kind, L, batch, res in _shared_runs(base, rows, pad, _device(loaded), _GROUP_BUDGET):
            if kind == "rest":
                h = res.last_hidden_state.float()
                for k, b in enumerate(batch):
                    hidden[group[b]] = h[k, len(rows[b]) - L - 1].cpu().numpy()
    return hidden[[index[p] for p in prompts]] if prompts else hidden[:0]


def _encode_unique(loaded: SegmentModel, prompts: Sequence[Prompt]):
    codec = PromptCodec(loaded)
    unique = list(dict.fromkeys(prompts))
    return [codec.encode(p) for p in unique], {p: i for i, p in enumerate(unique)}
