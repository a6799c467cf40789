"""`study memorization --dry-run`: the prompts a run would score, without a model.

One `studies.dry_run.PromptRecord` per request of `requests.plan` — the very requests the run
scores, in its order (task, then template, then record), under either protocol — so what a
researcher reads is what the model is asked, in the probe set's language.
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.dry_run import PromptRecord, chat_view, write_prompts

from .config import MemorizationConfig

STUDY = "memorization"


def prompt_records(config: MemorizationConfig) -> list[PromptRecord]:
    """Every request the run of `config` scores, as the dry run writes it."""
    from .generate import generation_prompt
    from .requests import plan

    out = []
    generate = config.answers == "generate"  # the text the model continues, not the cloze
    for unit in plan(config):
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


def write_dry_run(config: MemorizationConfig, out: Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    records = prompt_records(config)
    Path(out).mkdir(parents=True, exist_ok=True)
    view = chat_view(config.chat_template, config.model, STUDY)
    if view is not None and config.answers == "generate":
        view = generation_view(view, {r.text: r.extra["cloze"] for r in records})
    return write_prompts(out, records, chat=view)


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
