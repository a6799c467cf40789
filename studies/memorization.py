"""The memorization study: does a model complete TP/SCO/SPO/DM/RG cloze prompts?

Each (task, template, masks, pooling) is one resumable unit: every test prompt is scored
against the task's whole candidate set and ranked (R@1, R@5, R@10, MRR, MRRa).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import KgprobeError
from ..ontology.loaders import bundled_source
from ..ontology.model import Ontology
from ..ontology.verbalize import (
    TemplateSet, capitalize, default_pattern, load_templates, normalize_label, property_meta,
)
from ..reasoning.memorizing import (
    RELATIONS, MemorizingRecord, candidate_sets, generate_memorizing, load_reference,
    relation_name,
)
from .metrics import FrequencyBaseline, RandomBaseline, evaluate, gold_indices
from .runner import Unit, run_units

COLUMNS = ["task", "template", "masks", "pooling", "split", "n", "R@1", "R@5", "R@10", "MRR", "MRRa"]
#: The paper evaluates TP and SCO on test records 20–519 and the other tasks on all of them.
PAPER_LIMITS = {"type": 500, "subClassOf": 500}
BASELINES = ("frequency", "random")


@dataclass
class MemorizingSet:
    relation: str
    records: list[MemorizingRecord]
    candidates: list[str]
    metas: dict[str, dict]  # record id → meta fields for its template (domain/range prompts)


def _property_metas(records: Sequence[MemorizingRecord], onto: Ontology) -> dict[str, dict]:
    by_label = {normalize_label(p.label): p for p in onto.properties.values()}
    metas = {}
    for rec in records:
        prop = by_label.get(normalize_label(rec.subject))
        dom = onto.label(prop.domain[0]) if prop and prop.domain else None
        rng = onto.label(prop.range[0]) if prop and prop.range else None
        metas[rec.id] = property_meta(rec.pattern or default_pattern(rec.subject),
                                      dom and normalize_label(dom), rng and normalize_label(rng))
    return metas


def reference_sets(tasks: Sequence[str] = RELATIONS) -> dict[str, MemorizingSet]:
    """The paper's sets over the bundled ontology's candidate labels."""
    onto = bundled_source().ontology
    cands, kinds = candidate_sets(onto), load_templates()
    out = {}
    for relation in (relation_name(t) for t in tasks):
        records = load_reference(relation)
        base = cands[kinds[relation].candidates]
        # A few gold labels of the paper's files name no class of class.json ('Legal Case'):
        # they join the candidates so every item stays answerable.
        known = set(base)
        extra = [a for r in records for a in r.answers if a not in known]
        out[relation] = MemorizingSet(relation, records, base + list(dict.fromkeys(extra)),
                                      _property_metas(records, onto))
    return out


def generated_sets(directory: str | Path, tasks: Sequence[str] = RELATIONS) -> dict[str, MemorizingSet]:
    """Sets written by `kgprobe generate memorizing`."""
    directory = Path(directory)
    try:
        cands = json.loads((directory / "candidates.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KgprobeError(f"{directory}: no candidates.json; write the set with "
                           "`kgprobe generate memorizing --out DIR`") from None
    kinds = load_templates()
    out = {}
    for relation in (relation_name(t) for t in tasks):
        path = directory / f"{relation}.jsonl"
        if not path.exists():
            continue
        records = [MemorizingRecord(**json.loads(line))
                   for line in path.read_text(encoding="utf-8").splitlines()]
        metas = {r.id: property_meta(r.pattern or default_pattern(r.subject), None, None)
                 for r in records}
        out[relation] = MemorizingSet(relation, records, cands[kinds[relation].candidates], metas)
    return out


def generated_memorizing_sets(onto: Ontology, tasks: Sequence[str] = RELATIONS, *,
                              seed: int = 0) -> dict[str, MemorizingSet]:
    """Sets generated from any ontology (seeded split), over its own candidate labels."""
    cands, kinds = candidate_sets(onto), load_templates()
    out = {}
    for relation, records in generate_memorizing(onto, tasks, seed=seed).items():
        out[relation] = MemorizingSet(relation, records, cands[kinds[relation].candidates],
                                      _property_metas(records, onto))
    return out


def prompts_for(mset: MemorizingSet, records: Sequence[MemorizingRecord], templates: TemplateSet,
                template: int) -> list[str]:
    tmpl = templates[mset.relation].manual[template]
    return [capitalize(tmpl.render(text_a=r.subject, meta=mset.metas.get(r.id))) for r in records]


def select(records: Sequence[MemorizingRecord], split: str, limit: int | None) -> list[MemorizingRecord]:
    chosen = [r for r in records if r.split == split]
    return chosen[:limit] if limit is not None else chosen


def make_scorer(model: str, loaded, mset: MemorizingSet, *, masks: str, pooling: str | None,
                seed: int):
    """A model's scorer, or a baseline pseudo-model fitted to this task's train split."""
    if model == "frequency":
        return FrequencyBaseline([r.answers for r in mset.records if r.split == "train"], seed=seed)
    if model == "random":
        return RandomBaseline(seed=seed)
    from ..prompts.scoring import make_scorer as model_scorer

    return model_scorer(loaded, masks=masks, pooling=pooling)


def score_unit(scorer, prompts: list[str], records: Sequence[MemorizingRecord],
               candidates: list[str], batch_size: int) -> tuple[dict, list[dict]]:
    scores = scorer.score(prompts, candidates, batch_size=batch_size) if prompts else np.zeros((0, 0))
    golds = [gold_indices(candidates, r.answers) for r in records]
    metrics = evaluate(scores, golds, ks=(1, 5, 10))
    preds = []
    for rec, prompt, row, gold in zip(records, prompts, scores, golds):
        order = np.argsort(-row, kind="stable")[:10]
        ranks = [int(np.count_nonzero(row >= row[g])) for g in gold]
        preds.append({"id": rec.id, "subject": rec.subject, "prompt": prompt,
                      "answers": rec.answers, "gold_ranks": ranks,
                      "top10": [[candidates[i], round(float(row[i]), 4)] for i in order]})
    return metrics, preds


def run_memorization(model: str, out: str | Path, *, tasks: Sequence[str] = RELATIONS,
                     templates: str = "all", masks: str = "multi", pooling: str | None = None,
                     split: str = "test", limit: int | None = None, seed: int = 0,
                     probes: str | Path | None = None, device: str = "cpu",
                     batch_size: int = 64, progress: bool = True) -> list[dict]:
    """Run (or resume) the study and return the result rows."""
    tmpl_set = load_templates()
    sets = generated_sets(probes, tasks=tasks) if probes else reference_sets(tasks)
    loaded = None
    if model not in BASELINES:
        from ..prompts.models import load_model

        loaded = load_model(model, device=device)
    pooling_name = pooling or ("mean" if loaded is not None and loaded.kind == "masked" else
                               "sum" if loaded is not None else "-")
    masks_name = masks if loaded is not None and loaded.kind == "masked" else "-"
    units = []
    for relation, mset in sets.items():
        n_templates = len(tmpl_set[relation].manual)
        chosen = range(n_templates) if templates == "all" else [int(templates)]
        task_limit = limit if limit is not None else (PAPER_LIMITS.get(relation) if probes is None else None)
        records = select(mset.records, split, task_limit)
        for t in chosen:
            if not 0 <= t < n_templates:
                raise KgprobeError(f"task {relation} has templates 0–{n_templates - 1}, not {t}")

            def run(mset=mset, records=records, t=t):
                scorer = make_scorer(model, loaded, mset, masks=masks, pooling=pooling, seed=seed)
                return score_unit(scorer, prompts_for(mset, records, tmpl_set, t), records,
                                  mset.candidates, batch_size)

            units.append(Unit({"task": relation, "template": t, "masks": masks_name,
                               "pooling": pooling_name, "split": split}, run, len(records)))
    return run_units(Path(out), units, COLUMNS, progress=progress)


def format_table(rows: Sequence[dict]) -> str:
    keys = ["task", "template", "n", "R@1", "R@5", "R@10", "MRR", "MRRa"]
    lines = ["  ".join(f"{k:>12}" if i else f"{k:14}" for i, k in enumerate(keys))]
    for row in rows:
        cells = []
        for i, k in enumerate(keys):
            v = row.get(k, "")
            v = f"{100 * float(v):.1f}" if k.startswith(("R@", "MRR")) else str(v)
            cells.append(f"{v:>12}" if i else f"{v:14}")
        lines.append("  ".join(cells))
    return "\n".join(lines)
