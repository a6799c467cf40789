"""Token-trie scoring of several prompts in one forward pass (causal LMs).

`CausalScorer` scores one prompt's candidates as ``prefix + trie nodes`` under a tree mask
(``models/trie.py``). Prompts that rank the same candidates (the same continuation ids: same
candidate list, same spacing before the slot, and the same scored suffix, if any: e.g.
pseudoword prompts that differ only in their vectors) share the trie of every chunk, so they can run
as one batch: row b is ``left pads + prefix_b + nodes``, left-padded so that the prefix's last
position and the nodes sit at the same columns in every row (then ``logits_to_keep`` keeps
exactly them). A pad attends only to itself (it is never read), a prefix token to the prefix
before it, a node to its row's prefix and its own ancestors; position ids are those of the
unbatched pass, so every row computes what the single-prompt pass computes (tested to 1e-4).

This turns many small forwards (one prompt × one chunk: ~100–600 positions) into fewer large
ones, which is what keeps a GPU busy; on a CPU it saves the per-call overhead.
How many prompts go together is bounded by the float32 logits they produce
(`LOGIT_BUDGET` bytes: rows × (nodes + 1) × vocabulary × 4).
"""

from __future__ import annotations

from typing import Sequence

import torch
from kgprobe.models.encoding import Encoded, inject
from kgprobe.models.trie import CandidateTrie, additive_mask, chunk_order, tree_layout, trie_indices

__all__ = ["score_tree_batch", "LOGIT_BUDGET"]

#: Bytes of float32 logits one batched forward may produce, by device type.
LOGIT_BUDGET = {"cpu": 1 << 28, "cuda": 1 << 31}
_FULL, _SLIDING = "full_attention", "sliding_attention"


def _layout(prefix_lens: Sequence[int], trie: CandidateTrie) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Position ids [P, N] and allowed pattern [P, N, N] of the left-padded rows; and the
    padded prefix width."""
    width = max(prefix_lens)
    n = len(trie.tok)
    size = width + n
    pos = torch.zeros((len(prefix_lens), size), dtype=torch.long)
    allowed = torch.zeros((len(prefix_lens), size, size), dtype=torch.bool)
    for b, p in enumerate(prefix_lens):
        row_pos, row_allowed = tree_layout(p, trie.parent, trie.depth)
        off = width - p
        pos[b, off:] = row_pos
        allowed[b, off:, off:] = row_allowed
        idx = torch.arange(off)
        allowed[b, idx, idx] = True  # a pad sees itself: no empty softmax row
    return pos, allowed, width


def _tree_logits_batch(scorer, prefixes: Sequence[Encoded], trie: CandidateTrie,
                       vectors: Sequence[dict]) -> torch.Tensor:
    """Float32 logits [P, n + 1, V]: each prompt's last prefix position, then every node."""
    model = scorer.loaded.model
    device = scorer._device()
    n = len(trie.tok)
    pos, allowed, width = _layout([len(p.ids) for p in prefixes], trie)
    dtype = model.get_input_embeddings().weight.dtype
    full = torch.stack([additive_mask(a, dtype, device)[0] for a in allowed])
    kind = scorer._mask_kind(int(pos.max()) + 1)
    if kind == "layers":
        window = int(model.config.sliding_window)
        sliding = allowed & ((pos.unsqueeze(2) - pos.unsqueeze(1)) < window)
        masks = {_FULL: full, _SLIDING: torch.stack([additive_mask(s, dtype, device)[0] for s in sliding])}
    else:
        masks = full
    ids = torch.full((len(prefixes), width + n), scorer.encoder.placeholder, dtype=torch.long)
    slots = []
    for b, p in enumerate(prefixes):
        off = width - len(p.ids)
        ids[b, off:width] = torch.tensor(p.ids, dtype=torch.long)
        ids[b, width:] = torch.tensor(trie.tok, dtype=torch.long)
        slots.append(p.shifted(off) + [(width + i, s) for i, s in enumerate(trie.slot) if s is not None])
    ids = ids.to(device)
    if any(slots):
        embeds = model.get_input_embeddings()(ids)
        for b, s in enumerate(slots):
            if s:
                inject(embeds, b, s, vectors[b])
        inputs = {"inputs_embeds": embeds}
    else:
        inputs = {"input_ids": ids}
    kwargs = {"attention_mask": masks, "position_ids": pos.to(device), "use_cache": False}
    if scorer._takes_logits_to_keep():
        kwargs["logits_to_keep"] = n + 1
    logits = model(**inputs, **kwargs).logits[:, -(n + 1) :].float()
    scorer._count(len(prefixes) * (width + n),
                  len(prefixes) * (n + 1 if "logits_to_keep" in kwargs else width + n))
    return logits


def score_tree_batch(scorer, prefixes: Sequence[Encoded], conts, vectors: Sequence[dict],
                     batch_size: int) -> torch.Tensor:
    """Scores [len(prefixes), len(conts)]: every prompt against the same continuations."""
    device = scorer._device()
    result = torch.zeros((len(prefixes), len(conts)), device=device)
    vocab = scorer.loaded.model.get_output_embeddings().weight.shape[0] \
        if scorer.loaded.model.get_output_embeddings() is not None else 1
    budget = LOGIT_BUDGET.get(torch.device(device).type, LOGIT_BUDGET["cpu"])
    for idx in chunk_order(conts, batch_size, scorer._max_nodes()):  # as `_score_tree` chunks them
        batch = [conts[k] for k in idx]
        trie = CandidateTrie()
        rows = [trie.add(c[0], c[1]) for c in batch]
        row_idx, tok_idx, lengths = trie_indices(batch, rows, device)
        width = row_idx.shape[1]
        valid = torch.arange(width, device=device).unsqueeze(0) < lengths.unsqueeze(1)
        per_forward = max(1, int(budget // ((len(trie.tok) + 1) * vocab * 4)))
        where = torch.tensor(idx, device=device)
        for start in range(0, len(prefixes), per_forward):
            part = range(start, min(len(prefixes), start + per_forward))
            logits = _tree_logits_batch(scorer, [prefixes[i] for i in part], trie,
                                        [vectors[i] for i in part])
            lse = torch.logsumexp(logits, dim=-1)
            for k, i in enumerate(part):
                token_lp = (logits[k][row_idx, tok_idx] - lse[k][row_idx]).masked_fill(~valid, 0.0)
                result[i, where] = scorer._pool(token_lp, batch)
            del logits, lse
    return result
