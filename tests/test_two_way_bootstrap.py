"""Intervals for a cell whose prompts cross items with pseudoword pairs (`stats.Crossed`).

The study gives pseudoword pair j to every item, so an easy pair lifts the whole cell: the
interval must count the draw of pairs as well as of items. Coverage is measured on seeded
simulated cells with known mean (bench/two_way_coverage.py's designs, 40 items × 5 pairs).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from kgprobe.studies import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from two_way_coverage import MIXES, coverage, draw  # noqa: E402


@pytest.mark.parametrize("mix", ["items", "pairs", "interaction", "pairs_missing"])
def test_two_way_interval_covers_the_mean_95_times_in_100(mix):
    """1,000 seeded cells per variance mix (item-, pair- and interaction-dominated; empty
    cells): the 95 % interval contains the true mean in 93–97 % of them (a binomial 1.96 SE
    band around 95 % is ±1.4 points; the band here is ±2)."""
    assert 0.93 <= coverage("two_way", MIXES[mix], 40, 5, reps=1000, resamples=0) <= 0.97


def test_item_bootstrap_under_covers_when_pairs_matter():
    """Why the study changed: resampling items alone treats the 5 pairs drawn as the only ones,
    and with a pair effect its 95 % interval misses the mean far more than 5 % of the time."""
    one_way = coverage("one_way", MIXES["pairs"], 40, 5, reps=200, resamples=200)
    assert one_way < 0.8
    assert coverage("two_way", MIXES["pairs"], 40, 5, reps=200, resamples=0) > one_way + 0.1


def test_two_way_estimate_is_the_prompt_weighted_mean_and_reduces_to_anova():
    """The interval is centred on the number the table shows (the cell's prompt-weighted mean);
    on a full one-prompt table its variance is the ANOVA estimator (MS_items + MS_pairs −
    MS_residual) / (items × pairs)."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=(12, 4))
    items, pairs = np.repeat(np.arange(12), 4), np.tile(np.arange(4), 12)
    sample = stats.Crossed.from_prompts(list(items), list(pairs), y.reshape(-1, 1))
    interval = stats.two_way_interval(sample)
    assert interval.estimate[0] == pytest.approx(y.mean())
    assert (interval.n_items, interval.n_prompts) == (12, 48)
    r, c = y.mean(1) - y.mean(), y.mean(0) - y.mean()
    z = y - y.mean(1, keepdims=True) - y.mean(0) + y.mean()
    ms_items, ms_pairs = 4 * (r ** 2).sum() / 11, 12 * (c ** 2).sum() / 3
    ms_res = (z ** 2).sum() / 33
    var, _ = sample.variance()
    expected = max(ms_items + ms_pairs - ms_res, ms_items, ms_pairs) / 48
    assert var[0] == pytest.approx(expected)
    assert interval.lo[0] < y.mean() < interval.hi[0]


def test_pigeonhole_is_seeded_and_brackets_the_estimate():
    sample = draw(np.random.default_rng(0), 20, 3, MIXES["pairs_missing"])
    a = stats.pigeonhole_interval(sample, seed=1, resamples=300)
    b = stats.pigeonhole_interval(sample, seed=1, resamples=300)
    assert a.lo[0] == b.lo[0] and a.lo[0] < a.estimate[0] < a.hi[0]


def _prompts(pairs: int, rules=("rdfs9",)):
    """A premise-ablation cell's prompts: 30 items per rule × `pairs` pairs, a strong pair effect."""
    from kgprobe.studies.premise_ablation.cells import Prompt

    rng = np.random.default_rng(5)
    effect = rng.normal(0, 0.2, pairs)
    out = []
    for rule in rules:
        for i in range(30):
            base = rng.uniform(0.2, 0.6)
            for j in range(pairs):
                v = float(np.clip(base + effect[j] + rng.normal(0, 0.05), 0, 1))
                out.append(Prompt(rule, "not", "not", "manual", 0, f"i{i}", j, (v, v, v, v)))
    return out


def test_premise_ablation_cells_cross_pairs_only_with_several():
    """With --pairs > 1 a cell's interval counts the draw of pairs (wider than the item
    bootstrap's when pairs differ; the same estimate); with one pair the item bootstrap is
    used unchanged, so results.csv of one-pair runs keeps its numbers."""
    from kgprobe.studies.premise_ablation.cells import cell_row, sample
    from kgprobe.studies.premise_ablation.settings import ReportSettings

    key = {"rule": "mean", "p1": "not", "p2": "not", "template": "manual", "variant": "mean"}
    prompts = _prompts(3, rules=("rdfs9", "rdfs11"))
    crossed = cell_row(key, prompts, ReportSettings(pairs=3), stratified=True)
    flat = cell_row(key, prompts, ReportSettings(pairs=1), stratified=True)
    assert crossed["MRR"] == pytest.approx(flat["MRR"])
    assert crossed["MRR_hi"] - crossed["MRR_lo"] > 1.5 * (flat["MRR_hi"] - flat["MRR_lo"])
    assert crossed["n_items"] == flat["n_items"] == 60
    one = _prompts(1)
    row = cell_row(key, one, ReportSettings(pairs=1, resamples=300))
    direct = stats.bootstrap_interval(sample(one), seed=0, key=tuple(key.values()), resamples=300)
    assert (row["MRR_lo"], row["MRR_hi"]) == (float(direct.lo[2]), float(direct.hi[2]))


def test_one_pair_report_says_its_interval_is_conditional_on_the_draw():
    from kgprobe.studies.premise_ablation.report import _interval_words
    from kgprobe.studies.premise_ablation.settings import ReportSettings

    assert "conditional on one pseudoword draw" in _interval_words(ReportSettings(pairs=1))
    assert "conditional on one pseudoword draw" in _interval_words(ReportSettings())
    assert "crossed random factors" in _interval_words(ReportSettings(pairs=5))
