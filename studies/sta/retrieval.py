"""Concept retrieval from conjunctions of human-produced properties (Weir et al. 2020, §Probing).

For a concept, properties are selected and ordered (a `Condition`), and prompt n conjoins the
first n of them: "A [MASK] has fur .", "A [MASK] has fur and is big .", "A [MASK] has fur, is
big, and has claws ." … up to 10. The model ranks every candidate of the vocabulary for the
slot; the score of a prompt is the target's rank (MRR = mean of 1/rank) and the probability
it gets.

Conditions (paper §Selecting and Ordering Prompts, Figure 3):

* ``top-dec`` (the paper's default): the 10 highest-PF properties, PF decreasing;
* ``top-inc``: the same 10, PF increasing (prompt 1 holds the 10th most produced);
* ``bottom-dec`` / ``bottom-inc``: the 10 lowest-PF properties, decreasing / increasing;
* ``random``: 5 random 10-property sets × 5 random orders each (25 sequences per concept),
  seeded per concept, metrics averaged over all 25;
* ``group:<type>``: only properties of one feature type (visual perceptual, functional,
  encyclopaedic, …), top-PF decreasing (Figure 3a).

PF ties are broken by the norms file's order, so selections are deterministic. A concept
with fewer than n properties in a condition has no prompt of size n there (`n_prompts`
in the results says how many concepts each point averages).

Templates: ``statement`` is the paper's ("A [MASK] has fur ."); ``question`` ("What has fur?
It is a [MASK] .") puts the slot last for causal LMs (see `retrieval_prompt`).

Determiners: the paper writes "A [MASK] …" and skips concepts that begin with a vowel
sound (LMs use "a"/"an" as a cue). ``determiner="the"`` writes "The [MASK] …" ("It is the
[MASK]"), which accepts every concept, so none is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from kgprobe.ontology.norms import Concept, Feature, conjoin
from kgprobe.ontology.verbalize import MASK
from kgprobe.prompts.texts import prompt_texts
from kgprobe.studies.metrics import gold_ranks, stable_seed

__all__ = [
    "MAX_PROPERTIES",
    "ORDER_CONDITIONS",
    "Condition",
    "RetrievalPrompt",
    "conditions",
    "property_sequences",
    "retrieval_prompt",
    "build_prompts",
    "score_prompts",
    "summarize",
]

MAX_PROPERTIES = 10
ORDER_CONDITIONS = ("top-dec", "top-inc", "bottom-dec", "bottom-inc", "random")
RANDOM_SETS = 5
RANDOM_PERMUTATIONS = 5
DETERMINERS = ("a", "the")
TEMPLATES = ("statement", "question")


@dataclass(frozen=True)
class Condition:
    name: str  # "top-dec", "random", "group:functional"

    @property
    def group(self) -> str | None:
        return self.name.split(":", 1)[1] if self.name.startswith("group:") else None


@dataclass
class RetrievalPrompt:
    concept: str  # norms key
    target: str  # the word the slot should hold
    condition: str
    n: int  # number of properties
    sequence: int  # which property sequence of the condition (random: 0..24, else 0)
    properties: list[str]
    prompt: str


def conditions(groups: Sequence[str]) -> list[Condition]:
    return [Condition(c) for c in ORDER_CONDITIONS] + [Condition(f"group:{g}") for g in groups]


def _rng(seed: int, *parts: object) -> np.random.Generator:
    """A generator that depends only on the seed and the parts (not on run order or --limit)."""
    return np.random.default_rng(stable_seed(seed, *parts))


def property_sequences(concept: Concept, condition: Condition, *, seed: int = 0,
                       k: int = MAX_PROPERTIES, random_sets: int = RANDOM_SETS,
                       random_permutations: int = RANDOM_PERMUTATIONS) -> list[list[Feature]]:
    """The ordered property sequences of `concept` under `condition` (prompt n = first n)."""
    feats = concept.features  # PF decreasing, file order among ties
    name = condition.name
    if name == "top-dec":
        return [feats[:k]]
    if name == "top-inc":
        return [list(reversed(feats[:k]))]
    if name == "bottom-dec":
        return [feats[-k:]] if feats else [[]]
    if name == "bottom-inc":
        return [list(reversed(feats[-k:]))]
    if name == "random":
        rng = _rng(seed, concept.key, "random")
        size = min(k, len(feats))
        out = []
        for _ in range(random_sets):
            chosen = rng.choice(len(feats), size=size, replace=False)
            for _ in range(random_permutations):
                out.append([feats[i] for i in rng.permutation(chosen)])
        return out
    group = condition.group
    if group is not None:
        return [[f for f in feats if f.group == group][:k]]
    raise ValueError(f"unknown retrieval condition {name!r}")


def retrieval_prompt(phrases: Sequence[str], determiner: str = "a", template: str = "statement") -> str:
    """The prompt for a property sequence.

    ``statement`` (the paper's Figure 1): "A [MASK] has fur, is big, and has claws ."
    ``question``: "What has fur, is big, and has claws? It is a [MASK] ." — the same
    conjunction, with the slot at the end, so a causal LM's next-token distribution ranks the
    whole vocabulary in one pass (the analogue of the mask distribution).
    """
    if determiner not in DETERMINERS:
        raise ValueError(f"unknown determiner {determiner!r}; use one of {', '.join(DETERMINERS)}")
    if template in TEMPLATES:
        return prompt_texts("sta")["retrieval"][template].format(
            Determiner=determiner.capitalize(), determiner=determiner, mask=MASK,
            properties=conjoin(phrases))
    raise ValueError(f"unknown retrieval template {template!r}; use one of {', '.join(TEMPLATES)}")


def build_prompts(concepts: Sequence[Concept], condition: Condition, n: int, *,
                  determiner: str = "a", template: str = "statement", seed: int = 0,
                  **random_kw) -> list[RetrievalPrompt]:
    """Every prompt with exactly `n` properties under `condition`, concepts in the given order."""
    out = []
    for concept in concepts:
        for s, seq in enumerate(property_sequences(concept, condition, seed=seed, **random_kw)):
            if len(seq) < n:
                continue
            phrases = [f.phrase for f in seq[:n]]
            out.append(RetrievalPrompt(concept.key, concept.word, condition.name, n, s, phrases,
                                       retrieval_prompt(phrases, determiner, template)))
    return out


def score_prompts(prompts: Sequence[RetrievalPrompt], scores: np.ndarray, probs: np.ndarray,
                  targets: Sequence[int], words: Sequence[str], *, top: int = 5) -> list[dict]:
    """Per-prompt records: the target's rank (pessimistic ties), probability and the top words."""
    records = []
    for i, (p, t) in enumerate(zip(prompts, targets)):
        row = scores[i]
        rank = int(gold_ranks(row, [t])[0])
        best = np.argsort(-row, kind="stable")[:top]
        records.append({
            "concept": p.concept, "target": p.target, "n": p.n, "sequence": p.sequence,
            "prompt": p.prompt, "rank": rank, "rr": 1.0 / rank, "p_target": float(probs[i, t]),
            "top": [[words[j], round(float(probs[i, j]), 6)] for j in best],
        })
    return records


def summarize(records: Sequence[dict]) -> dict:
    """MRR, R@1, R@10, mean target probability and median rank over prompts.

    Each concept counts once: its prompts (several for ``random``) are averaged first, so
    the random baseline averages over its 25 sequences per concept, as the paper does.
    """
    if not records:
        return {"n_prompts": 0, "n_concepts": 0}
    by_concept: dict[str, list[dict]] = {}
    for r in records:
        by_concept.setdefault(r["concept"], []).append(r)

    def mean(key, fn=lambda r, k: r[k]):
        return float(np.mean([np.mean([fn(r, key) for r in rs]) for rs in by_concept.values()]))

    return {
        "n_prompts": len(records),
        "n_concepts": len(by_concept),
        "MRR": mean("rr"),
        "R@1": mean("rank", lambda r, k: float(r[k] <= 1)),
        "R@10": mean("rank", lambda r, k: float(r[k] <= 10)),
        "p_target": mean("p_target"),
        "median_rank": float(np.median([r["rank"] for r in records])),
    }
