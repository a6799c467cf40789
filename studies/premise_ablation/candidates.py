"""What the premise-ablation study ranks: every candidate of a kind, or the gold and K − 1.

Under ``--candidates all`` every prompt of a kind ranks the same candidate list; under
``--candidates K`` each item (and each premise probe) ranks its gold among its own K − 1
seeded distractors (`reasoning.distractors`). Either way prompts that share a candidate list
go to the scorer together, so the model batches them (and the score cache serves repeats).

Under ``--ranking filtered`` (the default) the other answers an item's premises make true
(`reasoning.filtering`) never count against its gold: K − 1 distractors are drawn from the
candidates that are not true for the item, so K stays K; with every candidate, the list stays
the kind's whole list (shared, so prompts batch) and the gold's rank leaves them out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from kgprobe.reasoning.distractors import distractor_candidates
from kgprobe.reasoning.filtering import others
from kgprobe.reasoning.items import PremiseText, ReasoningItem
from kgprobe.seeds import seed_key
from kgprobe.studies.probes import ProbeRequest

if TYPE_CHECKING:
    from .build import AblationData, AblationSetup


def item_others(data: AblationData, item: ReasoningItem) -> frozenset[str]:
    """The item's true answers other than its gold (none under ``--ranking raw``)."""
    return others(data.truth.item(item), item.answers) if data.truth else frozenset()


def premise_others(data: AblationData, premise: PremiseText) -> frozenset[str]:
    """A premise probe's true answers other than its own (none under ``--ranking raw``)."""
    return others(data.truth.premise(premise), [premise.answer]) if data.truth else frozenset()


def item_candidates(data: AblationData, item: ReasoningItem) -> list[str]:
    """The candidates an item's hypothesis ranks under the run's protocol: drawn once per
    item and run data (every cell and every control asks the item with the same list)."""
    key = (item.id, item.candidates_key, tuple(item.answers))
    drawn = getattr(data, "drawn", None)  # a stand-in without it (the export's) draws anew
    if drawn is None or key not in drawn:
        pool = data.candidates[item.candidates_key]
        found = data.protocol.candidates(pool, item.answers,
                                         seed=seed_key(data.config.seed, item.id),
                                         exclude=sorted(item_others(data, item)))
        if drawn is None:
            return found
        drawn[key] = found
    return list(drawn[key])



def probe_candidates(data: AblationData, candidates_key: str, true: frozenset[str], key: str) -> list[str]:
    """The candidates one memorizing probe (a prompt: a subject and its slot) ranks: every
    candidate, or K − 1 distractors seeded by `key` and every answer `true` for the probe.

    Every premise the probe tests (rdfs9's "Person is an agent", "Person is an animal", …)
    is ranked in this one list, its gold among the K − 1 distractors — the other true answers
    left out (filtered) or counted (raw) — so a probe is scored once, not once a premise."""
    pool = data.candidates[candidates_key]
    if data.protocol.k is None:
        return list(pool)
    golds = sorted(true)
    return distractor_candidates(pool, golds, data.protocol.k - 1 + len(golds),
                                 seed=seed_key(data.config.seed, key))


def probe_request(text: str, candidates: Sequence[str], golds: Iterable[int], *, item: str,
                  vectors: Mapping | None = None, also_true: Iterable[int] = (),
                  pair: int | None = None) -> ProbeRequest:
    """The study's one `ProbeRequest` constructor: every cell, chained cell, counterfactual and
    paper-protocol prompt becomes a request here, so what a request carries (and the setting
    its prediction names) is decided once. `pair`: the pseudoword pair it is asked under
    (None: a paper memorizing probe, whose predictions name none)."""
    return ProbeRequest(text, tuple(candidates), vectors, item=item, golds=tuple(golds),
                        also_true=tuple(also_true), setting={} if pair is None else {"pair": pair})


def pair_requests(text: str, candidates: Sequence[str], golds: Iterable[int],
                  also_true: Iterable[int], *, item: str, pseudowords: Sequence[Mapping],
                  pairs: Iterable[int] | None = None, soft: Mapping | None = None) -> list[ProbeRequest]:
    """One prompt's requests, one per pseudoword pair of `pairs` (every pair by default), each
    with that pair's vectors of `pseudowords` and the trained `soft` vectors (if any)."""
    golds, also_true = tuple(golds), tuple(also_true)
    return [probe_request(text, candidates, golds, item=item, also_true=also_true, pair=pair,
                          vectors={**pseudowords[pair], **soft} if soft else pseudowords[pair])
            for pair in (range(len(pseudowords)) if pairs is None else pairs)]


def score_cell(setup: AblationSetup, requests: list, answers: dict[str, list[str]], *, desc: str,
               progress: bool) -> tuple[dict, list[dict]]:
    """Rank a cell's requests (`studies.probes`): the unit's row and every prompt's
    observation, its golds' ranks, from which the report's intervals are recomputed."""
    from kgprobe.studies.probes import predict, summarize

    from .columns import UNIT_COLUMNS

    predictions = predict(setup.model.scorer, requests, filtered=setup.data.truth is not None,
                          batch_size=setup.config.settings.batch_size, desc=desc, progress=progress)
    preds = [{"item": p.request.item, "pair": p.request.setting["pair"],
              "prompt": p.request.prompt, "answers": answers[p.request.item],
              "gold_rank": min(p.ranks), "gold_ranks": list(p.ranks),
              "top5": [p.request.candidates[i] for i in p.top(5, skip_also_true=True)]}
             for p in predictions]
    metrics = summarize(predictions, ks=(1, 5))
    return {k: v for k, v in metrics.items() if k in UNIT_COLUMNS}, preds
