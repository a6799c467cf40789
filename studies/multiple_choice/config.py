"""The multiple-choice study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import argparse

from kgprobe.errors import StudyError
from kgprobe.studies.controls import controls_option
from kgprobe.studies.options import ModelSettings, dry_run_option, model_options

#: `kgprobe study multiple-choice`: the name its run folders' config.json records (`pin_settings`).
NAME = "multiple-choice"
#: The columns of results.csv and predictions that name a cell (`Study.cell_columns`).
CELL_COLUMNS = ("set", "task", "p1", "answer")
#: results.csv's columns (each control's beside them: `controls.py`).
COLUMNS = ["set", "task", "p1", "answer", "n", "accuracy", "calibrated_accuracy", "top_letter", "top_letter_share"]

ANSWERS = ("letter", "text")


@dataclass
class MultipleChoiceConfig:
    model: str | None  # None: no model (a dry run)
    tasks: str = "all"  # all, memorizing, reasoning, or a comma list of sets
    data: Path | None = None  # question files; None: the paper's, bundled
    limit: int | None = None  # questions per file; None: all
    instruction: str | None = None  # None: prompts.multiple_choice.DEFAULT_INSTRUCTION
    chat: bool | None = None  # wrap in the chat template; None: if the tokenizer has one
    answer: str = "letter"
    #: where and how the model computes: device, dtype, batch size (questions at once), the
    #: score cache (--answer text) and ``--chat-template`` (it sets `chat`: auto, none, a
    #: FILE; the controls read it); none of them pinned
    settings: ModelSettings = ModelSettings(batch_size=4)
    #: the controls asked the same questions, shown beside every set (`controls.py`); the
    #: CLI and `kgprobe.run` default to frequency,copy,random
    controls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.answer not in ANSWERS:
            raise StudyError(f"--answer {self.answer}: use letter or text")
        if self.limit is not None and self.limit < 0:
            raise StudyError(f"--limit {self.limit}: give a number of questions per file (0: all)")
        self.limit = self.limit or None  # 0: all, as on every study
        from kgprobe.studies.controls import parse_controls

        self.controls = parse_controls(self.controls) if self.controls else ()
        if "prior" in self.controls:
            raise StudyError("--controls prior: the prior removes a cloze's subject, and a "
                             "multiple-choice question has no such slot; use frequency, copy, "
                             "random")
        if "test-prior" in self.controls:
            raise StudyError("--controls test-prior: it ranks a cloze's candidates by the golds "
                             "of the requests it scores, and a question's letters are no "
                             "cloze; use frequency, copy, random")

    @classmethod
    def from_args(cls, args) -> "MultipleChoiceConfig":
        """The configuration of ``kgprobe study multiple-choice`` (and `kgprobe.run`)."""
        if not args.model and not args.dry_run:
            raise StudyError("kgprobe study multiple-choice needs --model NAME (or --dry-run to "
                             "write the prompts without one)")
        chat = chat_setting(args)
        return cls(args.model, tasks=args.task, data=args.data, limit=args.limit,
                   instruction=args.instruction, chat=chat, answer=args.answer,
                   controls=getattr(args, "controls", None) or "frequency,copy,random",
                   settings=ModelSettings.from_args(args))

    def pinned(self) -> dict:
        """The settings a run folder is pinned to.

        The question set, the answer form and the number of questions are in every unit's key,
        so a rerun with others adds or redoes only those units; the model, the question files,
        the instruction and the chat wrapping change every unit's numbers, so they are pinned.
        """
        data = str(Path(self.data).expanduser().resolve()) if self.data else None
        return {"model": self.model or "-", "data": data, "instruction": self.instruction,
                "chat": self.chat}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset, HF id, local dir or .gguf file (causal for --answer letter), "
                        "or a control run as the model: frequency, copy, random, general; "
                        "required unless --dry-run")
    p.add_argument("--task", default="all",
                   help="all, memorizing, reasoning, or a comma list: type…range (TP…RG), "
                        "rdfs2…rdfs11, or one file such as rdfs9-12")
    p.add_argument("--data", type=Path, default=None,
                   help="a directory with memorizing/ and reasoning/ question files "
                        "(default: the paper's, bundled)")
    p.add_argument("--limit", type=int, default=None, help="questions per file (0 or none: all)")
    p.add_argument("--instruction", default=None,
                   help="text after each question (default: 'Answer with the letter of the "
                        "correct option.'; '' for none)")
    p.add_argument("--answer", choices=["letter", "text"], default="letter",
                   help="letter: the paper's protocol, the option letter as the next token (causal "
                        "models); text: each option's text in an 'Answer: [MASK]' slot after the "
                        "question without its option list (any model)")
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the question in the tokenizer's chat template (auto: if it has one); "
                        "--chat-template auto|none|FILE says the same and wins")
    controls_option(p, "multiple choice defaults to frequency,copy,random, skips copy for "
                       "--answer letter, whose option list names every option, and refuses "
                       "prior and test-prior")
    model_options(p, batch_size=4, batch_help="questions scored at once")
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    dry_run_option(p)


def chat_setting(args) -> bool | str | None:
    """``--chat-template`` (every study's option: auto, none, a FILE's path) where given, else
    its older spelling here, ``--chat auto|on|off``: None (the tokenizer's template where it
    has one), False (no template), True (the tokenizer's) or a Jinja file's path."""
    from kgprobe.models.chat import check_chat_template

    given = getattr(args, "chat_template", None)
    if given is None:
        return {"auto": None, "on": True, "off": False}[getattr(args, "chat", "auto")]
    value = check_chat_template(given)
    return {"auto": None, "none": False}.get(value, value)
