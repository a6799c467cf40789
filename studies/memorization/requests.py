"""The memorization study's one request stream: its configuration → the prompts it scores.

`plan` turns a `MemorizationConfig` into planned units, each (task, template) with the
`ProbeRequest`s it scores (text with its ``[MASK]``, candidates, golds) and the records they
ask about. The run scores exactly these, ``--dry-run`` writes exactly these (both through the
study's plan, `plan.MemorizationPlan`) and ``kgprobe export lm-eval`` converts exactly these
(`lm_eval.export`), so the three cannot drift: a probe set's language, a template's wording,
a distractor's seed are decided here once. The paper protocol is another provider of the same
requests (`paper_plan`), scored with the paper's metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from kgprobe.errors import KgprobeError
from kgprobe.seeds import seed_key
from kgprobe.studies.probes import ProbeRequest

from .config import MemorizationConfig

@dataclass
class PlannedUnit:
    """One (task, template) unit: its key (without the model's masks and pooling), its
    requests and, in the same order, the records they ask (`MemorizingRecord`s, or the paper
    protocol's `PaperPrompt`s); `mset` is the task's memorizing set (None under the paper
    protocol), which the frequency baseline is fitted to."""

    key: dict
    requests: list[ProbeRequest]
    records: list
    mset: object = None
    answers: list[tuple[str, ...]] = field(default_factory=list)  # each request's answers

    @property
    def task(self) -> str:
        return self.key["task"]

    @property
    def template(self) -> int:
        return self.key["template"]


def select(records: Sequence, split: str, limit: int | None) -> list:
    chosen = [r for r in records if r.split == split]
    return chosen[:limit] if limit else chosen  # None or 0: every record


def chosen_templates(config: MemorizationConfig, relation: str, n: int, *, paper: bool = False) -> list[int]:
    """The manual templates a run asks for, checked against the task's `n` templates."""
    chosen = list(range(n)) if config.templates == "all" else [int(config.templates)]
    for t in chosen:
        if not 0 <= t < n:
            if paper:
                raise KgprobeError(f"--template {t}: task {relation} has paper templates "
                                   f"0–{n - 1}; use one of them or all")
            raise KgprobeError(f"task {relation} has templates 0–{n - 1}, not {t}")
    return chosen


def probe_request(text: str, pool: Sequence[str], answers: Sequence[str], protocol, seed: int, *,
                  item: str, setting: dict, golds_of: Callable | None = None) -> ProbeRequest:
    """The study's one `ProbeRequest` constructor: a prompt ranking `pool` under `protocol`
    (K: its answers and distractors seeded by `seed`), its golds the answers' indices by
    `golds_of` (`metrics.gold_indices` by default; the paper protocol keeps duplicates)."""
    from kgprobe.studies.metrics import gold_indices

    cands = tuple(protocol.candidates(pool, answers, seed=seed))
    return ProbeRequest(text, cands, item=item, golds=tuple((golds_of or gold_indices)(cands, answers)),
                        setting=dict(setting))


def record_requests(texts: Sequence[str], records: Sequence, candidates: Sequence[str], protocol,
                    seed: int, setting: dict | None = None) -> list[ProbeRequest]:
    """One request per record: its prompt, the task's candidates under `protocol` (K: its
    answers and distractors seeded by the run's seed and the record's id) and its golds."""
    return [probe_request(text, candidates, rec.answers, protocol, seed_key(seed, rec.id),
                          item=rec.id, setting=setting or {})
            for rec, text in zip(records, texts)]


def record_prompt(template, record, mset) -> str:
    """A record's cloze under one manual template of its task: its subject (and, for a
    property subject, the property's wording `mset.metas` holds) in the template, capitalized.
    The run, its dry run and `generate memorizing`'s `prompts.tsv` write a record's sentence
    here alone, so what a reviewer reads is what the model is asked."""
    from kgprobe.ontology.verbalize import capitalize

    return capitalize(template.render(text_a=record.subject, meta=mset.metas.get(record.id)))


def default_plan(config: MemorizationConfig) -> list[PlannedUnit]:
    """Every (task, template) unit of the default protocol, in the order the run scores them."""
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.memorizing_sets import PAPER_LIMITS

    protocol = config.candidates
    sets = config.memorizing_sets()  # the paper's, --probes DIR's, or the ontology's
    # a generated set's prompts are written in its labels' language (`generate --lang`)
    templates = load_templates(lang=next(iter(sets.values())).lang if sets else None)
    # a K above every pool fails before the model loads
    protocol.check_pools(mset.candidates for mset in sets.values())
    units = []
    for relation, mset in sets.items():
        limit = config.limit if config.limit is not None else (
            PAPER_LIMITS.get(relation) if config.paper_sets else None)
        records = select(mset.records, config.split, limit)
        for t in chosen_templates(config, relation, len(templates[relation].manual)):
            tmpl = templates[relation].manual[t]
            texts = [record_prompt(tmpl, r, mset) for r in records]
            requests = record_requests(texts, records, mset.candidates, protocol, config.seed,
                                       setting={"task": relation, "template": t})
            # A K run's units are other files, so one folder never mixes protocols.
            extra = {"protocol": protocol.name} if protocol.k is not None else {}
            units.append(PlannedUnit({"task": relation, "template": t, "split": config.split,
                                      **extra}, requests, records, mset,
                                     [tuple(r.answers) for r in records]))
    return units


def paper_prompts(config: MemorizationConfig, relation: str, template: int) -> list:
    """The paper protocol's prompts of one task and template. The official baseline (main.py,
    model_class "baseline") reads the few-shot split, whose test part is every record from 20
    on: Table 4's baseline row covers 8,839 TP and 701 SCO records where the models' rows cover
    500 (`models.registry.scores_for_free`)."""
    from kgprobe.models.registry import scores_for_free
    from kgprobe.reasoning.paper_items import memorizing_prompts

    prompts = memorizing_prompts(relation, template, sliced=not scores_for_free(config.model))
    return prompts[:config.limit] if config.limit else prompts


def paper_candidates(relation: str) -> list[str]:
    """One candidate list per task: the official set of its kind plus any missing gold."""
    from kgprobe.reasoning.paper_items import candidates_for, memorizing_prompts

    prompts = memorizing_prompts(relation, 0)
    return candidates_for(prompts[0].candidates, [g for p in prompts for g in p.golds])


def paper_plan(config: MemorizationConfig) -> list[PlannedUnit]:
    """Every (task, template) unit of the paper protocol: the paper's prompts and test
    records, golds as the official ``gt`` (duplicates kept, `paper_gold_indices`)."""
    from kgprobe.reasoning.paper_items import n_templates
    from kgprobe.studies.paper_metrics import paper_gold_indices

    protocol = config.candidates
    protocol.check_pools(paper_candidates(relation) for relation in config.tasks)
    units = []
    for relation in config.tasks:
        pool = paper_candidates(relation)
        for t in chosen_templates(config, relation, n_templates(relation), paper=True):
            prompts = paper_prompts(config, relation, t)
            requests = [probe_request(p.text, pool, p.golds, protocol,
                                      seed_key(config.seed, "paper", relation, p.record),
                                      item=f"{relation}-ref-{p.record:05d}",
                                      setting={"task": relation, "template": t},
                                      golds_of=paper_gold_indices) for p in prompts]
            units.append(PlannedUnit({"task": relation, "template": t, "split": "test",
                                      "study_protocol": "paper"}, requests, prompts, None,
                                     [tuple(p.golds) for p in prompts]))
    return units


def plan(config: MemorizationConfig) -> list[PlannedUnit]:
    """The units and requests of a run of `config`, under its protocol."""
    return paper_plan(config) if config.protocol == "paper" else default_plan(config)
