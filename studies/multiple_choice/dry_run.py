"""`kgprobe study multiple-choice --dry-run`: the questions a run would ask, without a model.

Each question becomes one `PromptRecord` in ``OUT/prompts.jsonl``: with ``--answer letter``
the text the model reads before its letter (question, instruction, ``Answer: (``; a chat
template, when the model's tokenizer has one, wraps it at run time), with ``--answer text``
the question's stem and the ``Answer: [MASK]`` slot its options fill.
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.dry_run import PromptRecord, write_prompts
from kgprobe.studies.multiple_choice.config import MultipleChoiceConfig
from kgprobe.studies.multiple_choice.study import choose, find_sets

STUDY = "multiple-choice"


def question_records(config: MultipleChoiceConfig) -> list[PromptRecord]:
    """One record per question of the chosen sets, in the order a run scores them."""
    from kgprobe.prompts.multiple_choice import (
        DEFAULT_INSTRUCTION,
        gold_letter,
        load_multiple_choice,
        split_question,
    )

    instruction = DEFAULT_INSTRUCTION if config.instruction is None else config.instruction
    records = []
    for q in choose(find_sets(config.data), config.tasks):
        prompts, golds = load_multiple_choice(q.path)
        for prompt, gold in zip(prompts[:config.limit], golds[:config.limit]):
            stem, options = split_question(prompt)
            letter = gold_letter(gold)
            if config.answer == "text":
                text, answer = f"{stem}\nAnswer: [MASK]", [options.get(letter, gold)]
            else:
                message = f"{prompt}\n{instruction}" if instruction else prompt
                text, answer = f"{message}\nAnswer: (", [letter]
            records.append(PromptRecord(
                STUDY, text, tuple(answer), len(options) or 20,
                task=q.task if q.set == "memorizing" else "",
                rule=q.task if q.set == "reasoning" else "",
                template=config.answer,
                extra={"set": q.set, "p1": q.p1, "file": q.path.name, "gold": gold,
                       "chat": "auto" if config.chat is None else config.chat}))
    return records


def dry_run(config: MultipleChoiceConfig, out: str | Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    return write_prompts(out, question_records(config))
