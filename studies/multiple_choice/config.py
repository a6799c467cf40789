"""The multiple-choice study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StudyError

ANSWERS = ("letter", "text")


@dataclass
class MultipleChoiceConfig:
    model: str
    tasks: str = "all"  # all, memorizing, reasoning, or a comma list of sets
    data: Path | None = None  # question files; None: the paper's, bundled
    limit: int | None = None  # questions per file; None: all
    instruction: str | None = None  # None: prompts.multiple_choice.DEFAULT_INSTRUCTION
    chat: bool | None = None  # wrap in the chat template; None: if the tokenizer has one
    answer: str = "letter"
    device: str = "cpu"
    batch_size: int = 4

    def __post_init__(self) -> None:
        if self.answer not in ANSWERS:
            raise StudyError(f"--answer {self.answer}: use letter or text")
        if self.limit is not None and self.limit < 1:
            raise StudyError(f"--limit {self.limit}: give at least 1 question per file")

    @classmethod
    def from_args(cls, args) -> "MultipleChoiceConfig":
        """The configuration of ``kgprobe study multiple-choice`` (and `kgprobe.run`)."""
        if not args.model and not args.dry_run:
            raise StudyError("kgprobe study multiple-choice needs --model NAME (or --dry-run to "
                             "write the prompts without one)")
        chat = {"auto": None, "on": True, "off": False}[args.chat]
        return cls(args.model or "-", tasks=args.task, data=args.data, limit=args.limit,
                   instruction=args.instruction, chat=chat, answer=args.answer,
                   device=args.device, batch_size=args.batch_size)

    def pinned(self) -> dict:
        """The settings a run folder is pinned to.

        The question set, the answer form and the number of questions are in every unit's key,
        so a rerun with others adds or redoes only those units; the model, the question files,
        the instruction and the chat wrapping change every unit's numbers, so they are pinned.
        """
        data = str(Path(self.data).expanduser().resolve()) if self.data else None
        return {"model": self.model, "data": data, "instruction": self.instruction,
                "chat": self.chat}
