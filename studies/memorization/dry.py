"""`study memorization --dry-run`: the prompts a run would score, without a model.

One `studies.dry_run.PromptRecord` per prompt, in the order the run scores them (task, then
template, then record), under either protocol.
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.dry_run import PromptRecord, write_prompts

from .config import MemorizationConfig

STUDY = "memorization"


def default_records(config: MemorizationConfig) -> list[PromptRecord]:
    from kgprobe.errors import KgprobeError
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.distractors import parse_protocol

    from .study import PAPER_LIMITS, prompts_for, select

    protocol = parse_protocol(config.candidates)
    sets = config.memorizing_sets()  # the paper's, --probes DIR's, or the ontology's
    # a generated set's prompts are written in its labels' language (`--lang`), as a run's
    templates = load_templates(lang=next(iter(sets.values())).lang if sets else None)
    protocol.check_pools(mset.candidates for mset in sets.values())
    out = []
    for relation, mset in sets.items():
        n = len(templates[relation].manual)
        chosen = range(n) if config.templates == "all" else [int(config.templates)]
        limit = config.limit if config.limit is not None else (
            PAPER_LIMITS.get(relation) if config.paper_sets else None)
        records = select(mset.records, config.split, limit)
        for t in chosen:
            if not 0 <= t < n:
                raise KgprobeError(f"task {relation} has templates 0–{n - 1}, not {t}")
            for rec, text in zip(records, prompts_for(mset, records, templates, t)):
                cands = protocol.candidates(mset.candidates, rec.answers,
                                            seed=f"{config.seed}:{rec.id}")
                out.append(PromptRecord(STUDY, text, tuple(rec.answers), len(cands),
                                        task=relation, template=str(t),
                                        extra={"id": rec.id, "protocol": "default"}))
    return out


def paper_records(config: MemorizationConfig) -> list[PromptRecord]:
    from kgprobe.reasoning.distractors import parse_protocol

    from .paper import chosen_templates, task_candidates, task_prompts

    protocol = parse_protocol(config.candidates)
    protocol.check_pools(task_candidates(relation) for relation in config.tasks)
    out = []
    for relation in config.tasks:
        pool = task_candidates(relation)
        for t in chosen_templates(config, relation):
            for p in task_prompts(config, relation, t):
                n = len(protocol.candidates(pool, p.golds,
                                            seed=f"{config.seed}:paper:{relation}:{p.record}"))
                out.append(PromptRecord(STUDY, p.text, p.golds, n, task=relation,
                                        template=str(t),
                                        extra={"record": p.record, "protocol": "paper"}))
    return out


def write_dry_run(config: MemorizationConfig, out: Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    records = paper_records(config) if config.protocol == "paper" else default_records(config)
    Path(out).mkdir(parents=True, exist_ok=True)
    return write_prompts(out, records)
