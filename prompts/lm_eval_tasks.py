"""kgprobe's probes as plain-text multiple-choice documents (for lm-evaluation-harness).

A text-only engine (lm-eval, vLLM, an API) scores ``context + choice`` by log-likelihood: it
cannot take a pseudoword vector, and it ranks a short list of choices rather than a slot.
So each probe becomes a `ClozeDoc`: the prompt's text before ``[MASK]`` (the context), the
candidates as choices and the indices of the gold ones. What lm-eval scores for a choice is its
continuation: the candidate, followed by the text after the slot where that holds more than
punctuation (`models.cloze`, the rule kgprobe's causal scorer applies), so the engine scores
log P(candidate + rest of the sentence | context), exactly what kgprobe scores. Memorizing records keep their manual
templates; reasoning items are the premise-ablation study's requests with both premises
written (`reasoning_doc`) and the pseudowords as the letters X and Y, as the OntoProbe paper
does for ChatGPT (§5).

`choose_candidates` keeps the whole candidate set (``Protocol()``, the memorization study's
ranking) or the golds plus seeded distractors up to ``K`` (``Protocol(K)``; §5 uses 20
choices), drawn exactly as the studies draw them for the same record or item (the paper
protocol's export). Under filtered ranking a reasoning item's other true answers
(`reasoning.filtering`) are not among its choices: with ``K`` the study draws the
distractors from the rest; with every candidate the study keeps them in its list but out of
the gold's rank, which is the same rank.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from kgprobe.errors import KgprobeError
from kgprobe.models.cloze import scores_suffix
from kgprobe.ontology.verbalize import MASK
from kgprobe.reasoning.distractors import Protocol
from kgprobe.reasoning.items import SLOT_X, SLOT_Y, ReasoningItem

#: The letters that stand for the pseudowords in text (OntoProbe §5).
LETTERS = {SLOT_X: "X", SLOT_Y: "Y"}


@dataclass
class ClozeDoc:
    """One probe as lm-eval reads it: ``text`` then each choice; ``gold`` indexes ``choices``."""

    id: str
    study: str  # "memorizing" | "reasoning"
    task: str  # the relation (type, …) or the rule (rdfs9, …)
    template: str  # manual template index, or "manual" for reasoning prompts
    text: str  # the prompt before the slot (its trailing space included)
    suffix: str  # the prompt after the slot (scored with each choice where it is more than punctuation)
    choices: list[str]
    gold: list[int]
    answers: list[str]
    subject: str
    split: str = "test"
    protocol: str = "all"  # the studies' candidate protocol name: all, or K=20
    ranking: str = "raw"  # filtered: no other true answer among the choices, golds not counted

    @property
    def prompt(self) -> str:
        """The prompt with its ``[MASK]`` slot, as kgprobe's scorers take it."""
        return f"{self.text}{MASK}{self.suffix}"

    @property
    def continuations(self) -> list[str]:
        """What lm-eval scores after `text` for each choice: the choice, plus the suffix where
        kgprobe's causal scorer reads it (`models.cloze.scores_suffix`)."""
        tail = self.suffix if scores_suffix(self.suffix) else ""
        return [f"{c}{tail}" for c in self.choices]

    def to_json(self) -> dict:
        """lm-eval's own `target` (its acc metric) is the most specific answer among the
        golds; kgprobe's metrics (`harness_utils`) rank every gold."""
        target = min(self.gold, key=lambda g: self.answers.index(self.choices[g]))
        return {**asdict(self), "continuations": self.continuations, "target": target}


def split_at_mask(prompt: str) -> tuple[str, str]:
    """(text before the slot, text after it); exactly one ``[MASK]`` is required."""
    if prompt.count(MASK) != 1:
        raise KgprobeError(f"prompt {prompt!r} needs exactly one {MASK}; fix its template")
    before, after = prompt.split(MASK)
    return before, after


def choose_candidates(candidates: Sequence[str], answers: Sequence[str], protocol: Protocol,
                      seed: int | str, exclude: Sequence[str] = ()) -> tuple[list[str], list[int]]:
    """(choices, gold indices): what the studies rank for this record or item under
    `protocol` (`Protocol.candidates`, seeded ``f"{run seed}:{record or item id}"``),
    so an exported task ranks what the study ranks: every answer is a gold. `exclude`: the
    item's other true answers (filtered ranking), never a choice."""
    choices = protocol.candidates(candidates, answers, seed=seed, exclude=sorted(exclude))
    barred = set(exclude) - set(answers)
    choices = [c for c in choices if c not in barred]
    known = set(answers)
    return choices, [i for i, c in enumerate(choices) if c in known]


def with_letters(text: str) -> str:
    """Pseudoword slots as the letters X and Y (a text API cannot take their vectors)."""
    for slot, letter in LETTERS.items():
        text = text.replace(slot, letter)
    return text


def reasoning_doc(item: ReasoningItem, request, protocol: str, ranking: str) -> ClozeDoc | None:
    """A reasoning item's request as the premise-ablation study asks it with both premises
    written (its `ProbeRequest`: the prompt, the candidates drawn for the item) as a document,
    pseudowords as X and Y. The item's other true answers (the request's ``also_true``,
    filtered ranking) are no choice; its answers among the rest are the golds. None when no
    answer is a candidate."""
    text, suffix = split_at_mask(with_letters(request.prompt))
    barred = {request.candidates[i] for i in request.also_true} - set(item.answers)
    choices = [c for c in request.candidates if c not in barred]
    known = set(item.answers)
    gold = [i for i, c in enumerate(choices) if c in known]
    if not gold:
        return None  # no answer among the candidates: nothing to rank
    return ClozeDoc(item.id, "reasoning", item.rule, "manual", text, suffix, choices, gold,
                    list(item.answers), with_letters(item.premises[-1].subject), "test",
                    protocol, ranking)
