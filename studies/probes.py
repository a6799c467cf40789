"""The records every ranking study passes from prompt to report, and the scoring between.

A `ProbeRequest` is one prompt to rank candidates for: its item, text, candidates, golds, the
other true answers filtered ranking leaves out, its pseudoword (and soft) vectors and the
setting it belongs to. `predict` scores requests and returns `Prediction`s (scores, the golds'
ranks, the top candidates); `summarize` turns predictions into a unit's row through
`metrics.rank_metrics`, the one definition of R@k, MRR and MRRa, which the per-item
observations (`Study.observations`, `kgprobe compare`) also use.

Grouping the prompts that share a candidate list lets the model batch them (and the score cache
serve repeats), and scoring a group in chunks keeps a progress bar moving through phases that
take minutes (a prompt against ~800 candidates takes seconds on a CPU).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from tqdm import tqdm

#: Prompts per scorer call: large enough to batch, small enough for a live progress bar.
CHUNK = 32


@dataclass
class Request:
    """One prompt to score against `candidates`, with its pseudoword (and soft) vectors."""

    prompt: str
    candidates: tuple[str, ...]
    vectors: Mapping | None = None


@dataclass
class ProbeRequest(Request):
    """A `Request` that knows what it asks: `item` (its id), `golds` (indices into
    `candidates`), `also_true` (other true answers' indices, left out of the golds' ranks under
    filtered ranking) and `setting` (the fields naming its cell or its place in it)."""

    item: str = ""
    golds: tuple[int, ...] = ()
    also_true: tuple[int, ...] = ()
    setting: Mapping = field(default_factory=dict)


@dataclass
class Prediction:
    """A scored `ProbeRequest`: every candidate's score and the golds' ranks (filtered or
    raw, as the run asked)."""

    request: ProbeRequest
    scores: np.ndarray
    ranks: tuple[int, ...]

    def top(self, k: int, *, skip_also_true: bool = False) -> list[int]:
        """The indices of the `k` best candidates (stable order; without the other true
        answers when `skip_also_true`)."""
        left_out = set(self.request.also_true) if skip_also_true else set()
        order = [i for i in np.argsort(-self.scores, kind="stable") if i not in left_out]
        return order[:k]


def predict(scorer, requests: Sequence[ProbeRequest], *, filtered: bool, batch_size: int,
            desc: str, progress: bool = True) -> list[Prediction]:
    """Score `requests` and rank each one's golds (`metrics.ranks_of`)."""
    from kgprobe.studies.metrics import ranks_of

    rows = score_requests(scorer, requests, batch_size=batch_size, desc=desc,
                          progress=progress) if requests else []
    return [Prediction(req, row, tuple(int(r) for r in ranks_of(
        row, list(req.golds), filtered=filtered, also_true=req.also_true)) if req.golds else ())
            for req, row in zip(requests, rows)]


def summarize(predictions: Sequence[Prediction], ks: Sequence[int]) -> dict[str, float]:
    """A unit's metrics: the mean of each prediction's `metrics.rank_metrics` (fractions in
    [0, 1]) and ``n``."""
    from kgprobe.studies.metrics import rank_metrics

    keys = [f"R@{k}" for k in ks] + ["MRR", "MRRa", "accuracy"]
    if not predictions:
        return {**{k: 0.0 for k in keys}, "n": 0}
    totals = dict.fromkeys(keys, 0.0)
    for prediction in predictions:
        for key, value in rank_metrics(prediction.ranks, ks).items():
            totals[key] += value
    result: dict[str, float] = {k: v / len(predictions) for k, v in totals.items()}
    result["n"] = len(predictions)
    return result


def score_requests(scorer, requests: Sequence[Request], *, batch_size: int, desc: str,
                   progress: bool = True) -> list[np.ndarray]:
    """Score rows of `requests` (in their order); prompts sharing candidates go together.

    A scorer with ``given_gold_counts`` (the ``test-prior`` control, `models.general_prior`) ranks by
    the golds of the requests it scores (`held_out_scores`), by what the scorer asks for and
    never by its name. No other scorer sees a gold."""
    given = getattr(scorer, "given_gold_counts", None)
    if callable(given):
        return held_out_scores(given, requests, batch_size=batch_size)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, req in enumerate(requests):
        groups.setdefault(req.candidates, []).append(i)
    rows: list[np.ndarray | None] = [None] * len(requests)
    with tqdm(total=len(requests), desc=desc, unit="prompt", disable=not progress,
              leave=False) as bar:
        for cands, idx in groups.items():
            for start in range(0, len(idx), CHUNK):
                part = idx[start : start + CHUNK]
                vectors = [dict(requests[i].vectors or {}) for i in part]
                scores = scorer.score([requests[i].prompt for i in part], list(cands),
                                      pseudowords=vectors if any(vectors) else None,
                                      batch_size=batch_size)
                for i, row in zip(part, scores):
                    rows[i] = row
                bar.update(len(part))
    return rows  # type: ignore[return-value]


def held_out_scores(given, requests: Sequence[Request], *, batch_size: int) -> list[np.ndarray]:
    """Each request ranked by a scorer handed (`given`) the gold counts of this call's requests (a
    cell or a unit: every study scores one through one call) *of the other items*: the
    distribution of a cell's answers without the item's own. Counting the item's own gold
    would put every gold above the distractors no other item has as a gold: the prior would
    read the answer, not the distribution (on the demo preset it scored 86.8 MRR with both
    premises written and 96.5 at depth 2 beside naming distractors; leaving the item out,
    69.6 and 90.7). Requests without an item id are each their own item."""
    golds = [[req.candidates[i] for i in getattr(req, "golds", ())] for req in requests]
    items = [getattr(req, "item", "") or f"#{i}" for i, req in enumerate(requests)]
    # the other items' gold counts are all counts less the item's own: one pass over the golds,
    # where listing every other request's golds for each request grew with its square
    total: Counter[str] = Counter(label for g in golds for label in g)
    own: dict[str, Counter[str]] = {}
    for g, item in zip(golds, items):
        own.setdefault(item, Counter()).update(g)
    rows = []
    held: tuple[str, Any] | None = None  # the last item's scorer: its next request reuses it
    for i, req in enumerate(requests):
        if held is None or held[0] != items[i]:
            held = items[i], given(total - own[items[i]])
        rows.append(held[1].score([req.prompt], list(req.candidates), batch_size=batch_size)[0])
    return rows
