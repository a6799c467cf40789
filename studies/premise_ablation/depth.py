"""Depth and distraction (`--depth`, `--distractors`, `--premise-order`): how reasoning with
written premises holds up as the conclusion needs more steps, and beside irrelevant premises.

The paper's cells test one rule application. Here every item of depth k (`reasoning.chains`:
k chained derivations of the engine, k + 1 premises; depth 1 is the study's own sample) is
scored with all its premises written (``p1``/``p2`` "explicit"), with N true but irrelevant
premises written beside them for each N of ``--distractors``, and once with no premise written
(``unwritten``: what the hypothesis alone gets at that depth, the answer's prior). A cell is a
unit (rule × depth × distractors × written or not × manual template) keyed like the study's
own plus ``depth`` and ``distractors``, so a run without these options has neither.
Pseudowords, candidates and filtered ranking are the study's (`candidates.py`); distractors
name the item's other candidates (`naming_names`) unless ``--distractor-kind unrelated``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgprobe.ontology.verbalize import reasoning_text
from kgprobe.reasoning.chains import DistractorPool, arrange, chain_items
from kgprobe.reasoning.items import ReasoningItem, sample_items
from kgprobe.studies.metrics import gold_indices
from kgprobe.studies.probes import ProbeRequest
from kgprobe.studies.runner import Unit

from .build import AblationData, AblationSetup
from .cells import variants
from .columns import WRITTEN, chained_cells


@dataclass
class Chained:
    """A run's chained items by (rule, depth), and the statements distractors come from."""

    items: dict[tuple[str, int], list[ReasoningItem]]
    pool: DistractorPool


def chained_items(data: AblationData) -> Chained:
    """Depth 1: the study's own sample; depth k: a seeded sample of `--limit` chained items of
    each rule's family (every one when the limit is 0). Built once per run's data: the model
    and each control ask the same chains (building them was a tenth of a weightless demo run
    for every control)."""
    if data.chained is None:
        data.chained = _chained_items(data)
    return data.chained


def _chained_items(data: AblationData) -> Chained:
    config, onto = data.config, data.verbalizer.onto
    items = {}
    for rule in config.rules:
        for depth in config.depth:
            if depth == 1:
                items[(rule, 1)] = data.items[rule]
                continue
            every = chain_items(onto, data.closure, data.templates, rule, depth)
            items[(rule, depth)] = sample_items(every, f"{rule}-d{depth}", config.limit, config.seed)
    return Chained(items, DistractorPool(onto, data.closure, data.templates))


def chain_prompt(data: AblationData, chained: Chained, item: ReasoningItem, written: str, distractors: int,
                 variant: int) -> str:
    """The premises as `arrange` writes them (none when `written` is ``unwritten``), the
    conjunction, the hypothesis under manual template `variant`. A depth-1 item with every
    premise written in order and no distractor reads as the study's explicit-explicit prompt."""
    texts = []
    if written == WRITTEN:
        seed = data.config.seed
        extra = chained.pool.pick(item, distractors, seed, naming_names(data, item))
        texts = [p.text for p in arrange(item, extra, data.config.premise_order, seed)]
    return reasoning_text(texts, data.templates.conjunction, item.hypotheses[variant])


def naming_names(data: AblationData, item: ReasoningItem) -> list[str]:
    """What naming distractors name (``--distractor-kind naming``, the default): the item's
    candidates that are no true answer of it (none with ``unrelated``). Without them, under
    ``--candidates K`` a distractor almost never names a candidate and the gold stays the
    only candidate the prompt names (a copy heuristic finds it)."""
    from .candidates import item_candidates, item_others

    if data.config.distractor_kind != "naming":
        return []
    true = set(item.answers) | item_others(data, item)
    return [c for c in item_candidates(data, item) if c not in true]


def depth_units(setup: AblationSetup, progress: bool = False) -> list[Unit]:
    """Every chained cell of the run as a resumable unit."""
    data, config = setup.data, setup.config
    chained = chained_items(data)
    units = []
    for rule in config.rules:
        for depth, n, written in chained_cells(config.depth, config.distractors):
            items = chained.items[(rule, depth)]
            for variant in variants(data.templates, rule, "manual"):
                def run(rule=rule, depth=depth, n=n, written=written, variant=variant):
                    metrics, preds = run_chain_cell(setup, chained, rule, depth, n, written,
                                                    variant, progress)
                    return {**metrics, "protocol": data.protocol.name,
                            "ranking": config.ranking}, preds

                key = {"rule": rule, "p1": written, "p2": written, "template": "manual",
                       "variant": variant, "depth": depth, "distractors": n}
                units.append(Unit(key, run, len(items) * config.pairs))
    return units


def chain_requests(data: AblationData, pseudowords: list[dict], chained: Chained, rule: str,
                   depth: int, distractors: int, written: str, variant: int) -> list[ProbeRequest]:
    """One chained cell's requests: every item's prompt under every pseudoword pair (the
    vectors of `pseudowords`), in item order; the run scores them and the dry run writes
    them (one line a text)."""
    from .candidates import item_candidates, item_others, pair_requests

    requests = []
    for item in chained.items[(rule, depth)]:
        candidates = item_candidates(data, item)
        also = gold_indices(candidates, item_others(data, item))
        text = chain_prompt(data, chained, item, written, distractors, variant)
        requests += pair_requests(text, candidates, gold_indices(candidates, item.answers), also,
                                  item=item.id, pseudowords=pseudowords)
    return requests


def run_chain_cell(setup: AblationSetup, chained: Chained, rule: str, depth: int, distractors: int,
                   written: str, variant: int, progress: bool = False) -> tuple[dict, list[dict]]:
    """Score one chained cell (predictions shaped like the study's own, `study.run_cell`)."""
    from .candidates import score_cell

    requests = chain_requests(setup.data, setup.model.pseudowords, chained, rule, depth,
                              distractors, written, variant)
    if not requests:
        return {"n": 0}, []
    answers = {item.id: item.answers for item in chained.items[(rule, depth)]}
    return score_cell(setup, requests, answers, desc=f"{rule} depth {depth} +{distractors} "
                      f"({written})", progress=progress)


def dry_records(data: AblationData) -> list:
    """`--dry-run`: every chained prompt a run would score (`PromptRecord`s, kind "chain"):
    the requests of `chain_requests`, one line a text (the pairs change only the vectors)."""
    from kgprobe.studies.dry_run import PromptRecord

    chained = chained_items(data)
    config, blank = data.config, data.blank_pseudowords()
    out = []
    for rule in config.rules:
        for depth, n, written in chained_cells(config.depth, config.distractors):
            items = chained.items[(rule, depth)]
            by_variant = {v: chain_requests(data, blank, chained, rule, depth, n, written, v)[::len(blank)]
                          for v in variants(data.templates, rule, "manual")}
            for i, item in enumerate(items):
                for v, requests in by_variant.items():
                    req = requests[i]
                    out.append(PromptRecord(
                        "premise-ablation", req.prompt, tuple(item.answers), len(req.candidates),
                        rule=rule, template=f"manual:{v}", h=item.hypotheses[v],
                        extra={"kind": "chain", "item": item.id, "depth": depth,
                               "distractors": n, "written": written == WRITTEN,
                               "order": config.premise_order, "protocol": "default",
                               "pairs": config.pairs}))
    return out
