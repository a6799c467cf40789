"""`study premise-ablation --protocol paper`: the paper's items, memorized split and metrics.

Items are the official code's (`reasoning.paper_items`: one per test record of the premise's
memorizing file, every answer on the chain gold). Each premise is classified over the
relation's whole test set, whatever ``--limit`` keeps: P1 by the memorization study's prompt
of the record, P2 by the official code's P2 probe (per pseudoword pair where it has one), and
split by the paper's rule (top half by reciprocal rank; the official code's get_memorized) or,
for P1, the official code's rank-1 rule (``--memorized rank1``). A cell's numbers are the mean
over pseudoword pairs of the paper's metrics over the cell's items (Appendix A).

With ``--templates manual,soft`` every cell is also scored in the official code's soft form
(soft templates and conjunctions trained by Appendix A's recipe: `paper_soft.py`), on the
items the manual cell scores: the soft cells take the manual probes' split.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from kgprobe.atomic import write_json
from kgprobe.reasoning.paper_items import (
    PaperItem,
    PaperPrompt,
    candidates_for,
    paper_items,
)
from kgprobe.seeds import seed_key
from kgprobe.studies.paper_metrics import (
    paper_evaluate,
    paper_gold_indices,
    paper_ranks,
    split_rank1,
    split_top_half,
)
from kgprobe.studies.probes import ProbeRequest, score_requests
from kgprobe.studies.runner import Unit

from .candidates import probe_request
from .columns import SETTINGS
from .config import AblationConfig
from .paper_soft import soft_key

SLOTS = ("[X0]", "[Y0]")  # the official code's pseudoword tokens (PW_NUM = 1)


@dataclass
class PaperStudy:
    config: AblationConfig
    items: dict[str, list[PaperItem]]  # every item: the memorized split is over all of them
    loaded: object
    scorer: object
    pseudowords: list[dict]  # one {"[X0]": v, "[Y0]": v} per pair
    soft: dict = field(default_factory=dict)  # paper_soft.soft_key → trained soft vectors

    def evaluated(self, rule: str) -> list[PaperItem]:
        """The items a cell scores: the first `limit` (all by default)."""
        limit = self.config.limit
        return self.items[rule][:limit] if limit else self.items[rule]


def paper_study(config: AblationConfig) -> PaperStudy:
    """The paper's items, without a model: every request is built as the run builds it, with
    no vectors (the dry run's; the run's once `with_model` adds the model)."""
    return PaperStudy(config, paper_items(config.rules), None, None, [{}] * config.pairs)


def with_model(study: PaperStudy, loaded) -> PaperStudy:
    """`study` with the run's model (loaded by the study's lifecycle, `contract.Study.load`),
    its scorer behind the score cache (``--no-cache``: `ModelSettings.cache`) and its
    pseudowords."""
    from kgprobe.models.score_cache import cached_scorer
    from kgprobe.pseudowords.sampler import sample_pseudoword_sets
    from kgprobe.reasoning.memorizing_sets import reference_sets

    from .build import training_answers

    config = study.config

    def train():  # read only by a model that learns from it (the frequency baseline)
        yield from training_answers(reference_sets())

    trained = loaded.trained_on(train())
    scorer = cached_scorer(trained.scorer(masks="multi"), loaded, enabled=config.settings.cache)
    pseudowords = sample_pseudoword_sets(loaded, config.pairs, SLOTS, seed=config.seed)
    return replace(study, loaded=loaded, scorer=scorer, pseudowords=pseudowords)


def vectors_for(text: str, pair: dict) -> dict:
    """The pair's vectors at the slots the text has (a bare [X] stays literal text)."""
    return {slot: v for slot, v in pair.items() if slot in text}


def _candidates(study: PaperStudy, kind: str, pool_golds, golds, key: str) -> tuple[str, ...]:
    """The kind's official candidates (every gold of the rule ranked), or under ``--candidates
    K`` the prompt's golds and K − 1 distractors seeded by `key`."""

    return tuple(study.config.candidates.candidates(
        candidates_for(kind, pool_golds), list(dict.fromkeys(golds)),
        seed=seed_key(study.config.seed, "paper", key)))


def probe_requests(study: PaperStudy, probes: list[PaperPrompt], pair: dict | None,
                   desc: str) -> list[ProbeRequest]:
    """Memorizing probes as requests: each ranks the kind's candidates (every probe's golds
    in the pool), or its golds and K − 1 distractors seeded by `desc` and its record."""
    pool = [g for p in probes for g in p.golds]
    out = []
    for p in probes:
        cands = _candidates(study, p.candidates, pool, p.golds, f"{desc}:{p.record}")
        out.append(probe_request(p.text, cands, paper_gold_indices(cands, p.golds),
                                 item=str(p.record), vectors=vectors_for(p.text, pair) if pair else None))
    return out


def p1_requests(study: PaperStudy, rule: str) -> list[ProbeRequest]:
    """The P1 probes: one per item of the rule (every item, whatever ``--limit`` keeps)."""
    return probe_requests(study, [i.probes["P1"] for i in study.items[rule]], None,
                          f"{rule} P1 probes")


def p2_requests(study: PaperStudy, rule: str, n: int) -> list[ProbeRequest]:
    """The P2 probes of pseudoword pair `n`: its run's whole population."""
    from kgprobe.reasoning.paper_items import p2_population

    return probe_requests(study, p2_population(rule), study.pseudowords[n],
                          f"{rule} P2 probes (pair {n})")


def has_slot(text: str) -> bool:
    """Whether a prompt holds a pseudoword (its numbers then depend on the pair)."""
    return any(s in text for s in SLOTS)


def item_request(study: PaperStudy, rule: str, item: PaperItem, p1: bool, p2: bool,
                 n: int, kind: str = "manual") -> ProbeRequest:
    """An item's reasoning prompt with P1, P2 written or not, under pseudoword pair `n`: the
    official prompt, or (`kind` "soft") its soft form with the trained vectors of that form
    and pair (`paper_soft.py`; none yet while training, or in the dry run)."""
    pool = [g for i in study.items[rule] for g in i.golds] + list(item.golds)
    text = item.text(p1, p2) if kind == "manual" else item.soft_text(p1, p2)
    soft = {}
    if kind == "soft":
        soft = study.soft.get(soft_key(rule, p1, p2, n if has_slot(text) else None), {})
    cands = _candidates(study, item.candidates, pool, item.golds, item.id)
    return probe_request(text, cands, paper_gold_indices(cands, item.golds), item=item.id,
                         vectors=vectors_for(text, {**study.pseudowords[n], **soft}), pair=n)


def train_soft(study: PaperStudy, out: Path, *, progress: bool = False) -> None:
    """Train (or reload) the soft templates and conjunctions into `study.soft`."""
    from .paper_soft import train_paper_soft

    study.soft = train_paper_soft(study, out, probe_requests=probe_requests,
                                  item_request=item_request, has_slot=has_slot,
                                  progress=progress)


def _reciprocal_ranks(study: PaperStudy, requests: list[ProbeRequest], desc: str,
                      progress: bool) -> list[float]:
    rows = score_requests(study.scorer, requests, batch_size=study.config.settings.batch_size,
                          desc=desc, progress=progress)
    return [1.0 / float(paper_ranks(row, list(req.golds)).min()) if req.golds else 0.0
            for req, row in zip(requests, rows)]


def _split(rr: list[float], records: list[int], rank1: bool) -> dict:
    mem, nope = (split_rank1 if rank1 else split_top_half)(rr)
    return {"records": records, "rr": rr, "memorized": [records[i] for i in mem],
            "not": [records[i] for i in nope]}


def classify_paper_premises(study: PaperStudy, out: Path, *, progress: bool = False) -> dict:
    """rule → {"P1": split, "P2": [split per pair]}; a split holds the population's record
    numbers, their reciprocal ranks and the memorized and not-memorized records. P1 is split
    over the items (the records its memorizing run scores), P2 over its run's population
    (`paper_items.p2_population`). Cached in OUT/memorized.json."""
    from kgprobe.reasoning.paper_items import p2_population

    path = out / "memorized.json"
    if path.exists():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("model") == study.config.model and cached.get("protocol") == "paper":
            return cached["rules"]
    result = {}
    for rule, items in study.items.items():
        rr1 = _reciprocal_ranks(study, p1_requests(study, rule), f"{rule} P1 probes", progress)
        entry = {"P1": _split(rr1, [i.record.index for i in items],
                              study.config.memorized == "rank1"), "P2": []}
        probes = p2_population(rule)
        per_pair = any(has_slot(p.text) for p in probes)
        for n, pair in enumerate(study.pseudowords):
            if n and not per_pair:  # no pseudoword in the probe: every pair ranks alike
                entry["P2"].append(entry["P2"][0])
                continue
            rr2 = _reciprocal_ranks(study, p2_requests(study, rule, n),
                                    f"{rule} P2 probes (pair {n})", progress)
            # the official code splits P2 by the top half under either rule
            entry["P2"].append(_split(rr2, [p.record for p in probes], False))
        result[rule] = entry
    write_json(path, {"model": study.config.model, "protocol": "paper",
                      "memorized": study.config.memorized, "rules": result})
    return result


def _selected(split: dict, setting: str, *, halves: bool = False) -> set[int]:
    """The record numbers a setting keeps: the memorized, the rest, or for explicit every one;
    with `halves` (P2) explicit keeps the two halves' records, as the official code's
    `select_premise` does (`split_by_MRR`'s all_index is memorized + not memorized): with n
    odd the median record, in neither half, is in no explicit-P2 cell (⌊n/2⌋·2 of n)."""
    if setting == "explicit":
        return set(split["memorized"]) | set(split["not"]) if halves else set(split["records"])
    return set(split["memorized" if setting == "implicit" else "not"])


def cell_records(premises: dict, p1: str, p2: str, n: int) -> set[int]:
    """The record numbers of a rule's (P1, P2) cell under pseudoword pair `n`: P1's setting
    (explicit: every record, as `split_by_Acc`'s all_index) and P2's (explicit: both halves)."""
    return _selected(premises["P1"], p1) & _selected(premises["P2"][n], p2, halves=True)


def run_paper_cell(study: PaperStudy, rule: str, p1: str, p2: str, premises: dict,
                   progress: bool = False, kind: str = "manual") -> tuple[dict, list[dict]]:
    items = study.evaluated(rule)
    if not items:
        return {"n": 0}, []
    per_pair, preds = [], []
    for n in range(len(study.pseudowords)):
        keep = cell_records(premises[rule], p1, p2, n)
        chosen = [(k, i) for k, i in enumerate(items) if i.record.index in keep]
        if not chosen:
            continue
        requests = [item_request(study, rule, i, p1 == "explicit", p2 == "explicit", n, kind)
                    for _, i in chosen]
        texts = [r.prompt for r in requests]
        lists = [r.candidates for r in requests]
        rows = score_requests(study.scorer, requests, batch_size=study.config.settings.batch_size,
                              desc=f"{rule} P1 {p1} P2 {p2} pair {n} ({kind})",
                              progress=progress)
        golds = [list(r.golds) for r in requests]
        per_pair.append(paper_evaluate(rows, golds, ks=(1, 5)))
        for (_, item), text, row, gold, cands in zip(chosen, texts, rows, golds, lists):
            ranks = paper_ranks(row, gold)
            order = np.argsort(-np.asarray(row), kind="stable")[:5]
            preds.append({"item": item.id, "pair": n, "prompt": text, "answers": list(item.golds),
                          "gold_rank": int(ranks.min()), "gold_ranks": ranks.tolist(),
                          "top5": [cands[i] for i in order]})
    if not per_pair:
        return {"n": 0}, []
    metrics = {k: float(np.mean([m[k] for m in per_pair])) for k in ("R@1", "R@5", "MRR", "MRRa")}
    return {**metrics, "n": len(preds)}, preds


def paper_units(study: PaperStudy, premises: dict, *, progress: bool = False) -> list[Unit]:

    name = study.config.candidates.name
    units = []
    for rule in study.config.rules:
        for kind in study.config.templates:
            for p1 in SETTINGS:
                for p2 in SETTINGS:
                    def run(rule=rule, p1=p1, p2=p2, kind=kind):
                        metrics, preds = run_paper_cell(study, rule, p1, p2, premises, progress,
                                                        kind)
                        return {**metrics, "protocol": name, "study_protocol": "paper"}, preds

                    key = {"rule": rule, "p1": p1, "p2": p2, "template": kind, "variant": 0,
                           "study_protocol": "paper"}
                    units.append(Unit(key, run, len(study.evaluated(rule)) * study.config.pairs))
    return units
