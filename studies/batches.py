"""Scoring many prompts against candidate lists, in chunks, with a named progress bar.

Every ranking study scores prompts against candidate lists; grouping the prompts that share a
list lets the model batch them (and the score cache serve repeats), and scoring a group in
chunks keeps a progress bar moving through phases that take minutes (a prompt against ~800
candidates takes seconds on a CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from tqdm import tqdm

#: Prompts per scorer call: large enough to batch, small enough for a live progress bar.
CHUNK = 32


@dataclass
class Request:
    """One prompt to score against `candidates`, with its pseudoword (and soft) vectors."""

    prompt: str
    candidates: tuple[str, ...]
    vectors: Mapping | None = None


def score_requests(scorer, requests: Sequence[Request], *, batch_size: int, desc: str,
                   progress: bool = True) -> list[np.ndarray]:
    """Score rows of `requests` (in their order); prompts sharing candidates go together."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, req in enumerate(requests):
        groups.setdefault(req.candidates, []).append(i)
    rows: list[np.ndarray | None] = [None] * len(requests)
    with tqdm(total=len(requests), desc=desc, unit="prompt", disable=not progress,
              leave=False) as bar:
        for cands, idx in groups.items():
            for start in range(0, len(idx), CHUNK):
                part = idx[start : start + CHUNK]
                vectors = [dict(requests[i].vectors or {}) for i in part]
                scores = scorer.score([requests[i].prompt for i in part], list(cands),
                                      pseudowords=vectors if any(vectors) else None,
                                      batch_size=batch_size)
                for i, row in zip(part, scores):
                    rows[i] = row
                bar.update(len(part))
    return rows  # type: ignore[return-value]
