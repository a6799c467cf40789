"""The multiple-choice study's one request stream: its configuration → the questions it asks.

`plan` turns a `MultipleChoiceConfig` into one `QuestionUnit` per chosen question set, each
with its questions (the file's first ``--limit``) and, per question, what the model is asked:
with ``--answer letter`` the question and its option letters (`letter_options`), read after
the question and the instruction (`models.letters`); with ``--answer text`` the question's
stem with its ``Answer: [MASK]`` slot and the options' texts that fill it (`cloze_prompt`).
The run scores exactly these (`study.run_config`) and ``--dry-run`` writes exactly these
(`dry_run.py`), so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import MultipleChoiceConfig
from .study import QuestionSet, choose, find_sets


@dataclass(frozen=True)
class Asked:
    """One question as the model is asked it: the text its answer follows (a letter form's
    text without a chat template; a chat template, where the tokenizer has one, wraps the
    question at run time), the options (letter → text) and the gold answer among them."""

    text: str
    options: dict[str, str]
    gold: str  # the gold option's letter (letter form) or text (text form)


@dataclass
class QuestionUnit:
    """A question set and its questions (the file's prompts with their options) and golds
    (``"(e) work"``), in file order, as many as ``--limit`` keeps."""

    set: QuestionSet
    prompts: list[str]
    golds: list[str]


def instruction_of(config: MultipleChoiceConfig) -> str:
    from kgprobe.prompts.multiple_choice import DEFAULT_INSTRUCTION

    return DEFAULT_INSTRUCTION if config.instruction is None else config.instruction


def plan(config: MultipleChoiceConfig) -> list[QuestionUnit]:
    """The question sets of a run of `config`, in the order it asks them."""
    from kgprobe.prompts.multiple_choice import load_multiple_choice

    units = []
    for q in choose(find_sets(config.data), config.tasks):
        prompts, golds = load_multiple_choice(q.path)
        units.append(QuestionUnit(q, prompts[:config.limit], golds[:config.limit]))
    return units


def asked(config: MultipleChoiceConfig, question: str, gold: str) -> Asked:
    """What the model is asked for `question` under `config`'s answer form."""
    from kgprobe.models.letters import plain_letter_prompt
    from kgprobe.prompts.multiple_choice import cloze_prompt, gold_letter, letter_options

    letter = gold_letter(gold)
    if config.answer == "text":
        text, options = cloze_prompt(question)
        return Asked(text, options, options.get(letter, gold))
    return Asked(plain_letter_prompt(question, instruction_of(config)),
                 letter_options(question), letter)
