"""Integer triple keys for the RDFS engine: sorted per-predicate arrays, reachability, joins.

A triple (s, p, o) over n interned terms is the key ``s * n + o`` in predicate p's sorted,
duplicate-free int64 array; keeping the key predicate-independent lets rdfs7 move facts
between predicates without decoding them (see `kgprobe.reasoning.rdfs_engine`).
"""

from __future__ import annotations

from itertools import chain
from typing import Iterator

import numpy as np

from kgprobe.errors import InferenceLimitError

EMPTY = np.zeros(0, dtype=np.int64)
#: The most candidate keys an operator builds before adding them (32 MB of int64): bounds
#: the memory a rule's expansion takes, so `KeyStore.limit` is checked before it grows.
CHUNK = 1 << 22


def dedup_sorted(a: np.ndarray) -> np.ndarray:
    if a.size < 2:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def isin_sorted(values: np.ndarray, sorted_arr: np.ndarray) -> np.ndarray:
    """Boolean mask: which of `values` occur in the sorted array."""
    if sorted_arr.size == 0 or values.size == 0:
        return np.zeros(values.size, dtype=bool)
    pos = np.searchsorted(sorted_arr, values)
    np.minimum(pos, sorted_arr.size - 1, out=pos)
    return sorted_arr[pos] == values


class KeyStore:
    """Per-predicate sorted key arrays plus an append log for semi-naive evaluation.

    `limit`: the most keys `add` may derive beyond the initial ones (None: no limit); past
    it an `InferenceLimitError`, so a closure that grows with the square of its input stops
    while its arrays are still small (`reserve` refuses before the candidates are built)."""

    def __init__(self, n_terms: int, limit: int | None = None):
        self.n = n_terms
        self.full: dict[int, np.ndarray] = {}
        self.log: dict[int, list[np.ndarray]] = {}
        self.limit = limit
        self.derived = 0  # keys added beyond the initial ones

    def reserve(self, more: int) -> None:
        """Refuse when `more` new keys would pass `limit` (before anything is built)."""
        if self.limit is not None and self.derived + more > self.limit:
            raise InferenceLimitError(self.derived + more, self.limit)

    def version(self, p: int) -> int:
        log = self.log.get(p)
        return len(log) if log else 0

    def since(self, p: int, version: int) -> np.ndarray:
        chunks = self.log.get(p, ())[version:]
        if not chunks:
            return EMPTY
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def get(self, p: int) -> np.ndarray:
        return self.full.get(p, EMPTY)

    def set_initial(self, p: int, keys: np.ndarray) -> None:
        self.full[p] = keys
        self.log[p] = [keys]

    def add(self, p: int, cand: np.ndarray) -> int:
        """Add candidate keys (any order, duplicates allowed); return how many were new."""
        if cand.size == 0:
            return 0
        cand = dedup_sorted(np.sort(cand))
        old = self.full.get(p)
        if old is None or old.size == 0:
            new = cand
            self.reserve(int(new.size))
            self.full[p] = new
        else:
            new = cand[~isin_sorted(cand, old)]
            if new.size == 0:
                return 0
            self.reserve(int(new.size))
            self.full[p] = np.insert(old, np.searchsorted(old, new), new)
        self.derived += int(new.size)
        self.log.setdefault(p, []).append(new)
        return int(new.size)

    def compact(self) -> None:
        """Drop the append logs once saturated (each becomes one chunk: the full array)."""
        self.log = {p: [k] for p, k in self.full.items()}

    # decoding helpers
    def pairs(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        k = self.get(p)
        return k // self.n, k % self.n


def reach_sets(src: np.ndarray, dst: np.ndarray,
               limit: int | None = None) -> dict[int, frozenset[int]]:
    """For each node with an out-edge, the nodes reachable by a path of length >= 1.

    `limit`: the most (node, reached) pairs to hold; past it an `InferenceLimitError` naming
    how many were found so far (a chain of n nodes reaches n²/2: stopped before it is built).

    Iterative Tarjan: strongly connected components come out sinks first, so each
    component's successors are finished before it.  A node reaches itself exactly
    when it lies on a cycle (component of size > 1, or a self-loop).  Iterative because
    it runs on every subclass/subproperty hierarchy, and recursion would overflow on
    deep chains.
    """
    adj: dict[int, list[int]] = {}
    for a, b in zip(src.tolist(), dst.tolist()):
        adj.setdefault(a, []).append(b)
    walk = _Tarjan(adj, limit)
    for root in adj:
        if root not in walk.index:
            walk.visit(root)
    return walk.reach


class _Tarjan:
    """The state of one Tarjan pass (`reach_sets`), kept on an object so that entering a
    node, walking the edges and closing a component are each one method."""

    def __init__(self, adj: dict[int, list[int]], limit: int | None = None):
        self.adj = adj
        self.limit, self.pairs = limit, 0
        self.reach: dict[int, frozenset[int]] = {}
        self.index: dict[int, int] = {}
        self.low: dict[int, int] = {}
        self.on_stack: set[int] = set()
        self.stack: list[int] = []

    def _enter(self, v: int, work: list) -> None:
        self.index[v] = self.low[v] = len(self.index)
        self.stack.append(v)
        self.on_stack.add(v)
        work.append((v, iter(self.adj.get(v, ()))))

    def visit(self, root: int) -> None:
        """Every component reachable from `root` that is not finished yet, sinks first."""
        index, low, on_stack = self.index, self.low, self.on_stack
        work: list = []
        self._enter(root, work)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    self._enter(w, work)
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            else:  # every edge of v seen: v is finished
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] == index[v]:
                    self._close(v)

    def _close(self, v: int) -> None:
        """Pop the component rooted at `v` and record what its members reach: their
        successors and whatever those reach (finished already, sinks come first)."""
        comp = []
        while True:
            w = self.stack.pop()
            self.on_stack.discard(w)
            comp.append(w)
            if w == v:
                break
        succ: set[int] = set()
        for c in comp:
            succ.update(self.adj.get(c, ()))
        if not succ:
            return
        members = set(comp)
        out = set(succ)
        for w in succ:
            if w not in members:
                r = self.reach.get(w)
                if r:
                    out |= r
        fr = frozenset(out)
        for c in comp:
            if c in self.adj:
                self.reach[c] = fr
                self.pairs += len(fr)
        if self.limit is not None and self.pairs > self.limit:
            raise InferenceLimitError(self.pairs, self.limit)


def csr(reach: dict[int, frozenset[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted node ids, per-node start offsets and lengths, and the concatenated targets."""
    nodes = sorted(reach)
    lens = np.fromiter((len(reach[v]) for v in nodes), dtype=np.int64, count=len(nodes))
    starts = np.zeros(len(nodes), dtype=np.int64)
    if len(nodes) > 1:
        np.cumsum(lens[:-1], out=starts[1:])
    targets = np.fromiter(chain.from_iterable(reach[v] for v in nodes), dtype=np.int64, count=int(lens.sum()))
    return np.asarray(nodes, dtype=np.int64), starts, lens, targets


def expand(keys: np.ndarray, n: int, csr, by_object: bool) -> np.ndarray:
    """For keys (s, o): produce s*n + t for every t in csr-targets of o (or of s, swapping)."""
    parts = list(expand_parts(keys, n, csr, by_object))
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else EMPTY


def expand_parts(keys: np.ndarray, n: int, csr, by_object: bool,
                 most: int | None = None) -> Iterator[np.ndarray]:
    """`expand`, in parts of about `most` keys each (one key's whole expansion at least):
    rdfs9 over a million instances of a deep class builds its candidates a part at a time,
    so the store's limit stops it before they are all in memory."""
    nodes, starts, lens, targets = csr
    if keys.size == 0 or nodes.size == 0:
        return
    s, o = keys // n, keys % n
    look, keep = (o, s) if by_object else (s, o)
    pos = np.searchsorted(nodes, look)
    np.minimum(pos, nodes.size - 1, out=pos)
    hit = nodes[pos] == look
    pos, keep = pos[hit], keep[hit]
    cnt = lens[pos]
    ends = np.cumsum(cnt)
    lo = 0
    while lo < cnt.size:
        done = int(ends[lo - 1]) if lo else 0
        hi = cnt.size if most is None else max(
            lo + 1, int(np.searchsorted(ends, done + most, side="right")))
        c, total = cnt[lo:hi], int(ends[hi - 1]) - done
        if total:
            first = np.cumsum(c) - c
            offs = np.repeat(starts[pos[lo:hi]] - first, c) + np.arange(total, dtype=np.int64)
            yield np.repeat(keep[lo:hi], c) * n + targets[offs]
        lo = hi
