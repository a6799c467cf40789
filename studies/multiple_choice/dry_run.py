"""`kgprobe study multiple-choice --dry-run`: the questions a run would ask, without a model.

Each question of the run's plan (`requests.plan`) becomes one `PromptRecord` in
``OUT/prompts.jsonl``: with ``--answer letter`` the text the model reads before its letter
(question, instruction, ``Answer: (``; a chat template, when the model's tokenizer has one,
wraps it at run time), with ``--answer text`` the question's stem and the ``Answer: [MASK]``
slot its options fill (`requests.asked`).
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.dry_run import PromptRecord, write_prompts
from kgprobe.studies.multiple_choice.config import MultipleChoiceConfig

from .requests import asked, plan

STUDY = "multiple-choice"


def question_records(config: MultipleChoiceConfig) -> list[PromptRecord]:
    """One record per question of the chosen sets, in the order a run scores them."""
    records = []
    for unit in plan(config):
        q = unit.set
        for prompt, gold in zip(unit.prompts, unit.golds):
            ask = asked(config, prompt, gold)
            records.append(PromptRecord(
                STUDY, ask.text, (ask.gold,), len(ask.options) or 20,
                task=q.task if q.set == "memorizing" else "",
                rule=q.task if q.set == "reasoning" else "",
                template=config.answer,
                extra={"set": q.set, "p1": q.p1, "file": q.path.name, "gold": gold,
                       "chat": "auto" if config.chat is None else config.chat}))
    return records


def dry_run(config: MultipleChoiceConfig, out: str | Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    return write_prompts(out, question_records(config))
