"""`study memorization --protocol paper`: the paper's memorizing prompts, test slices and
metrics (`reasoning.paper_items`, `studies.paper_metrics`), scored like the default protocol.
Its requests come from `requests.paper_plan`, the same the dry run writes and the lm-eval
export converts.

Each (task, template) is one resumable unit, as in the default protocol; its rows carry
``study_protocol = paper`` and its predictions the paper's gold ranks (ties in candidate
order, duplicate golds kept).
"""

from __future__ import annotations

from kgprobe.reasoning.paper_items import load_records
from kgprobe.studies.paper_metrics import paper_evaluate, paper_ranks
from kgprobe.studies.runner import Unit

from .config import MemorizationConfig
from .requests import PlannedUnit


def _scorer(config: MemorizationConfig, loaded, relation: str):
    """The model's scorer, after seeing the task's train golds (the paper's frequency
    baseline counts them; a pretrained model ignores them: `LanguageModel.trained_on`)."""
    from kgprobe.models.score_cache import cached_scorer
    from kgprobe.ontology.verbalize import normalize_label

    def train():
        for r in load_records(relation):
            if r.split == "train":
                yield [normalize_label(a) for a in r.answers]

    scorer = loaded.trained_on(train()).scorer(masks=config.masks, pooling=config.pooling)
    return cached_scorer(scorer, loaded, enabled=config.settings.cache)


def score_paper_unit(config: MemorizationConfig, loaded, unit: PlannedUnit, *,
                     progress: bool = False) -> tuple[dict, list[dict]]:
    """Score a planned unit's requests (`requests.paper_plan`) with the paper's metrics."""
    from kgprobe.studies.probes import score_requests

    protocol = config.candidates
    requests = unit.requests
    rows = score_requests(_scorer(config, loaded, unit.task), requests,
                          batch_size=config.settings.batch_size,
                          desc=f"{unit.task} paper template {unit.template}",
                          progress=progress) if requests else []
    golds = [list(r.golds) for r in requests]
    metrics = {**paper_evaluate(rows, golds), "protocol": protocol.name, "study_protocol": "paper"}
    preds = []
    for req, answers, row, gold in zip(requests, unit.answers, rows, golds):
        cands = req.candidates
        order = sorted(range(len(cands)), key=lambda i: -row[i])[:10]
        preds.append({"id": req.item, "prompt": req.prompt, "answers": list(answers),
                      "gold_ranks": paper_ranks(row, gold).tolist(),
                      "top10": [[cands[i], round(float(row[i]), 4)] for i in order]})
    return metrics, preds


def paper_units(config: MemorizationConfig, loaded, planned: list[PlannedUnit], masks: str,
                pooling: str, *, progress: bool = True) -> list[Unit]:
    units = []
    for unit in planned:
        def run(unit=unit):
            return score_paper_unit(config, loaded, unit, progress=progress and loaded is not None)

        key = {"task": unit.task, "template": unit.template, "masks": masks, "pooling": pooling,
               **{k: v for k, v in unit.key.items() if k not in ("task", "template")}}
        units.append(Unit(key, run, len(unit.requests)))
    return units
