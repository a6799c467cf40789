"""Multiple-choice probing of instruct/chat causal models (OntoProbe §5).

The paper asks ChatGPT 20-option questions such as ``"What is the type of Lionel Messi?
(a) soccer player, (b) work, ..."`` and reports accuracy. Records (JSON lines, see
``data/ontoprobe/multiple_choice/``) are ``{"prompt", "gold"}`` (reasoning) or
``{"prompt", "gold", "cands"}`` (memorizing) with ``gold`` like ``"(e) work"``.

Protocol here (no free generation): the question plus an instruction to answer with the
option letter is wrapped in the tokenizer's chat template when it has one (user turn,
then the assistant generation prompt), followed by ``"("``; each option letter is scored
as the next token and the highest-scoring letter is the prediction.

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

import torch
from kgprobe.errors import KgprobeError, ModelError
from kgprobe.models.encoding import PromptEncoder
from kgprobe.models.language_model import LanguageModel

__all__ = [
    "MultipleChoiceResult", "load_multiple_choice", "score_multiple_choice", "score_option_texts",
    "split_question", "gold_letter", "DEFAULT_INSTRUCTION",
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


def _context(tok, question: str, instruction: str, use_chat: bool) -> list[int]:
    message = f"{question}\n{instruction}" if instruction else question
    if use_chat:
        text = tok.apply_chat_template([{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True)
        ids = list(tok(text + "(", add_special_tokens=False)["input_ids"])
    else:
        ids = list(tok(f"{message}\nAnswer: (", add_special_tokens=True)["input_ids"])
    return ids


@torch.no_grad()
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
    tok = loaded.tokenizer
    use_chat = bool(getattr(tok, "chat_template", None)) if use_chat_template is None else use_chat_template
    encoder = PromptEncoder(tok)
    letter_id = {chr(c): encoder.encode_text(chr(c), "glued")[0] for c in range(ord("a"), ord("z") + 1)}

    contexts = [_context(tok, q, instruction, use_chat) for q in prompts]
    options = [list(dict.fromkeys(_OPTION.findall(q))) or [chr(c) for c in range(ord("a"), ord("t") + 1)] for q in prompts]
    gold_letters = [_letter(g) for g in golds]

    predictions: list[str] = []
    per_question: list[dict[str, float]] = []
    for start in range(0, len(contexts), batch_size):
        batch = contexts[start : start + batch_size]
        lp = torch.log_softmax(loaded.next_token_logits(batch), dim=-1).cpu()
        for b in range(len(batch)):
            letters = options[start + b]
            row = {l: float(lp[b, letter_id[l]]) for l in letters}
            per_question.append(row)
            predictions.append(max(letters, key=lambda l: row[l]))
    return _result(predictions, gold_letters, per_question)


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
        stem, options = split_question(question)
        if not options:
            raise KgprobeError(f"question {question[:60]!r} lists no options like '(a) text, (b) text'; "
                               "fix the data")
        letters = list(options)
        row = scorer.score([f"{stem}\nAnswer: [MASK]"], [options[l] for l in letters],
                           batch_size=batch_size)[0]
        scores = {l: float(v) for l, v in zip(letters, row)}
        per_question.append(scores)
        predictions.append(max(letters, key=lambda l: scores[l]))
    return _result(predictions, gold_letters, per_question)
