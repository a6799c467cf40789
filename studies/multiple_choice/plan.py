"""The multiple-choice study's plan (`contract.Plan`): the questions one run asks.

`requests.plan` reads every chosen question set before a model loads; the run answers them
(`study.question_unit`), each control answers the very same questions (`controls.answering`
picks those that can), and ``--dry-run`` writes them, one `studies.dry_run.PromptRecord` per
question in the run's order: with ``--answer letter`` the text the model reads before its
letter (question, instruction, ``Answer: (``; a chat template, when the model's tokenizer
has one, wraps it at run time), with ``--answer text`` the question's stem and the
``Answer: [MASK]`` slot its options fill (`requests.asked`). The lifecycle (load, pin,
controls, report) is the contract's.
"""

from __future__ import annotations

from typing import Any

from kgprobe.errors import KgprobeError
from kgprobe.studies.contract import Plan
from kgprobe.studies.dry_run import PromptRecord

from .config import COLUMNS, MultipleChoiceConfig

STUDY = "multiple-choice"


class MultipleChoicePlan(Plan):
    """The question sets of one run, answered by the model and by each control that can."""

    columns = COLUMNS

    def __init__(self, config: MultipleChoiceConfig) -> None:
        from .controls import answering
        from .requests import plan

        super().__init__(config)
        self.planned = plan(config)  # the questions, read before the model loads
        self.controls = answering(config)

    def requests(self) -> list:
        return self.planned

    def prompts(self) -> list[PromptRecord]:
        return question_records(self.config, self.planned)

    def chat(self) -> None:
        """None: the letter form's chat wrap is the model tokenizer's own (``--chat``),
        applied at run time; each line's ``extra`` says which (`question_records`)."""
        return None

    def recorded(self) -> dict:
        """The controls that answered and those the answer form skips (report.md says why):
        recorded, not pinned, so a rerun with another list resumes the model's units."""
        return {"controls": list(self.controls),
                "controls_skipped": sorted(set(self.config.controls) - set(self.controls))}

    def check(self, model: Any) -> None:
        if self.config.answer == "letter" and not model.answers_next_token:
            raise KgprobeError(f"letter answers need a causal (instruct) model; "
                               f"'{self.config.model}' is a masked LM: use --answer text")

    def units(self, scored: Any) -> list:
        from .study import question_unit

        return [question_unit(self.config, scored, p) for p in self.planned]


def question_records(config: MultipleChoiceConfig, planned: list) -> list[PromptRecord]:
    """One record per question of `planned` (`requests.plan`), in the order a run asks them."""
    from .requests import asked

    records = []
    for unit in planned:
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
