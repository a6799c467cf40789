"""What the premise-ablation study ranks: every candidate of a kind, or the gold and K − 1.

Under ``--candidates all`` every prompt of a kind ranks the same candidate list; under
``--candidates K`` each item (and each premise probe) ranks its gold among its own K − 1
seeded distractors (`reasoning.distractors`). Either way prompts that share a candidate list
go to the scorer together, so the model batches them (and the score cache serves repeats).
"""

from __future__ import annotations

from kgprobe.reasoning.items import ReasoningItem
from kgprobe.studies.batches import Request, score_requests  # noqa: F401 (used by the study)


def item_candidates(study, item: ReasoningItem) -> list[str]:
    """The candidates an item's hypothesis ranks under the run's protocol."""
    pool = study.candidates[item.candidates_key]
    return study.protocol.candidates(pool, item.answers, seed=f"{study.config.seed}:{item.id}")


def premise_candidates(study, candidates_key: str, answer: str, key: str) -> list[str]:
    """The candidates a premise's memorizing probe ranks (seeded by the premise's `key`)."""
    pool = study.candidates[candidates_key]
    return study.protocol.candidates(pool, [answer], seed=f"{study.config.seed}:{key}")
