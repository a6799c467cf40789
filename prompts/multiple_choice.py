"""Multiple-choice probing of instruct/chat causal models (OntoProbe §5).

The paper asks ChatGPT 20-option questions such as ``"What is the type of Lionel Messi?
(a) soccer player, (b) work, ..."`` and reports accuracy. Records (JSON lines, see
``data/ontoprobe/multiple_choice/``) are ``{"prompt", "gold"}`` (reasoning) or
``{"prompt", "gold", "cands"}`` (memorizing) with ``gold`` like ``"(e) work"``.

Protocol here (no free generation): the model scores each option letter
(`LanguageModel.letter_scores`: for a pretrained model, the question plus an instruction to
answer with the option letter, wrapped in the tokenizer's chat template when it has one,
followed by ``"("``, each letter scored as the next token, `models.letters`; a baseline ranks
the options' texts, `models.baselines`) and the highest-scoring letter is the prediction.

Small models cannot bind answers to letters, so `score_option_texts` offers the cloze form
(as lm-evaluation-harness does for small models): the question without its option list,
then ``Answer:`` and the slot, each option's text scored by any `Scorer` (masked or causal).
The list stays out because a model that has just read "(a) …, (b) …" expects a letter after
"Answer:": with the list in the prompt smollm2-135m ranked the gold first for 2 of 20 rdfs9
questions with P1 explicit, without it for 8 of 20.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from typing import TYPE_CHECKING

from kgprobe.errors import KgprobeError, ModelError

if TYPE_CHECKING:
    from kgprobe.models.language_model import LanguageModel

__all__ = [
    "MultipleChoiceResult", "load_multiple_choice", "score_multiple_choice", "score_option_texts",
    "split_question", "gold_letter", "letter_options", "cloze_prompt", "DEFAULT_INSTRUCTION",
]

DEFAULT_INSTRUCTION = "Answer with the letter of the correct option."
_OPTION = re.compile(r"\(([a-z])\)\s")
_GOLD = re.compile(r"^\s*\(([a-z])\)")
_OPTION_TEXT = re.compile(r"\(([a-z])\)\s+(.*?)(?=,\s*\([a-z]\)\s|$)", re.S)


@dataclass
class MultipleChoiceResult:
    accuracy: float  # fraction in [0, 1]
    predictions: list[str]  # predicted letters
    golds: list[str]  # gold letters
    scores: list[dict[str, float]]  # per question: letter -> log-probability


def _result(predictions: list[str], golds: list[str], scores: list[dict[str, float]]) -> MultipleChoiceResult:
    correct = sum(p == g for p, g in zip(predictions, golds))
    return MultipleChoiceResult(correct / len(golds) if golds else 0.0, predictions, golds, scores)


def load_multiple_choice(path: str | Path) -> tuple[list[str], list[str]]:
    """Prompts and golds of a multiple-choice JSONL file."""
    prompts, golds = [], []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rec = json.loads(line)
                prompts.append(rec["prompt"])
                golds.append(rec["gold"])
    except (OSError, ValueError, KeyError) as err:
        raise KgprobeError(f"cannot read multiple-choice file {path}: {err}; give JSONL records with prompt and gold") from None
    return prompts, golds


def _letter(gold: str) -> str:
    m = _GOLD.match(gold)
    if not m:
        raise KgprobeError(f"gold answer {gold!r} does not start with an option letter like '(e)'; fix the data")
    return m.group(1)


def gold_letter(gold: str) -> str:
    """The option letter of a gold answer such as ``"(e) work"`` (a dry run names it too)."""
    return _letter(gold)


def score_multiple_choice(
    loaded: LanguageModel,
    prompts: Sequence[str],
    golds: Sequence[str],
    *,
    instruction: str = DEFAULT_INSTRUCTION,
    use_chat_template: bool | None = None,
    batch_size: int = 4,
) -> MultipleChoiceResult:
    """Accuracy of picking the gold option letter as the most likely next token."""
    if not loaded.answers_next_token:
        raise ModelError(f"multiple-choice scoring needs a causal (instruct) model; '{loaded.name}' is {loaded.kind}")
    if len(prompts) != len(golds):
        raise ValueError(f"{len(prompts)} prompts but {len(golds)} golds")
    options = [letter_options(q) for q in prompts]
    gold_letters = [_letter(g) for g in golds]
    per_question = loaded.letter_scores(prompts, options, instruction=instruction,
                                        use_chat_template=use_chat_template, batch_size=batch_size)
    predictions = [max(opts, key=lambda l: row[l]) for opts, row in zip(options, per_question)]
    return _result(predictions, gold_letters, per_question)


def letter_options(question: str) -> dict[str, str]:
    """The letters a question's answer is chosen among (its ``(a)``, ``(b)`` … in order, or
    a–t when it names none), each with its option text: what the model is asked for it."""
    letters = list(dict.fromkeys(_OPTION.findall(question))) or [chr(c) for c in range(ord("a"), ord("t") + 1)]
    texts = split_question(question)[1]
    return {letter: texts.get(letter, "") for letter in letters}


def cloze_prompt(question: str) -> tuple[str, dict[str, str]]:
    """The cloze form of a question: its stem, then ``Answer: [MASK]``, and the options whose
    texts fill the slot (letter → text)."""
    stem, options = split_question(question)
    if not options:
        raise KgprobeError(f"question {question[:60]!r} lists no options like '(a) text, (b) text'; "
                           "fix the data")
    return f"{stem}\nAnswer: [MASK]", options


def split_question(question: str) -> tuple[str, dict[str, str]]:
    """(stem, letter → option text) of ``"What is …? (a) soccer player, (b) work, …"``."""
    matches = list(_OPTION_TEXT.finditer(question))
    stem = question[: matches[0].start()].strip() if matches else question.strip()
    return stem, {m.group(1): m.group(2).strip() for m in matches}


def score_option_texts(scorer, prompts: Sequence[str], golds: Sequence[str], *,
                       batch_size: int = 32) -> MultipleChoiceResult:
    """Accuracy of ranking the gold option's text first when it fills ``Answer: [MASK]`` after
    the question's stem."""
    if len(prompts) != len(golds):
        raise ValueError(f"{len(prompts)} prompts but {len(golds)} golds")
    gold_letters = [_letter(g) for g in golds]
    predictions: list[str] = []
    per_question: list[dict[str, float]] = []
    for question in prompts:
        text, options = cloze_prompt(question)
        letters = list(options)
        row = scorer.score([text], [options[l] for l in letters],
                           batch_size=batch_size)[0]
        scores = {l: float(v) for l, v in zip(letters, row)}
        per_question.append(scores)
        predictions.append(max(letters, key=lambda l: scores[l]))
    return _result(predictions, gold_letters, per_question)
