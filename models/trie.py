"""The token trie of a candidate set and its tree attention layout.

Candidates that share a tokenised prefix share positions: one forward pass over the trie's
nodes, each attending to the prompt and to its own ancestors, scores every candidate at once.
"""

from __future__ import annotations

from typing import Sequence

import torch

#: Most trie nodes one forward pass holds, by device type. The tree mask is dense, so a
#: pass of N nodes spends ~N/3000 of its model FLOPs (SmolLM2-135M) on attention scores
#: that are mostly masked out: irrelevant for candidates alone (~200 nodes per 256 of them),
#: but a scored suffix adds its length in nodes to every candidate, and 256 candidates
#: with a 10-token suffix would otherwise make one 2 600-node pass (+85 % work). A GPU keeps
#: such passes whole (4096: its throughput wants large forwards; not measured here).
MAX_NODES = {"cpu": 512, "cuda": 4096}


class CandidateTrie:
    """Token trie of continuation inputs (every token of a continuation but its last).

    Nodes are numbered in creation order, so a parent always precedes its children; a node
    is keyed by (parent, token id, pseudoword slot name) so that two different slots, which
    share the placeholder id, never merge.
    """

    def __init__(self):
        self.tok: list[int] = []
        self.slot: list[str | None] = []
        self.parent: list[int] = []  # -1: the prefix's last position
        self.depth: list[int] = []  # 1 for a continuation's first token
        self._index: dict[tuple[int, int, str | None], int] = {}

    def add(self, ids: Sequence[int], slots: Sequence[tuple[int, str]]) -> list[int]:
        """Insert ``ids[:-1]``; return, for each token t of `ids`, the logits row that predicts
        it: 0 for the prefix's last position, ``1 + node`` for the node holding ``ids[:t]``."""
        names = dict(slots)
        rows = [0]
        cur = -1
        for t in range(len(ids) - 1):
            key = (cur, ids[t], names.get(t))
            node = self._index.get(key)
            if node is None:
                node = self._index[key] = len(self.tok)
                self.tok.append(ids[t])
                self.slot.append(names.get(t))
                self.parent.append(cur)
                self.depth.append(1 if cur < 0 else self.depth[cur] + 1)
            cur = node
            rows.append(1 + node)
        return rows


def tree_layout(n_prefix: int, parent: Sequence[int], depth: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Position ids [N] and boolean attention pattern [N, N] of ``prefix + nodes``: the prefix
    is causal; a node sees the prefix, its ancestors and itself."""
    n = len(parent)
    size = n_prefix + n
    dep = torch.tensor(list(depth), dtype=torch.long)
    pos = torch.cat([torch.arange(n_prefix), n_prefix - 1 + dep])
    allowed = torch.zeros((size, size), dtype=torch.bool)
    allowed[:n_prefix, :n_prefix] = torch.ones((n_prefix, n_prefix), dtype=torch.bool).tril()
    if n:
        par = torch.tensor([n_prefix - 1 if p < 0 else n_prefix + p for p in parent], dtype=torch.long)
        for d in range(1, int(dep.max()) + 1):  # parents (depth d - 1) are complete before depth d
            sel = (dep == d).nonzero().squeeze(1)
            rows = n_prefix + sel
            allowed[rows] = allowed[par[sel]]
            allowed[rows, rows] = True
    return pos, allowed


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype, device) -> torch.Tensor:
    """[1, 1, N, N] additive mask (0 where allowed, the dtype's minimum elsewhere)."""
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None].to(device)


def trie_indices(batch, rows, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(node row, token id) per candidate and position, zero-padded, and each candidate's length:
    what gathers a candidate's token log-probabilities from the per-node logits of its trie.
    `batch`: the candidates' (token ids, …) tuples; `rows`: their node rows (`CandidateTrie.add`)."""
    width = max(len(c[0]) for c in batch)
    row_idx = torch.zeros((len(batch), width), dtype=torch.long)
    tok_idx = torch.zeros((len(batch), width), dtype=torch.long)
    for j, (c, r) in enumerate(zip(batch, rows)):
        row_idx[j, : len(r)] = torch.tensor(r, dtype=torch.long)
        tok_idx[j, : len(c[0])] = torch.tensor(c[0], dtype=torch.long)
    lengths = torch.tensor([len(c[0]) for c in batch], device=device)
    return row_idx.to(device), tok_idx.to(device), lengths


def chunk_order(conts, batch_size: int, max_nodes: int) -> list[list[int]]:
    """Continuation indices in chunks of at most `batch_size`, each trie at most `max_nodes`
    nodes (a continuation longer than that gets a chunk of its own). Sorted by ids, so
    continuations that share first tokens land together; a continuation's new nodes are
    counted against its predecessor (an upper bound: the trie shares at least that much).
    `conts`: the continuations' (token ids, …) tuples."""
    order = sorted(range(len(conts)), key=lambda k: conts[k][0])
    chunks: list[list[int]] = []
    nodes, prev = 0, None
    for k in order:
        ids = conts[k][0][:-1]
        shared = 0
        if prev is not None and chunks:
            while shared < min(len(ids), len(prev)) and ids[shared] == prev[shared]:
                shared += 1
        new = len(ids) - shared
        if not chunks or len(chunks[-1]) >= max(1, batch_size) or (nodes + new > max_nodes and chunks[-1]):
            chunks.append([])
            nodes, new = 0, len(ids)
        chunks[-1].append(k)
        nodes += new
        prev = ids
    return chunks
