"""What the premise-ablation study ranks, and scoring many prompts with a progress bar.

Under ``--candidates all`` every prompt of a kind ranks the same candidate list; under
``--candidates K`` each item (and each premise probe) ranks its gold among its own K − 1
seeded distractors (`reasoning.distractors`). Either way prompts that share a candidate list
go to the scorer together, so the model batches them (and the score cache serves repeats).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from kgprobe.reasoning.items import ReasoningItem
from tqdm import tqdm

#: Prompts per scorer call: large enough to batch, small enough for a live progress bar.
CHUNK = 32


@dataclass
class Request:
    """One prompt to score against `candidates`, with its pseudoword (and soft) vectors."""

    prompt: str
    candidates: tuple[str, ...]
    vectors: Mapping | None = None


def item_candidates(study, item: ReasoningItem) -> list[str]:
    """The candidates an item's hypothesis ranks under the run's protocol."""
    pool = study.candidates[item.candidates_key]
    return study.protocol.candidates(pool, item.answers, seed=f"{study.config.seed}:{item.id}")


def premise_candidates(study, candidates_key: str, answer: str, key: str) -> list[str]:
    """The candidates a premise's memorizing probe ranks (seeded by the premise's `key`)."""
    pool = study.candidates[candidates_key]
    return study.protocol.candidates(pool, [answer], seed=f"{study.config.seed}:{key}")


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
