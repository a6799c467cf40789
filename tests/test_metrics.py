"""Ranking metrics (R@k, MRR, MRRa, accuracy) and baseline pseudo-models."""

from __future__ import annotations

import numpy as np
import pytest

from kgprobe.models.baselines import FrequencyBaseline, RandomBaseline
from kgprobe.models.scoring import Scorer
from kgprobe.studies.metrics import (
    accuracy,
    evaluate,
    gold_indices,
    gold_ranks,
    item_metrics,
    recall_at_k,
    reciprocal_mean_rank,
    reciprocal_rank,
)

ROW = [0.9, 0.1, 0.5, 0.3, -1.0, 0.2]  # ranking: 0, 2, 3, 5, 1, 4


def test_ranks_are_one_based():
    assert gold_ranks(ROW, [0]).tolist() == [1]
    assert gold_ranks(ROW, [2, 4]).tolist() == [2, 6]
    assert gold_ranks(ROW, 3).tolist() == [3]


def test_single_gold():
    assert recall_at_k(ROW, [2], 1) == 0.0 and recall_at_k(ROW, [2], 2) == 1.0
    assert reciprocal_rank(ROW, [2]) == 0.5 and reciprocal_mean_rank(ROW, [2]) == 0.5
    assert accuracy(ROW, [0]) == 1.0 and accuracy(ROW, [2]) == 0.0


def test_several_golds():
    # golds at ranks 2 and 4 (candidates 2 and 5)
    m = item_metrics(ROW, [5, 2], ks=(1, 3, 5))
    assert m == {"R@1": 0.0, "R@3": 1.0, "R@5": 1.0, "MRR": 0.5, "MRRa": pytest.approx(1 / 3), "accuracy": 0.0}
    # perfect ranking of 3 golds: MRR 1, MRRa = 1 / mean(1, 2, 3) = 0.5
    assert item_metrics(ROW, [0, 2, 3])["MRRa"] == 0.5


def test_ties_are_pessimistic_and_nan_is_worst():
    flat = [1.0, 1.0, 1.0, 1.0]
    assert gold_ranks(flat, [0]).tolist() == [4]
    assert reciprocal_rank(flat, [0]) == 0.25 and recall_at_k(flat, [1], 3) == 0.0
    assert gold_ranks([0.5, 2.0, 0.5, 0.1], [2]).tolist() == [3]
    assert gold_ranks([float("nan"), 0.0, -5.0], [0]).tolist() == [3]


def test_evaluate_averages_items():
    scores = np.array([ROW, ROW[::-1]])
    result = evaluate(scores, [[0], [0]], ks=(1, 5, 10))
    # item 2: candidate 0 has score 0.2 -> rank 4
    assert result["R@1"] == 0.5 and result["R@5"] == 1.0 and result["R@10"] == 1.0
    assert result["MRR"] == pytest.approx((1 + 1 / 4) / 2)
    assert result["MRRa"] == pytest.approx((1 + 1 / 4) / 2)
    assert result["accuracy"] == 0.5 and result["n"] == 2
    assert all(0.0 <= v <= 1.0 for k, v in result.items() if k != "n")
    assert evaluate(np.zeros((0, 3)), [])["n"] == 0


def test_bad_golds():
    with pytest.raises(ValueError):
        gold_ranks(ROW, [])
    with pytest.raises(ValueError):
        gold_ranks(ROW, [6])
    with pytest.raises(ValueError):
        evaluate([ROW], [[0], [1]])


def test_gold_indices():
    assert gold_indices(["a", "b", "c"], ["c", "a", "zz"]) == [0, 2]


def test_gold_indices_with_many_golds_agree_with_a_scan_per_gold():
    """Past `SCANNED_GOLDS` golds a position table answers; it answers as the scans do
    (first places of repeated candidates, absent labels skipped), for any sequence."""
    import random

    from kgprobe.studies.metrics import SCANNED_GOLDS

    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    sizes = set()
    for _ in range(300):
        pool = [rng.choice(words) for _ in range(rng.randrange(1, 80))]
        golds = set(rng.sample(words, rng.randrange(0, 40)))
        sizes.add(len(golds) > SCANNED_GOLDS)
        want = sorted({pool.index(g) for g in golds if g in pool})
        assert gold_indices(pool, golds) == want
        assert gold_indices(tuple(pool), iter(golds)) == want  # an iterator is read once
    assert sizes == {False, True}  # both ways were taken


def test_frequency_baseline():
    train = [["agent", "person"], ["agent"], ["place", "agent"], ["person"]]
    cands = ["work", "place", "person", "agent", "event", "species"]
    base = FrequencyBaseline(train, seed=1)
    assert isinstance(base, Scorer) and base.name == "frequency"
    scores = base.score(["p1", "whatever [MASK]"], cands)
    assert scores.shape == (2, 6) and np.array_equal(scores[0], scores[1])
    order = [cands[i] for i in np.argsort(-scores[0], kind="stable")]
    assert order[:3] == ["agent", "person", "place"]  # counts 3, 2, 1
    assert set(order[3:]) == {"work", "event", "species"}
    assert len(set(scores[0])) == 6  # no ties
    assert np.array_equal(FrequencyBaseline(train, seed=1).score(["x"], cands), scores[:1])
    other = [tuple(np.argsort(-FrequencyBaseline(train, seed=s).score(["x"], cands)[0])[3:]) for s in range(8)]
    assert len(set(other)) > 1  # the non-gold tail is a seeded random order
    m = evaluate(scores, [[3], [1]])
    assert m["MRR"] == pytest.approx((1 + 1 / 3) / 2)


def test_random_baseline():
    base = RandomBaseline(seed=0)
    assert isinstance(base, Scorer) and base.name == "random"
    cands = [f"c{i}" for i in range(20)]
    prompts = [f"prompt {i} [MASK]" for i in range(3000)]
    scores = base.score(prompts, cands)
    assert np.array_equal(scores[5], base.score([prompts[5]], cands)[0])  # independent of batching
    assert not np.array_equal(scores, RandomBaseline(seed=1).score(prompts, cands))
    assert all(len(set(r)) == 20 for r in scores[:50])
    m = evaluate(scores, [[0]] * len(prompts))
    assert m["R@1"] == pytest.approx(1 / 20, abs=0.015)
    assert m["MRR"] == pytest.approx(sum(1 / r for r in range(1, 21)) / 20, abs=0.02)
