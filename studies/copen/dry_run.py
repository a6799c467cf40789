"""`kgprobe study copen --dry-run`: the prompts a run would score, without a model.

Zero-shot: every choice prompt of every test item (for CiC also its out-of-context twin, the
sentence left out), each scored once for all its text parts. Linear probing and fine-tuning:
the prompts whose features the scorer reads, for the train, dev and test items. Sets
generated from the knowledge graph (``--from-kg``) are built in a temporary folder, so a dry
run leaves nothing in ``OUT`` but ``prompts.jsonl``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kgprobe.reasoning.copen_items import select
from kgprobe.studies.dry_run import PromptRecord, write_prompts

from .config import CopenConfig
from .methods import CPJ_ANSWERS, PARTS, choice_prompts, cpj_prompt

STUDY = "copen"


def _text(segments) -> str:
    return "".join(s.text for s in segments)


def _golds(task: str, item, answer: str | None = None) -> tuple[str, ...]:
    if item.label is None:
        return ()
    if task == "cpj":
        return (CPJ_ANSWERS[0] if item.label == 1 else CPJ_ANSWERS[1],)
    return (item.candidates[item.label],)


def item_records(cfg: CopenConfig, task: str, items, split: str) -> list[PromptRecord]:
    """The prompts one split of a task is scored (zero-shot) or encoded (trained methods) on."""
    parts = [p for p in (cfg.parts or PARTS[task]) if p in PARTS[task]]
    out = []
    for item in items:
        base = {"item": item.id, "split": split, "method": cfg.method}
        if task == "cpj" and cfg.method == "zero-shot":
            prompts = [(cpj_prompt(item, a), {"answer": a}) for a in CPJ_ANSWERS]
        elif task == "cpj":
            prompts = [(p, {}) for p in choice_prompts(task, item)]
        else:
            prompts = [(p, {"candidate": c}) for p, c in zip(choice_prompts(task, item), item.candidates)]
            if task == "cic" and cfg.method == "zero-shot":
                prompts += [(p, {"candidate": c, "context": False})
                            for p, c in zip(choice_prompts(task, item, context=False), item.candidates)]
        n = 2 if task == "cpj" else len(item.candidates)
        for segments, extra in prompts:
            out.append(PromptRecord(STUDY, _text(segments), _golds(task, item), n, task=task,
                                    template=cfg.method,
                                    extra={**base, **extra,
                                           **({"parts": parts} if cfg.method == "zero-shot" else {})}))
    return out


def prompt_records(cfg: CopenConfig, sets: dict) -> list[PromptRecord]:
    """Every prompt of the run, task by task (test items first, as the report lists them)."""
    from .study import train_dev

    records = []
    for task, splits in sets.items():
        test = select(splits.get("test", []), cfg.limit_for(task), cfg.seed)
        records += item_records(cfg, task, test, "test")
        if cfg.method != "zero-shot":
            train, dev = train_dev(task, splits, cfg)
            records += item_records(cfg, task, train, "train") + item_records(cfg, task, dev, "dev")
    return records


def dry_run(cfg: CopenConfig, out: str | Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    from .study import load_sets

    with tempfile.TemporaryDirectory(prefix="kgprobe-copen-dry-") as tmp:
        sets, _ = load_sets(cfg, Path(tmp), progress=True)  # generated in tmp, never in OUT
        return write_prompts(out, prompt_records(cfg, sets))
