"""`study memorization --protocol paper`: the paper's memorizing prompts, test slices and
metrics (`reasoning.paper_items`, `studies.paper_metrics`), scored like the default protocol.

Each (task, template) is one resumable unit, as in the default protocol; its rows carry
``study_protocol = paper`` and its predictions the paper's gold ranks (ties in candidate
order, duplicate golds kept).
"""

from __future__ import annotations

from kgprobe.errors import KgprobeError
from kgprobe.reasoning.paper_items import (
    PaperPrompt,
    candidates_for,
    load_records,
    memorizing_prompts,
    n_templates,
)
from kgprobe.studies.paper_metrics import paper_evaluate, paper_gold_indices, paper_ranks
from kgprobe.studies.runner import Unit

from .config import MemorizationConfig


def chosen_templates(config: MemorizationConfig, relation: str) -> list[int]:
    """The manual templates a run asks for, checked against the task's paper templates."""
    n = n_templates(relation)
    chosen = range(n) if config.templates == "all" else [int(config.templates)]
    for t in chosen:
        if not 0 <= t < n:
            raise KgprobeError(f"--template {t}: task {relation} has paper templates "
                               f"0–{n - 1}; use one of them or all")
    return list(chosen)


def task_prompts(config: MemorizationConfig, relation: str, template: int) -> list[PaperPrompt]:
    """The official baseline (main.py, model_class "baseline") reads the few-shot split, whose
    test part is every record from 20 on: Table 4's baseline row covers 8,839 TP and 701 SCO
    records where the models' rows cover 500 (`models.baselines.scores_for_free`)."""
    from kgprobe.models.baselines import scores_for_free

    prompts = memorizing_prompts(relation, template, sliced=not scores_for_free(config.model))
    return prompts[:config.limit] if config.limit is not None else prompts


def task_candidates(relation: str) -> list[str]:
    """One candidate list per task: the official set of its kind plus any missing gold."""
    prompts = memorizing_prompts(relation, 0)
    return candidates_for(prompts[0].candidates, [g for p in prompts for g in p.golds])


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
    return cached_scorer(scorer, loaded, enabled=config.cache)


def score_paper_unit(config: MemorizationConfig, loaded, relation: str, template: int, *,
                     progress: bool = False) -> tuple[dict, list[dict]]:
    from kgprobe.reasoning.distractors import parse_protocol
    from kgprobe.studies.probes import Request, score_requests

    protocol = parse_protocol(config.candidates)
    prompts = task_prompts(config, relation, template)
    pool = task_candidates(relation)
    lists = [tuple(protocol.candidates(pool, p.golds, seed=f"{config.seed}:paper:{relation}:{p.record}"))
             for p in prompts]
    rows = score_requests(_scorer(config, loaded, relation),
                          [Request(p.text, c) for p, c in zip(prompts, lists)],
                          batch_size=config.batch_size, desc=f"{relation} paper template {template}",
                          progress=progress) if prompts else []
    golds = [paper_gold_indices(c, p.golds) for p, c in zip(prompts, lists)]
    metrics = {**paper_evaluate(rows, golds), "protocol": protocol.name, "study_protocol": "paper"}
    preds = []
    for prompt, row, gold, cands in zip(prompts, rows, golds, lists):
        order = sorted(range(len(cands)), key=lambda i: -row[i])[:10]
        preds.append({"id": f"{relation}-ref-{prompt.record:05d}", "prompt": prompt.text,
                      "answers": list(prompt.golds),
                      "gold_ranks": paper_ranks(row, gold).tolist(),
                      "top10": [[cands[i], round(float(row[i]), 4)] for i in order]})
    return metrics, preds


def paper_units(config: MemorizationConfig, loaded, masks: str, pooling: str, *,
                progress: bool = True) -> list[Unit]:
    units = []
    for relation in config.tasks:
        for t in chosen_templates(config, relation):
            def run(relation=relation, t=t):
                return score_paper_unit(config, loaded, relation, t, progress=progress)

            key = {"task": relation, "template": t, "masks": masks, "pooling": pooling,
                   "split": "test", "study_protocol": "paper"}
            units.append(Unit(key, run, len(task_prompts(config, relation, t))))
    return units
