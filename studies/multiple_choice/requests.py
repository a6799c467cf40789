"""The multiple-choice study's one request stream: its configuration → the questions it asks.

`plan` turns a `MultipleChoiceConfig` into one `QuestionUnit` per chosen question set, each
with its questions (the file's first ``--limit``) and, per question, what the model is asked:
with ``--answer letter`` the question and its option letters (`letter_options`), read after
the question and the instruction (`models.letters`); with ``--answer text`` the question's
stem with its ``Answer: [MASK]`` slot and the options' texts that fill it (`cloze_prompt`).
The run scores exactly these (`study.question_unit`) and ``--dry-run`` writes exactly these
(`plan.MultipleChoicePlan`), so the two cannot drift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Sequence

from kgprobe.errors import KgprobeError
from kgprobe.reasoning.memorizing import RELATIONS, relation_name
from kgprobe.studies.options import comma_list

from .config import MultipleChoiceConfig

SETS = ("memorizing", "reasoning")
P1_SETTINGS = {"0": "not given", "1": "implicit", "2": "explicit"}
_REASONING = re.compile(r"^(rdfs\d+)-([012])2$")


@dataclass(frozen=True)
class QuestionSet:
    set: str  # memorizing | reasoning
    task: str  # type … range, or rdfs2 … rdfs11
    p1: str  # "-" for memorizing; not given | implicit | explicit
    path: Path


def bundled_dir() -> Path:
    return Path(str(resources.files("kgprobe.ontology") / "data" / "multiple_choice"))


def find_sets(directory: str | Path | None = None) -> list[QuestionSet]:
    """The question files under ``memorizing/`` and ``reasoning/`` of a directory (default: bundled)."""
    root = Path(directory) if directory is not None else bundled_dir()
    found = []
    for path in sorted((root / "memorizing").glob("*.jsonl")):
        found.append(QuestionSet("memorizing", relation_name(path.stem), "-", path))
    for path in sorted((root / "reasoning").glob("*.jsonl")):
        m = _REASONING.match(path.stem)
        if not m:
            raise KgprobeError(f"{path}: reasoning files are named rdfsN-P2 with P in 0, 1, 2 "
                               "(for example rdfs9-12.jsonl); rename it")
        found.append(QuestionSet("reasoning", m.group(1), P1_SETTINGS[m.group(2)], path))
    if not found:
        raise KgprobeError(f"{root}: no memorizing/*.jsonl or reasoning/*.jsonl question files; "
                           "give --data a directory laid out like the bundled one")
    order = {r: i for i, r in enumerate(RELATIONS)}
    return sorted(found, key=lambda q: (SETS.index(q.set), order.get(q.task, 0),
                                        int(q.task[4:]) if q.set == "reasoning" else 0,
                                        list(P1_SETTINGS.values()).index(q.p1) if q.p1 != "-" else 0))


def choose(sets: Sequence[QuestionSet], spec: str) -> list[QuestionSet]:
    """``all``, ``memorizing``, ``reasoning``, or a comma list of tasks (TP, type, rdfs9, rdfs9-12)."""
    if spec in ("all", *SETS):
        return [q for q in sets if spec in ("all", q.set)]
    chosen = []
    for name in comma_list(spec):
        m = _REASONING.match(name)
        hits = [q for q in sets if (m and q.task == m.group(1) and q.p1 == P1_SETTINGS[m.group(2)])
                or (not m and q.task in (name, _relation_or_none(name)))]
        if not hits:
            raise KgprobeError(f"--task {name}: no such question set; use all, memorizing, reasoning, "
                               "a relation (type … range, TP … RG), a rule (rdfs9) or a file (rdfs9-12)")
        chosen.extend(q for q in hits if q not in chosen)
    return chosen


def _relation_or_none(name: str) -> str | None:
    try:
        return relation_name(name)
    except KgprobeError:
        return None



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
