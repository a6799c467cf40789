"""Counterfactual cells (`--premises true,counterfactual`): the study's items with P1 naming
a false term (`reasoning.counterfactual`), beside the true grid.

A counterfactual cell is keyed like a grid cell plus ``premises`` "counterfactual". Its
gold is the false term the written P1 puts the item under; its candidates are the true
item's own (the real gold among them, so a model that recalls has its answer to pick); under
filtered ranking the other answers true in the counterfactual world are left out, and the
real ontology's answers are not (they are false there). The cells:

* P1 ``explicit`` (the counterfactual P1 written) × P2 ``explicit``, ``implicit``, ``not``,
  P2's setting taken as in the grid (P2 is the same true premise, known or not);
* P1 ``not`` (not written: a false premise is not known) × the same P2 settings: the prompt
  of the grid's P1-unwritten cell, ranked for the false term: its prior without the premise.

Only the manual templates are asked (soft prompts are trained on true premises).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kgprobe.ontology.verbalize import reasoning_text
from kgprobe.reasoning.counterfactual import Counterfactual, candidate_terms, counterfactual
from kgprobe.reasoning.filtering import TrueAnswers
from kgprobe.reasoning.items import ReasoningItem
from kgprobe.studies.metrics import gold_indices
from kgprobe.studies.probes import ProbeRequest
from kgprobe.studies.runner import Unit

from .columns import SETTINGS

if TYPE_CHECKING:
    from .build import AblationData, AblationSetup

COUNTERFACTUAL = "counterfactual"
#: (P1, P2) of every counterfactual cell (see the module)
CELLS = tuple((p1, p2) for p1 in ("not", "explicit") for p2 in SETTINGS)

#: (item, pair) → the P1 and P2 settings the item takes part in (`study.settings_of`)
Settings = Callable[[ReasoningItem, int], tuple[set, set]]


def counterfactuals(data: AblationData) -> dict[str, dict[str, Counterfactual]]:
    """rule → item id → its counterfactual twin (items with none are left out), drawn once
    per `data` from each item's own candidate list (`candidates.item_candidates`)."""
    from .candidates import item_candidates

    if data.twins is not None:
        return data.twins
    verb = data.verbalizer
    truth = data.truth or TrueAnswers.of(verb, data.closure)  # raw ranking: still no true answer
    terms: dict[str, dict[str, str]] = {}
    out: dict[str, dict[str, Counterfactual]] = {}
    for rule, items in data.items.items():
        out[rule] = {}
        for item in items:
            kind = item.candidates_key
            if kind not in terms:
                terms[kind] = candidate_terms(verb, kind)
            twin = counterfactual(verb, truth, item, item_candidates(data, item), terms[kind],
                                  data.config.seed)
            if twin is not None:
                out[rule][item.id] = twin
    data.twins = out
    return out


def counterfactual_requests(data: AblationData, pseudowords: list[dict], twin: Counterfactual,
                            p1: str, p2: str, variant: int,
                            pairs: list[int] | None = None) -> list[ProbeRequest]:
    """A counterfactual item's requests in cell (`p1`, `p2`), one per pseudoword pair of
    `pairs` (every pair by default): the true item's candidates, the false term's gold, the
    counterfactual world's other true answers left out (filtered ranking)."""
    from .candidates import item_candidates, pair_requests

    candidates = item_candidates(data, twin.original)
    golds = gold_indices(candidates, twin.item.answers)
    also = gold_indices(candidates, twin.true - set(twin.item.answers)) if data.truth else ()
    # as `study.reasoning_prompt` writes a manual prompt: the written premises, P1 then P2
    written = [p.text for p, s in zip(twin.item.premises, (p1, p2)) if s == "explicit"]
    text = reasoning_text(written, data.templates.conjunction, twin.item.hypotheses[variant])
    return pair_requests(text, candidates, golds, also, item=twin.item.id,
                         pseudowords=pseudowords, pairs=pairs)


def cell_requests(setup: AblationSetup, rule: str, p1: str, p2: str, settings: Settings,
                  variant: int) -> list[ProbeRequest]:
    """Every prompt of a counterfactual cell: each twin under each pair whose P2 takes `p2`."""
    pseudowords = setup.model.pseudowords
    requests = []
    for item in setup.data.items[rule]:
        twin = counterfactuals(setup.data)[rule].get(item.id)
        if twin is None:
            continue
        pairs = [pair for pair in range(len(pseudowords))
                 if p2 in settings(item, pair)[1]]
        if pairs:
            requests += counterfactual_requests(setup.data, pseudowords, twin, p1, p2, variant,
                                                pairs)
    return requests


def counterfactual_units(setup: AblationSetup, settings: Settings,
                         progress: bool = False) -> list[Unit]:
    """Every counterfactual cell of the run as a resumable unit (manual templates)."""
    from .candidates import score_cell
    from .cells import variants

    data, config = setup.data, setup.config
    units = []
    for rule in config.rules:
        twins = counterfactuals(data)[rule]
        for p1, p2 in CELLS:
            for variant in variants(data.templates, rule, "manual"):
                def run(rule=rule, p1=p1, p2=p2, variant=variant):
                    requests = cell_requests(setup, rule, p1, p2, settings, variant)
                    if not requests:
                        return {"n": 0}, []
                    answers = {i: t.item.answers for i, t in counterfactuals(data)[rule].items()}
                    metrics, preds = score_cell(setup, requests, answers,
                                                desc=f"{rule} counterfactual P1 {p1} P2 {p2}",
                                                progress=progress)
                    return {**metrics, "protocol": data.protocol.name,
                            "ranking": config.ranking}, preds

                key = {"rule": rule, "p1": p1, "p2": p2, "template": "manual",
                       "variant": variant, "premises": COUNTERFACTUAL}
                units.append(Unit(key, run, len(twins) * config.pairs))
    return units


def dry_records(data: AblationData) -> list:
    """`--dry-run`: every counterfactual prompt (kind "reasoning", ``extra.premises``
    "counterfactual"), under each way of writing the premises (P1 written or not × P2
    written or not), one line a text as the grid's."""
    from kgprobe.studies.dry_run import PromptRecord

    from .cells import variants

    blank = data.blank_pseudowords()
    out = []
    for rule, twins in counterfactuals(data).items():
        for twin in twins.values():
            item = twin.item
            for v in variants(data.templates, rule, "manual"):
                for p1, p2 in ((True, True), (True, False), (False, True), (False, False)):
                    s1, s2 = ("explicit" if p1 else "not"), ("explicit" if p2 else "not")
                    req = counterfactual_requests(data, blank, twin, s1, s2, v, pairs=[0])[0]
                    out.append(PromptRecord(
                        "premise-ablation", req.prompt, tuple(item.answers), len(req.candidates),
                        rule=rule, template=f"manual:{v}",
                        p1=item.premises[0].text if p1 else "",
                        p2=item.premises[1].text if p2 else "", h=item.hypotheses[v],
                        extra={"kind": "reasoning", "item": item.id, "protocol": "default",
                               "premises": COUNTERFACTUAL, "recalled": twin.original.answers,
                               "pairs": data.config.pairs}))
    return out
