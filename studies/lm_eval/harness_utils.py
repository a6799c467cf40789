"""`process_results` of kgprobe's lm-evaluation-harness tasks: R@1, R@5 and MRR as kgprobe ranks.

`kgprobe export lm-eval` copies this file beside the task YAMLs as ``utils.py``; lm-eval loads it
from there (``!function utils.process_results``), so it imports nothing but the standard library:
a machine that runs lm-eval needs no kgprobe.

The ranking is kgprobe's (`kgprobe.studies.metrics`): a choice's score is its summed
log-likelihood; a gold's rank counts every choice scoring at least as high (ties are
pessimistic, NaN counts as -inf), and an item's rank is its best gold's. A document exported
with ``ranking: filtered`` (the default) holds no other true answer among its choices, and a
gold's rank counts no other gold (`metrics.filtered_gold_ranks`).
"""

import math

KS = (1, 5)


def gold_rank(scores, gold, filtered=False):
    """1-based pessimistic rank of the best-ranked gold choice (`filtered`: other golds are
    not counted)."""
    clean = [-math.inf if math.isnan(s) else s for s in scores]
    if filtered:
        golds = set(gold)
        return min(1 + sum(1 for i, s in enumerate(clean) if i not in golds and s >= clean[g])
                   for g in gold)
    return min(sum(1 for s in clean if s >= clean[g]) for g in gold)


def process_results(doc, results):
    """lm-eval gives one (log-likelihood, is_greedy) pair per choice, in the doc's order."""
    scores = [float(r[0]) for r in results]
    rank = gold_rank(scores, doc["gold"], doc.get("ranking") == "filtered")
    out = {f"r@{k}": float(rank <= k) for k in KS}
    out["mrr"] = 1.0 / rank
    return out
