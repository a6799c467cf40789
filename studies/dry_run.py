"""`--dry-run`: the prompts a study would score, written without loading a model.

Researchers read their prompts before spending GPU hours. Every study builds its prompts as
usual and, under ``--dry-run``, hands them here instead of to a scorer: one JSON line per
prompt in ``OUT/prompts.jsonl``, in the order the study would score them. The file is the
same shape for every study, so one reader (or `jq`) serves all of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from kgprobe.atomic import write_jsonl

PROMPTS_FILE = "prompts.jsonl"


@dataclass(frozen=True)
class PromptRecord:
    """One prompt a study would score.

    `text` is the whole prompt with its slots written as ``[X]``, ``[Y]`` (pseudowords) and
    ``[MASK]`` (the answer); `p1`, `p2`, `h` are a reasoning prompt's parts (empty when a
    premise is not written, and for memorizing prompts); `golds` are the answers counted
    correct; `n_candidates` how many candidates the answer is ranked among.
    """

    study: str
    text: str
    golds: tuple[str, ...]
    n_candidates: int
    task: str = ""
    rule: str = ""
    template: str = ""
    p1: str = ""
    p2: str = ""
    h: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        row = asdict(self)
        row["golds"] = list(self.golds)
        return row


def write_prompts(out: str | Path, records: Iterable[PromptRecord], *,
                  chat: Callable[[str], dict] | None = None) -> int:
    """Write ``OUT/prompts.jsonl`` atomically; returns the number of prompts. `chat`
    (`chat_view`): each line's ``chat``, the wrapped prompt under ``--chat-template``."""
    def row(r: PromptRecord) -> dict:
        line = r.to_json()
        if chat is not None:
            line["chat"] = chat(r.text)
        return line

    return write_jsonl(Path(out) / PROMPTS_FILE, (row(r) for r in records))


def chat_view(chat_template: str, model: str | None, study: str) -> Callable[[str], dict] | None:
    """What a dry run shows of a prompt under ``--chat-template`` (None under ``none``): the
    user's turn and the assistant's statement, and the whole wrapped text where the template
    is at hand without loading weights (a FILE; ``auto``: a local model's or a converted
    preset's tokenizer)."""
    from kgprobe.models.chat import dry_wrapper, user_message
    from kgprobe.studies.options import chat_instruction

    if chat_template in (None, "none"):
        return None
    instruction = chat_instruction(study)
    wrap = dry_wrapper(chat_template, model, instruction)

    def view(prompt: str) -> dict:
        shown = {"template": chat_template, "user": user_message(instruction, prompt),
                 "assistant": prompt}
        if wrap is not None:
            shown["wrapped"] = wrap(prompt)
        return shown

    return view
