"""kgprobe's probes as plain-text multiple-choice documents (for lm-evaluation-harness).

A text-only engine (lm-eval, vLLM, an API) scores ``context + choice`` by log-likelihood: it
cannot take a pseudoword vector, and it ranks a short list of choices rather than a slot.
So each probe becomes a `ClozeDoc`: the prompt's text before ``[MASK]`` (the context), the
candidates as choices and the indices of the gold ones. What lm-eval scores for a choice is its
continuation: the candidate, followed by the text after the slot where that holds more than
punctuation (`models.cloze`, the rule kgprobe's causal scorer applies), so the engine scores
log P(candidate + rest of the sentence | context), exactly what kgprobe scores. Memorizing records keep their manual
templates; reasoning items are written with both premises explicit and the pseudowords as the
letters X and Y, as the OntoProbe paper does for ChatGPT (§5).

`choose_candidates` keeps the whole candidate set (``k=None``, the memorization study's
ranking) or the golds plus seeded distractors up to ``k`` (§5 uses 20 choices), drawn exactly
as the studies draw them for the same record or item. Under filtered ranking a reasoning
item's other true answers (`reasoning.filtering`) are not among its choices: with ``k`` the
distractors come from the rest, as the study draws them; with every candidate the study keeps
them in its list but out of the gold's rank, which is the same rank.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from kgprobe.errors import KgprobeError
from kgprobe.models.cloze import scores_suffix
from kgprobe.ontology.verbalize import MASK, TemplateSet, reasoning_text
from kgprobe.reasoning.distractors import parse_protocol
from kgprobe.reasoning.items import SLOT_X, SLOT_Y, ReasoningItem
from kgprobe.seeds import seed_key

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


def choose_candidates(candidates: Sequence[str], answers: Sequence[str], k: int | None,
                      seed: int | str, exclude: Sequence[str] = ()) -> tuple[list[str], list[int]]:
    """(choices, gold indices): what the studies rank for this record or item under
    ``--candidates k`` (`Protocol.candidates`, seeded ``f"{run seed}:{record or item id}"``),
    so an exported task ranks what the study ranks: every answer is a gold. `exclude`: the
    item's other true answers (filtered ranking), never a choice."""
    choices = parse_protocol(k).candidates(candidates, answers, seed=seed, exclude=sorted(exclude))
    barred = set(exclude) - set(answers)
    choices = [c for c in choices if c not in barred]
    known = set(answers)
    return choices, [i for i, c in enumerate(choices) if c in known]


def _doc(doc_id: str, key: str, study: str, task: str, template: str, prompt: str,
         subject: str, answers: Sequence[str], candidates: Sequence[str], k: int | None,
         seed: int, split: str = "test", ranking: str = "raw",
         exclude: Sequence[str] = ()) -> ClozeDoc | None:
    """`key`: the record or item id the study seeds its distractors with."""
    text, suffix = split_at_mask(prompt)
    choices, gold = choose_candidates(candidates, answers, k, seed_key(seed, key), exclude)
    if not gold:
        return None  # no answer among the candidates: nothing to rank
    return ClozeDoc(doc_id, study, task, template, text, suffix, choices, gold, list(answers),
                    subject, split, parse_protocol(k).name, ranking)


def with_letters(text: str) -> str:
    """Pseudoword slots as the letters X and Y (a text API cannot take their vectors)."""
    for slot, letter in LETTERS.items():
        text = text.replace(slot, letter)
    return text


def reasoning_docs(items: Sequence[ReasoningItem], candidates: dict[str, list[str]],
                   templates: TemplateSet, *, k: int | None, seed: int,
                   truth=None) -> list[ClozeDoc]:
    """Reasoning items with both premises written (the premise-ablation study's
    explicit/explicit cell, manual templates), pseudowords as X and Y. `truth`: a
    `reasoning.filtering.TrueAnswers` for filtered ranking (None: raw)."""
    docs = []
    for item in items:
        prompt = reasoning_text([p.text for p in item.premises], templates.conjunction,
                                item.conclusion["text"])
        doc = _doc(item.id, item.id, "reasoning", item.rule, "manual", with_letters(prompt),
                   with_letters(item.premises[-1].subject), item.answers,
                   candidates[item.candidates_key], k, seed,
                   ranking="filtered" if truth else "raw",
                   exclude=sorted(truth.item(item) - set(item.answers)) if truth else ())
        if doc is not None:
            docs.append(doc)
    return docs
