"""Property elicitation (Weir et al. 2020, §Eliciting Properties): the model lists properties.

Prompts mimic the human norming question: "Everyone knows that a bear has [MASK] ." for the
relations *is*, *is a*, *has*, *has a* and *made of*. The gold answers of a (concept,
relation) are the concept's single-word human responses of that syntax ("has fur" → fur for
*has*, "has a tail" → tail for *has a*, "is made of metal" → metal for *made of*), with their
production frequencies.

Metrics, per prompt then averaged (Table 2):

* AP over the whole vocabulary (mAP_VOCAB) and over the *sensible set* (mAP_SENS): the gold
  words of that relation for all concepts of the norms — responses that fit the syntax;
* Spearman's ρ between the model's probabilities and the human PF among the gold answers
  (prompts with fewer than two gold answers, or all-equal PFs, have no ρ and are skipped).

``context="bare"`` drops "Everyone knows that" (the paper's ablation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from kgprobe.ontology.labels import with_article
from kgprobe.ontology.norms import Concept, Norms
from kgprobe.ontology.verbalize import MASK
from kgprobe.prompts.texts import prompt_texts
from kgprobe.studies.metrics import gold_ranks
from scipy.stats import spearmanr

__all__ = [
    "RELATIONS",
    "CONTEXTS",
    "ElicitationPrompt",
    "gold_answers",
    "sensible_sets",
    "elicitation_prompt",
    "build_prompts",
    "average_precision",
    "score_prompts",
    "summarize",
]

RELATIONS = ("is", "is a", "has", "has a", "made of")
CONTEXTS = ("everyone", "bare")


def _patterns() -> list[tuple[str, re.Pattern]]:
    """Verb phrase (as `norms` writes it) → relation; the captured word is the answer."""
    spec = prompt_texts("sta")["elicitation"]
    return [(relation, re.compile(regex.replace("{word}", spec["word"])))
            for relation, regex in spec["patterns"]]


_PATTERNS = _patterns()


@dataclass
class ElicitationPrompt:
    concept: str
    relation: str
    context: str
    prompt: str
    gold: dict[str, int]  # answer word → production frequency


def _relation_of(phrase: str) -> tuple[str, str] | None:
    for relation, pattern in _PATTERNS:
        m = pattern.match(phrase)
        if m:
            if relation == "is a" and phrase.startswith("is an "):
                return None  # "is an animal" does not fit "is a [MASK]"
            if relation == "has a" and phrase.startswith("has an "):
                return None
            return relation, m.group(1)
    return None


def gold_answers(concept: Concept) -> dict[str, dict[str, int]]:
    """{relation: {single-word answer: PF}} of one concept (the higher PF on duplicates)."""
    out: dict[str, dict[str, int]] = {}
    for f in concept.features:
        hit = _relation_of(f.phrase)
        if hit is None:
            continue
        relation, word = hit
        answers = out.setdefault(relation, {})
        answers[word] = max(answers.get(word, 0), f.pf)
    return out


def sensible_sets(norms: Norms) -> dict[str, list[str]]:
    """{relation: every gold answer of that syntax over all concepts of the norms}."""
    out: dict[str, dict[str, None]] = {r: {} for r in RELATIONS}
    for concept in norms.concepts.values():
        for relation, answers in gold_answers(concept).items():
            out[relation].update(dict.fromkeys(answers))
    return {r: list(words) for r, words in out.items()}


def elicitation_prompt(concept: Concept, relation: str, context: str = "everyone") -> str:
    """"Everyone knows that a bear has [MASK] ." (context "bare": "A bear has [MASK] .")."""
    subject = with_article(concept.word, concept.vowel_sound)
    if context in CONTEXTS:
        return prompt_texts("sta")["elicitation"][context].format(
            subject=subject, Subject=subject[0].upper() + subject[1:], relation=relation, mask=MASK)
    raise ValueError(f"unknown context {context!r}; use one of {', '.join(CONTEXTS)}")


def build_prompts(concepts: Sequence[Concept], relation: str, context: str) -> list[ElicitationPrompt]:
    """One prompt per concept that has gold answers for `relation`."""
    out = []
    for concept in concepts:
        gold = gold_answers(concept).get(relation)
        if gold:
            out.append(ElicitationPrompt(concept.key, relation, context,
                                         elicitation_prompt(concept, relation, context), gold))
    return out


def average_precision(scores: Sequence[float] | np.ndarray, gold: Sequence[int]) -> float:
    """AP = Σ_j P@j · Δrecall(j) = mean over golds of (golds ranked at or above it) / its rank.

    Ranks are pessimistic on ties (a gold tied with others is placed after them), as in
    `metrics.gold_ranks`, so constant scores never earn precision.
    """
    idx = np.unique(np.asarray(list(gold), dtype=np.int64))
    if idx.size == 0:
        raise ValueError("average precision needs at least one gold index")
    ranks = gold_ranks(scores, idx)
    precisions = [np.count_nonzero(ranks <= r) / r for r in ranks]
    return float(np.mean(precisions))


def score_prompts(prompts: Sequence[ElicitationPrompt], scores: np.ndarray, probs: np.ndarray,
                  words: Sequence[str], index, sensible: Sequence[int], *, top: int = 5) -> list[dict]:
    """Per-prompt records: AP over the vocabulary and the sensible set, ρ with PF, top words.

    `index(word)` gives a word's candidate index or None; `sensible` holds the candidate
    indices of the relation's sensible set. Prompts whose gold answers are all outside the
    vocabulary get ``ap_vocab = None`` (counted, not averaged).
    """
    sens = np.asarray(sorted(set(sensible)), dtype=np.int64)
    position = {int(c): i for i, c in enumerate(sens)}
    records = []
    for i, p in enumerate(prompts):
        hits = {w: index(w) for w in p.gold}
        inside = {w: j for w, j in hits.items() if j is not None}
        rec = {"concept": p.concept, "prompt": p.prompt, "gold": p.gold,
               "gold_in_vocab": len(inside), "gold_dropped": len(p.gold) - len(inside),
               "ap_vocab": None, "ap_sens": None, "rho": None}
        row = scores[i]
        if inside:
            gold_idx = sorted(set(inside.values()))
            rec["ap_vocab"] = average_precision(row, gold_idx)
            rec["ap_sens"] = average_precision(row[sens], [position[j] for j in gold_idx])
            pfs = [p.gold[w] for w in inside]
            model_p = [probs[i, j] for j in inside.values()]
            if len(inside) >= 2 and len(set(pfs)) > 1 and len(set(model_p)) > 1:
                rec["rho"] = float(spearmanr(model_p, pfs).statistic)
        best = np.argsort(-row, kind="stable")[:top]
        rec["top"] = [[words[j], round(float(probs[i, j]), 6)] for j in best]
        records.append(rec)
    return records


def summarize(records: Sequence[dict]) -> dict:
    scored = [r for r in records if r["ap_vocab"] is not None]
    rhos = [r["rho"] for r in scored if r["rho"] is not None and np.isfinite(r["rho"])]
    return {
        "n_prompts": len(scored),
        "n_concepts": len({r["concept"] for r in scored}),
        "mAP_vocab": float(np.mean([r["ap_vocab"] for r in scored])) if scored else float("nan"),
        "mAP_sens": float(np.mean([r["ap_sens"] for r in scored])) if scored else float("nan"),
        "spearman": float(np.mean(rhos)) if rhos else float("nan"),
        "spearman_prompts": len(rhos),
        "gold_in_vocab": int(sum(r["gold_in_vocab"] for r in records)),
        "gold_dropped": int(sum(r["gold_dropped"] for r in records)),
        "prompts_without_gold": len(records) - len(scored),
    }
