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

from kgprobe.ontology.verbalize import TemplateSet, capitalize
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
from kgprobe.studies.memorization.config import COLUMNS, NAME, MemorizationConfig  # noqa: F401
from kgprobe.studies.memorization.requests import plan, record_requests, select  # noqa: F401
from kgprobe.studies.runner import Unit



def prompts_for(mset: MemorizingSet, records: Sequence[MemorizingRecord], templates: TemplateSet,
                template: int) -> list[str]:
    """The prompts of `records` under a manual template (as `requests.default_plan` writes them)."""
    tmpl = templates[mset.relation].manual[template]
    return [capitalize(tmpl.render(text_a=r.subject, meta=mset.metas.get(r.id))) for r in records]


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

    protocol = protocol or Protocol(None)
    requests = record_requests(prompts, records, candidates, protocol, seed)
    return score_requests_unit(scorer, requests, records, batch_size, desc=desc,
                               progress=progress, protocol=protocol, ranking=ranking)


def score_requests_unit(scorer, requests: Sequence, records: Sequence[MemorizingRecord],
                        batch_size: int, *, desc: str, progress: bool, protocol,
                        ranking: str) -> tuple[dict, list[dict]]:
    """A unit's row and predictions: its planned requests scored and ranked."""
    from kgprobe.studies.probes import predict, summarize

    # in chunks, so that a long unit (500 prompts x 785 candidates) shows progress
    predictions = predict(scorer, list(requests), filtered=ranking == "filtered",
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
    """Run (or resume) the study and return the model's result rows (`settings`:
    `MemorizationConfig`), through the study's lifecycle (`contract.Study.execute`)."""
    from kgprobe.studies.options import ModelSettings

    from kgprobe.studies.registry import get_study

    config = MemorizationConfig(model, settings=ModelSettings.taken_from(settings), **settings)
    return get_study(NAME).run_rows(config, out, progress=progress)


def study_units(config: MemorizationConfig, loaded, planned: list, *,
                progress: bool = True) -> list[Unit]:
    """The units of `planned` scored by `loaded` (the run's model or a control): ranked
    (default or paper protocol) or, with ``--answers generate``, written and graded."""
    pooling_name = config.pooling or loaded.default_pooling
    masks_name = config.masks if loaded.fills_masks else "-"
    if config.protocol == "paper":
        from .paper import paper_units

        return paper_units(config, loaded, planned, masks_name, pooling_name, progress=progress)
    if config.answers == "generate":
        from .generate import generate_units

        return generate_units(config, loaded, planned, progress=progress)
    units = []
    for unit in planned:
        def run(unit=unit):
            scorer = make_scorer(loaded, unit.mset, masks=config.masks, pooling=config.pooling,
                                 cache=config.settings.cache)
            metrics, preds = score_requests_unit(
                scorer, unit.requests, unit.records, config.settings.batch_size,
                desc=f"{unit.task} template {unit.template}",
                progress=progress, protocol=config.candidates,
                ranking=config.ranking)
            return {**metrics, "study_protocol": "default"}, preds

        key = {"task": unit.task, "template": unit.template, "masks": masks_name,
               "pooling": pooling_name,
               **{k: v for k, v in unit.key.items() if k not in ("task", "template")}}
        units.append(Unit(key, run, len(unit.records)))
    return units


def recorded(config: MemorizationConfig) -> dict:
    """What config.json records beside the pinned settings: the candidate protocol. Not
    pinned, as each protocol's units are their own files (a folder may hold several; the
    ``protocol`` cell column tells them apart), so it says the latest run's, and an older
    folder that lacks it resumes; `kgprobe compare` refuses runs that record different ones.
    The controls never change the model's units (`studies.controls`): recorded, not pinned,
    so a rerun with another list resumes the model's units and scores only new controls."""
    return {"candidates": config.candidates.option, "controls": list(config.controls)}


def format_table(rows: Sequence[dict]) -> str:
    """The report's table; under each cell, indented, every control's values on the same
    requests (`controls`), where results.csv holds them."""
    from kgprobe.studies.controls import control_view, shown_controls

    from .controls import RANK_METRICS

    keys = ["task", "template", "n", "R@1", "R@5", "R@10", "MRR", "MRRa"]
    lines = ["  ".join(f"{k:>12}" if i else f"{k:14}" for i, k in enumerate(keys))]
    controls = shown_controls(rows, RANK_METRICS)
    for row in rows:
        lines.append(_line(row, keys))
        for control in controls:
            view = control_view(row, control, RANK_METRICS)
            if view is not None:
                lines.append(_line({**view, "task": f"  {control}", "template": "",
                                    "n": row.get("n", "")}, keys))
    return "\n".join(lines)


def _line(row: dict, keys: Sequence[str]) -> str:
    cells = []
    empty = str(row.get("n", "")) == "0"  # an empty cell's metrics are NaN: say so
    for i, k in enumerate(keys):
        v = row.get(k, "")
        if k.startswith(("R@", "MRR")):
            v = ("no items" if empty or float(v) != float(v) else f"{100 * float(v):.1f}"
                 ) if v != "" else "-"
        else:
            v = str(v)
        cells.append(f"{v:>12}" if i else f"{v:14}")
    return "  ".join(cells)
