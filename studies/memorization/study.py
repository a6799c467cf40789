"""The memorization study: does a model complete TP/SCO/SPO/DM/RG cloze prompts?

Each (task, template, masks, pooling) is one resumable unit: every test prompt is scored
against the task's whole candidate set and ranked (R@1, R@5, R@10, MRR, MRRa). A record's
answers are all true (a type chain, a superclass chain): under ``--ranking filtered`` (the
default) each gold is ranked without the record's other golds (`metrics.filtered_gold_ranks`),
so MRRa no longer counts one true answer against another; ``raw`` is the paper's ranking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kgprobe.errors import KgprobeError
from kgprobe.ontology.verbalize import (
    TemplateSet,
    capitalize,
    load_templates,
)
from kgprobe.reasoning.memorizing import (
    MemorizingRecord,
)
from kgprobe.reasoning.memorizing_sets import (  # noqa: F401 (re-exported)
    PAPER_LIMITS,
    MemorizingSet,
    generated_memorizing_sets,
    generated_sets,
    reference_sets,
)
from kgprobe.studies.memorization.config import MemorizationConfig
from kgprobe.studies.metrics import gold_indices
from kgprobe.studies.runner import Unit, run_units
from kgprobe.studies.settings import pin_settings

COLUMNS = ["task", "template", "masks", "pooling", "split", "n", "R@1", "R@5", "R@10", "MRR", "MRRa",
           "protocol", "study_protocol", "ranking"]


def prompts_for(mset: MemorizingSet, records: Sequence[MemorizingRecord], templates: TemplateSet,
                template: int) -> list[str]:
    tmpl = templates[mset.relation].manual[template]
    return [capitalize(tmpl.render(text_a=r.subject, meta=mset.metas.get(r.id))) for r in records]


def select(records: Sequence[MemorizingRecord], split: str, limit: int | None) -> list[MemorizingRecord]:
    chosen = [r for r in records if r.split == split]
    return chosen[:limit] if limit is not None else chosen


def make_scorer(loaded, mset: MemorizingSet, *, masks: str, pooling: str | None,
                cache: bool = False):
    """The model's scorer after seeing this task's train golds (`LanguageModel.trained_on`:
    the frequency baseline counts them, a pretrained model ignores them)."""
    from kgprobe.models.score_cache import cached_scorer

    train = (r.answers for r in mset.records if r.split == "train")
    return cached_scorer(loaded.trained_on(train).scorer(masks=masks, pooling=pooling), loaded,
                         enabled=cache)


def score_unit(scorer, prompts: list[str], records: Sequence[MemorizingRecord],
               candidates: list[str], batch_size: int, *, desc: str = "scoring",
               progress: bool = False, protocol=None, seed: int = 0,
               ranking: str = "filtered") -> tuple[dict, list[dict]]:
    """Rank each record's candidates: the task's whole set, or (`protocol` K) its golds and
    seeded distractors (`reasoning.distractors`, never another gold, so K stays K); each gold
    without the other golds (``ranking`` filtered) or among every candidate (raw)."""
    from kgprobe.reasoning.distractors import Protocol
    from kgprobe.studies.probes import ProbeRequest, predict, summarize

    protocol = protocol or Protocol(None)
    requests = []
    for rec, prompt in zip(records, prompts):
        cands = tuple(protocol.candidates(candidates, rec.answers, seed=f"{seed}:{rec.id}"))
        requests.append(ProbeRequest(prompt, cands, item=rec.id,
                                     golds=tuple(gold_indices(cands, rec.answers))))
    # in chunks, so that a long unit (500 prompts x 785 candidates) shows progress
    predictions = predict(scorer, requests, filtered=ranking == "filtered",
                          batch_size=batch_size, desc=desc, progress=progress)
    metrics = {**summarize(predictions, ks=(1, 5, 10)), "protocol": protocol.name,
               "ranking": ranking}
    if not predictions:  # an empty split measures nothing: NaN, not a score of 0
        metrics.update({k: float("nan") for k, v in metrics.items()
                        if isinstance(v, float)})
    return metrics, [prediction_record(p, rec) for p, rec in zip(predictions, records)]


def prediction_record(prediction, record: MemorizingRecord) -> dict:
    """A record's line of ``predictions.jsonl``: its golds' ranks and the top ten."""
    req = prediction.request
    return {"id": record.id, "subject": record.subject, "prompt": req.prompt,
            "answers": record.answers, "gold_ranks": list(prediction.ranks),
            "top10": [[req.candidates[i], round(float(prediction.scores[i]), 4)]
                      for i in prediction.top(10)]}


def run_memorization(model: str, out: str | Path, *, progress: bool = True, **settings) -> list[dict]:
    """Run (or resume) the study and return the result rows (`settings`: `MemorizationConfig`)."""
    return run_config(MemorizationConfig(model, **settings), Path(out), progress=progress)


def run_config(config: MemorizationConfig, out: Path, *, progress: bool = True) -> list[dict]:
    """Run (or resume) the study of one validated configuration into `out`; the persistent
    score cache (`models.score_cache`) is shared with the other studies unless
    ``config.cache`` is off."""
    from kgprobe.reasoning.distractors import parse_protocol

    protocol = parse_protocol(config.candidates)
    sets = config.memorizing_sets()  # the paper's, --probes DIR's, or the ontology's
    # a generated set's prompts are written in its labels' language (`generate --lang`)
    tmpl_set = load_templates(lang=next(iter(sets.values())).lang if sets else None)
    # a K above every pool fails before the model loads
    protocol.check_pools(mset.candidates for mset in sets.values())
    from kgprobe.models.loading import load_model

    loaded = load_model(config.model, device=config.device, dtype=config.dtype, seed=config.seed)
    pooling_name = config.pooling or loaded.default_pooling
    masks_name = config.masks if loaded.fills_masks else "-"
    if config.protocol == "paper":
        from .paper import paper_units

        pin_settings(out, config.pinned())
        units = paper_units(config, loaded, masks_name, pooling_name, progress=progress)
        return run_units(out, units, COLUMNS, progress=progress)
    units = []
    for relation, mset in sets.items():
        n_templates = len(tmpl_set[relation].manual)
        chosen = range(n_templates) if config.templates == "all" else [int(config.templates)]
        task_limit = config.limit if config.limit is not None else (
            PAPER_LIMITS.get(relation) if config.paper_sets else None)
        records = select(mset.records, config.split, task_limit)
        for t in chosen:
            if not 0 <= t < n_templates:
                raise KgprobeError(f"task {relation} has templates 0–{n_templates - 1}, not {t}")

            def run(mset=mset, records=records, t=t):
                scorer = make_scorer(loaded, mset, masks=config.masks, pooling=config.pooling,
                                     cache=config.cache)
                metrics, preds = score_unit(
                    scorer, prompts_for(mset, records, tmpl_set, t), records, mset.candidates,
                    config.batch_size, desc=f"{mset.relation} template {t}",
                    progress=progress, protocol=protocol, seed=config.seed,
                    ranking=config.ranking)
                return {**metrics, "study_protocol": "default"}, preds

            # A K run's units are other files, so one folder never mixes protocols.
            extra = {"protocol": protocol.name} if protocol.k is not None else {}
            units.append(Unit({"task": relation, "template": t, "masks": masks_name,
                               "pooling": pooling_name, "split": config.split, **extra}, run,
                              len(records)))
    pin_settings(out, config.pinned())
    return run_units(out, units, COLUMNS, progress=progress)


def format_table(rows: Sequence[dict]) -> str:
    keys = ["task", "template", "n", "R@1", "R@5", "R@10", "MRR", "MRRa"]
    lines = ["  ".join(f"{k:>12}" if i else f"{k:14}" for i, k in enumerate(keys))]
    for row in rows:
        cells = []
        empty = str(row.get("n", "")) == "0"  # an empty cell's metrics are NaN: say so
        for i, k in enumerate(keys):
            v = row.get(k, "")
            if k.startswith(("R@", "MRR")):
                v = "no items" if empty or float(v) != float(v) else f"{100 * float(v):.1f}"
            else:
                v = str(v)
            cells.append(f"{v:>12}" if i else f"{v:14}")
        lines.append("  ".join(cells))
    return "\n".join(lines)
