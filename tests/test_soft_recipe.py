"""Appendix A's soft-prompt recipe (`--soft-recipe paper`, soft_recipe.py): its mechanics on
hand-made scores, then both training phases on a tiny model and ontology."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from kgprobe.studies.options import ModelSettings
from kgprobe.studies.premise_ablation import soft_recipe
from kgprobe.studies.premise_ablation.soft_recipe import (
    bce_over_candidates,
    mrra,
    train_recipe,
)

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402


def test_the_loss_is_bce_over_every_candidate():
    scores = torch.tensor([2.0, -1.0, 0.5, 3.0])
    want = -(torch.log(torch.sigmoid(scores[[0, 2]])).sum()
             + torch.log(1 - torch.sigmoid(scores[[1, 3]])).sum()) / 4
    assert bce_over_candidates(scores, [0, 2]).item() == pytest.approx(want.item(), rel=1e-6)
    # a non-gold candidate far down the list still counts (no sampled negatives)
    lowered = scores.clone()
    lowered[3] = -3.0
    assert bce_over_candidates(lowered, [0, 2]) < bce_over_candidates(scores, [0, 2])


def test_mrra_is_one_over_the_mean_gold_rank():
    assert mrra([[0.9, 0.1, 0.5]], [[0, 1]]) == pytest.approx(1 / 2)  # ranks 1 and 3
    assert mrra([[0.5, 0.5]], [[1]]) == pytest.approx(1 / 2)  # ties in candidate order


def _toy():
    """A one-number soft vector v. Training asks for candidate 0 over candidate 1 (BCE pushes
    v up every step); the dev example's gold scores −(v − 2)², ranked first only while v is
    within 0.7 of 2, so the dev MRRa rises and then falls as v keeps growing."""
    seen = []

    def score(ex, params):
        v = params["v"][0]
        if ex == "dev":
            seen.append(float(v))
            return torch.stack([-(v - 2) ** 2, torch.tensor(-0.5)]), [0]
        return torch.stack([v, -v]), [0]

    return score, seen


def test_lr_decays_linearly_per_step_and_the_best_dev_epoch_is_kept():
    score, seen = _toy()
    params = {"v": torch.zeros(1, requires_grad=True)}
    log = train_recipe(score, params, ["a", "b", "c"], ["dev"], epochs=8, batch=2)
    steps = 2 * 8  # ⌈3 / 2⌉ batches an epoch
    assert log["lr"] == pytest.approx([0.5 * (steps - k) / steps for k in range(steps)])
    assert len(log["dev_mrra"]) == 8 and seen[-1] > 2.7  # trained past the dev optimum
    best = log["best_epoch"]
    assert log["dev_mrra"][best] == max(log["dev_mrra"]) == 1.0 > log["dev_mrra"][-1]
    assert all(m < 1.0 for m in log["dev_mrra"][:best])  # the first epoch reaching it
    assert params["v"].item() == pytest.approx(seen[best])  # that epoch's vector, not the last


def test_a_run_whose_dev_mrra_never_rises_keeps_the_initial_vectors():
    def score(ex, params):
        v = params["v"][0]
        return (torch.stack([v, -v]), [0]) if ex != "dev" else (torch.stack([v, v]), [])

    params = {"v": torch.zeros(1, requires_grad=True)}
    log = train_recipe(score, params, ["a"], ["dev"], epochs=2)
    assert log["best_epoch"] is None and params["v"].item() == 0.0


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"))


def test_paper_recipe_trains_both_phases_on_every_candidate_and_a_rerun_reuses_them(
        tmp_path, zoo, tiny_gpt2_dir, monkeypatch):
    from kgprobe.studies.premise_ablation.build import build_setup
    from kgprobe.studies.premise_ablation.config import AblationConfig
    from kgprobe.studies.premise_ablation.soft import train_soft_prompts

    config = AblationConfig(str(tiny_gpt2_dir), rules=("rdfs9",), templates=("soft",), limit=2,
                            soft_epochs=1, soft_recipe="paper",
                            settings=ModelSettings(batch_size=16, cache=False), ontology=zoo)
    setup = build_setup(config)
    sizes = []
    real = bce_over_candidates

    def counting(scores, golds):
        sizes.append(scores.shape[0])
        return real(scores, golds)

    monkeypatch.setattr(soft_recipe, "bce_over_candidates", counting)
    vectors = train_soft_prompts(setup, tmp_path, progress=False)["vectors"]
    log = json.loads((tmp_path / "soft" / "training.json").read_text())
    assert {"type", "subClassOf", "conjunction"} <= set(log)
    trained = [p for p in ("type", "subClassOf", "conjunction") if log[p].get("epochs")]
    assert "conjunction" in trained
    assert all(log[p]["recipe"] == "paper" and len(log[p]["dev_mrra"]) == 1 for p in trained)
    pools = {len(c) for c in setup.data.candidates.values()}
    assert sizes and set(sizes) <= pools  # every loss row is a whole candidate set
    assert {"[conj~0]", "[conj~1]"} <= set(vectors)

    def refuse(*args, **kwargs):
        raise AssertionError("retrained instead of reusing OUT/soft/vectors.pt")

    monkeypatch.setattr(soft_recipe, "train_recipe", refuse)
    again = train_soft_prompts(setup, tmp_path, progress=False)["vectors"]
    assert all(torch.equal(again[k], vectors[k]) for k in vectors)
