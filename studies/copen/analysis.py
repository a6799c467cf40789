"""Metrics and analyses of COPEN predictions (the paper's Tables 2–6 and 11–13).

All computed from prediction records (`copen_methods`); unlabeled items are counted and
never scored.

* accuracy per task (pessimistic ties);
* CSJ: mean reciprocal rank of hard vs easy distractors (Table 3). As in the authors'
  analysis, the 20 distractors are ranked among themselves (best first) and each kind's
  reciprocal ranks are averaged per item, then over items;
* CPJ: chain-level accuracy (a chain counts only when every statement of it is judged
  correctly, and only complete chains of two or more statements count), and the share of
  false positives among the errors (Table 4);
* CiC: the share of out-of-context predictions among the errors (Table 5: the error equals
  the prediction made with the sentence removed), and among the errors on entities with
  more than one concept chain, disambiguation errors (no chain holds both the gold and the
  prediction) vs wrong-level errors (Table 13).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np
from kgprobe.studies.metrics import gold_ranks

from .config import CELL_COLUMNS

METRICS = ("accuracy", "chain_accuracy", "n_chains", "mrr_answer", "mrr_hard", "mrr_easy",
           "fp_share", "ooc_share", "disambiguation_share", "wrong_level_share", "n_errors",
           "n_multi_chain_errors", "tie_share")


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def _all_tie(scores: Sequence[float | None]) -> bool:
    """Every choice got the same score (the scored part does not see what differs)."""
    return len(set(scores)) == 1


def _reciprocal_ranks(scores: Sequence[float | None]) -> np.ndarray:
    """1 / pessimistic rank of every choice (`metrics.gold_ranks`: ties share the worst
    rank; None/NaN lowest)."""
    return 1.0 / gold_ranks(np.array(scores, dtype=np.float64), range(len(scores)))


def task_metrics(task: str, records: Sequence[dict], chain_sizes: Mapping[str, int] | None = None) -> dict:
    """The row of metrics for one task's prediction records (fractions in [0, 1])."""
    labeled = [r for r in records if r.get("label") is not None]
    errors = [r for r in labeled if not r["correct"]]
    out: dict = {"n": len(labeled), "n_unlabeled": len(records) - len(labeled),
                 "accuracy": _mean([float(r["correct"]) for r in labeled]), "n_errors": len(errors),
                 "tie_share": _mean([float(_all_tie(r["scores"])) for r in labeled if len(r.get("scores") or []) > 1])}
    if task == "csj":
        out.update(_csj_metrics(labeled))
    elif task == "cpj":
        out.update(_cpj_metrics(labeled, errors, chain_sizes))
    elif task == "cic":
        out.update(_cic_metrics(errors))
    return out


def _csj_metrics(labeled: Sequence[dict]) -> dict:
    """MRR of the answer, and of the hard and easy distractors ranked among themselves."""
    answer, hard, easy = [], [], []
    for r in labeled:
        answer.append(float(_reciprocal_ranks(r["scores"])[r["label"]]))
        kinds = r.get("kinds") or []
        dis = [i for i in range(len(r["scores"])) if i != r["label"]]
        if not kinds or any(kinds[i] not in ("hard", "easy") for i in dis):
            continue
        rr = _reciprocal_ranks([r["scores"][i] for i in dis])
        h = [rr[j] for j, i in enumerate(dis) if kinds[i] == "hard"]
        e = [rr[j] for j, i in enumerate(dis) if kinds[i] == "easy"]
        if h:
            hard.append(float(np.mean(h)))
        if e:
            easy.append(float(np.mean(e)))
    return {"mrr_answer": _mean(answer), "mrr_hard": _mean(hard), "mrr_easy": _mean(easy)}


def _cpj_metrics(labeled: Sequence[dict], errors: Sequence[dict],
                 chain_sizes: Mapping[str, int] | None) -> dict:
    """False-positive share of the errors and chain-level accuracy over complete chains."""
    fp = sum(1 for r in errors if r["pred"] == 1)
    members: dict[str, list[dict]] = defaultdict(list)
    for r in labeled:
        for c in r.get("chains") or []:
            members[c].append(r)
    complete = [c for c, rs in members.items() if len(rs) > 1 and
                (chain_sizes is None or chain_sizes.get(c, len(rs)) == len(rs))]
    return {"fp_share": fp / len(errors) if errors else None, "n_chains": len(complete),
            "chain_accuracy": _mean([float(all(r["correct"] for r in members[c])) for c in complete])}


def _cic_metrics(errors: Sequence[dict]) -> dict:
    """Out-of-context share of the errors; disambiguation vs wrong-level errors."""
    with_ooc = [r for r in errors if "ooc_pred" in r]
    multi = [r for r in errors if len(r.get("chains") or []) > 1]
    dis = sum(1 for r in multi if is_disambiguation_error(r))
    return {"ooc_share": (sum(r["pred"] == r["ooc_pred"] for r in with_ooc) / len(with_ooc)
                          if with_ooc else None),
            "disambiguation_share": dis / len(multi) if multi else None,
            "wrong_level_share": (len(multi) - dis) / len(multi) if multi else None,
            "n_multi_chain_errors": len(multi)}


def is_disambiguation_error(record: dict) -> bool:
    """No concept chain of the entity holds both the gold and the predicted concept."""
    gold = record["candidates"][record["label"]]
    pred = record["candidates"][record["pred"]]
    return not any(gold in ch and pred in ch for ch in record["chains"])


def chain_sizes(items) -> dict[str, int]:
    """Statements per chain id in a (full, unlimited) CPJ split."""
    sizes: dict[str, int] = defaultdict(int)
    for it in items:
        for c in it.chains:
            sizes[c] += 1
    return dict(sizes)


# ----------------------------------------------------------------------------- baselines


def baselines(task: str, items) -> dict[str, float]:
    """Accuracies that need no model: random (expected), and for CiC always choosing the most
    specific or the most general concept of the first chain."""
    labeled = [it for it in items if it.label is not None]
    if not labeled:
        return {}
    if task == "cpj":
        true = float(np.mean([it.label == 1 for it in labeled]))
        return {"random": 0.5, "always true": true, "always false": 1 - true}
    out = {"random": float(np.mean([1.0 / len(it.candidates) for it in labeled]))}
    if task == "cic":
        def pick(it, end):
            chain = max(it.chains, key=len)
            return it.candidates.index(chain[0 if end == "specific" else -1])

        out["most specific"] = float(np.mean([pick(it, "specific") == it.label for it in labeled]))
        out["most general"] = float(np.mean([pick(it, "general") == it.label for it in labeled]))
    return out


def gold_levels(items) -> dict[int, int]:
    """CiC: how many gold concepts sit at each level of their chain (0 = most specific)."""
    levels: dict[int, int] = defaultdict(int)
    for it in items:
        if it.label is None:
            continue
        gold = it.candidates[it.label]
        levels[min((ch.index(gold) for ch in it.chains if gold in ch), default=-1)] += 1
    return dict(sorted(levels.items()))


# ----------------------------------------------------------------------------- formatting


def pct(x) -> str:
    if x is None or x == "" or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{100 * float(x):.1f}"


def wilson(p: float | None, n: int, z: float = 1.96) -> str:
    """The 95% Wilson interval of an accuracy over n items, in percent."""
    if p is None or not n:
        return "–"
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * max(0.0, centre - half):.0f}–{100 * min(1.0, centre + half):.0f}"


def mean_std(values: Sequence[float]) -> str:
    vals = [float(v) for v in values if v not in (None, "")]
    if not vals:
        return "–"
    if len(vals) == 1:
        return pct(vals[0])
    return f"{100 * np.mean(vals):.1f} ± {100 * np.std(vals):.1f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)




def observations(out) -> list[dict]:
    """Each labeled test item with its metrics (`Study.observations`): ``accuracy`` (the
    study's pessimistic-tie judgement) and, for the choice tasks (CSJ, CiC), the gold's
    pessimistic rank among the choices as ``MRR`` and ``R@k``."""
    from pathlib import Path

    from kgprobe.studies.metrics import rank_metrics
    from kgprobe.studies.stats import read_predictions

    rows = []
    for p in read_predictions(Path(out)):
        if p.get("label") is None:
            continue
        metrics: dict = {"accuracy": float(p["correct"])}
        scores = p.get("scores") or []
        if p["task"] != "cpj" and len(scores) > 1:
            rank = gold_ranks(np.array(scores, dtype=np.float64), [p["label"]])
            metrics = {**rank_metrics(rank), **metrics}
        rows.append({**{c: p.get(c) for c in CELL_COLUMNS}, "item": p["id"], **metrics})
    return rows
