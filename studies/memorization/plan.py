"""The memorization study's plan (`contract.Plan`): one run's units of requests.

`requests.plan` builds every `ProbeRequest` before a model loads; the run scores them
(`study.study_units`), ``--dry-run`` writes them, one `studies.dry_run.PromptRecord` per
request in the run's order (task, then template, then record), under either protocol, and
``kgprobe export lm-eval`` converts them: what a researcher reads is what the model is asked,
in the probe set's language. The lifecycle (load, pin, controls, report) is the contract's.
"""

from __future__ import annotations

from typing import Any

from kgprobe.studies.contract import Plan
from kgprobe.studies.dry_run import PromptRecord

from .config import COLUMNS, MemorizationConfig

STUDY = "memorization"


class MemorizationPlan(Plan):
    """The units of one memorization run: ranked (default or paper protocol) or, with
    ``--answers generate``, written and graded; the controls ask the very same units."""

    def __init__(self, config: MemorizationConfig) -> None:
        from .requests import plan

        super().__init__(config)
        self.planned = plan(config)  # every prompt, checked before the model loads
        self.columns = COLUMNS
        if config.answers == "generate":
            from .generate import COLUMNS as columns

            self.columns = columns
        self.controls = config.controls
        self._prompts: list[PromptRecord] | None = None

    def requests(self) -> list:
        return self.planned

    def prompts(self) -> list[PromptRecord]:
        if self._prompts is None:  # the chat view of open answers reads them too
            self._prompts = prompt_records(self.config, self.planned)
        return self._prompts

    def chat(self) -> Any:
        view = super().chat()
        if view is not None and self.config.answers == "generate":
            view = generation_view(view, {r.text: r.extra["cloze"]
                                          for r in self.prompts()})
        return view

    def recorded(self) -> dict:
        from .study import recorded

        return recorded(self.config)

    def check(self, model: Any) -> None:
        if self.config.answers == "generate":  # a masked LM cannot write answers: say so
            model.generate([], max_new_tokens=self.config.max_new_tokens)

    def units(self, scored: Any) -> list:
        from .study import study_units

        return study_units(self.config, scored, self.planned, progress=self.progress)


def prompt_records(config: MemorizationConfig, planned: list) -> list[PromptRecord]:
    """Every request the run of `config` scores (`planned`: `requests.plan`), as the dry run
    writes it."""
    from .generate import generation_prompt

    out = []
    generate = config.answers == "generate"  # the text the model continues, not the cloze
    for unit in planned:
        paper = config.protocol == "paper"
        for req, rec, answers in zip(unit.requests, unit.records, unit.answers):
            extra = ({"record": rec.record, "protocol": "paper"} if paper
                     else {"id": rec.id, "protocol": "default"})
            if generate:
                extra.update(answers="generate", cloze=req.prompt,
                             max_new_tokens=config.max_new_tokens)
            text = generation_prompt(req.prompt) if generate else req.prompt
            out.append(PromptRecord(STUDY, text, answers, len(req.candidates),
                                    task=unit.task, template=str(unit.template), extra=extra))
    return out


def generation_view(view, cloze_of: dict[str, str]):
    """The chat view of a generation prompt: the user's turn shows the whole statement (its
    slot as ___), the assistant's turn starts with the text up to the slot (as the run asks,
    `generate.wrap_for_generation`)."""
    def shown(text: str) -> dict:
        cloze = cloze_of[text]
        start = cloze.partition("[MASK]")[0].rstrip()  # the user's turn shows the statement
        out = {**view(cloze), "assistant": start}
        if "wrapped" in out and out["wrapped"].endswith(cloze):
            out["wrapped"] = out["wrapped"][: len(out["wrapped"]) - len(cloze)] + start
        return out

    return shown
