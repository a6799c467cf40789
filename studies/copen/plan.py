"""The COPEN study's plan (`contract.Plan`): the items one run asks and the prompts they make.

The run reads (or generates into ``OUT/data``) its data sets once its folder is pinned
(`prepare`), then scores `requests.plan`'s items (`study.build_units`). ``--dry-run`` lists
the prompts of the same plan without a model: zero-shot every choice prompt of every test
item (for CiC also its out-of-context twin, the sentence left out), each scored once for all
its text parts; linear probing and fine-tuning the prompts whose features the scorer reads,
for the train, dev and test items, then CiC's out-of-context test prompts; both in the run's
order (`methods.zero_shot_requests`). Sets generated from the knowledge graph
(``--from-kg``) are built in a temporary folder, so a dry run leaves nothing in ``OUT`` but
``prompts.jsonl``. The lifecycle (pin, units, report) is the contract's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kgprobe.studies.contract import Plan
from kgprobe.studies.dry_run import PromptRecord

from .config import CopenConfig
from .methods import CPJ_ANSWERS, PARTS, Batchable, zero_shot_requests
from .requests import plan

STUDY = "copen"


class CopenPlan(Plan):
    """One method's units over the run's tasks: zero-shot one per (task, text part), linear
    probing and fine-tuning one per (task, seed)."""

    def __init__(self, config: CopenConfig) -> None:
        from .study import COLUMNS

        super().__init__(config)
        self.columns = COLUMNS
        self.out: Path | None = None
        self.sets: dict = {}

    def prompts(self) -> list[PromptRecord]:
        from .study import load_sets

        with tempfile.TemporaryDirectory(prefix="kgprobe-copen-dry-") as tmp:
            sets, _ = load_sets(self.config, Path(tmp), progress=True)  # never in OUT
            return prompt_records(self.config, sets)

    def prepare(self, model: Any, out: Path) -> Any:
        """The data sets, read or generated into ``OUT/data`` once (a rerun reads the same
        items); the model stays unloaded until a unit needs it (`study.LazyModel`)."""
        from .study import load_sets

        self.out = out
        self.sets, _ = load_sets(self.config, out, progress=self.progress)
        return model

    def units(self, scored: Any) -> list:
        from .study import build_units

        return build_units(self.config, self.out, self.sets, scored)


def _text(segments) -> str:
    return "".join(s.text for s in segments)


def _golds(task: str, item, answer: str | None = None) -> tuple[str, ...]:
    if item.label is None:
        return ()
    if task == "cpj":
        return (CPJ_ANSWERS[0] if item.label == 1 else CPJ_ANSWERS[1],)
    return (item.candidates[item.label],)


def _record(cfg: CopenConfig, task: str, item, split: str, segments, note: dict) -> PromptRecord:
    parts = [p for p in (cfg.parts or PARTS[task]) if p in PARTS[task]]
    return PromptRecord(STUDY, _text(segments), _golds(task, item),
                        2 if task == "cpj" else len(item.candidates), task=task,
                        template=cfg.method,
                        extra={"item": item.id, "split": split, "method": cfg.method, **note,
                               **({"parts": parts} if cfg.method == "zero-shot" else {})})


def zero_shot_records(cfg: CopenConfig, task: str, items) -> list[PromptRecord]:
    """The prompts zero-shot scores for `items`, in its order (`methods.zero_shot_requests`)."""
    asked = zero_shot_requests(task, items)
    return [_record(cfg, task, items[k], "test", segments, note)
            for segments, (k, note) in zip(asked.prompts, asked.notes)]


def batch_records(cfg: CopenConfig, task: str, split: str, batch: Batchable,
                  context: bool = True) -> list[PromptRecord]:
    """The prompts a trained method encodes for one split's items (`Batchable` rows)."""
    records = []
    for item, (a, b) in zip(batch.items, batch.spans()):
        notes = ([{}] if task == "cpj" else
                 [{"candidate": c, **({} if context else {"context": False})} for c in item.candidates])
        records += [_record(cfg, task, item, split, segments, note)
                    for segments, note in zip(batch.prompts[a:b], notes)]
    return records


def prompt_records(cfg: CopenConfig, sets: dict) -> list[PromptRecord]:
    """Every prompt of the run, task by task, in the order the run asks them (`requests.plan`):
    zero-shot the test items' choice prompts; the trained methods the train, dev and test
    items' prompts, then CiC's out-of-context test prompts."""
    records = []
    for task_plan in plan(cfg, sets):
        task = task_plan.task
        if cfg.method == "zero-shot":
            records += zero_shot_records(cfg, task, task_plan.test)
            continue
        for split, batch in task_plan.batches().items():
            records += batch_records(cfg, task, split, batch)
        ooc = task_plan.ooc()
        if ooc is not None:
            records += batch_records(cfg, task, "test", ooc, context=False)
    return records
