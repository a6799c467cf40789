"""The persistent score cache: shared across studies, never serving another setting's scores."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pytest
import torch
from kgprobe.cli import main
from kgprobe.models.loading import load_model
from kgprobe.models.score_cache import CachedScorer, ScoreCache, cache_dir

PROMPT = "Paris is the capital of [MASK] ."
CANDS = ["France", "Germany", "banana", "person"]


def rows(directory) -> int:
    """Rows in the cache at `directory` (0 before its first write)."""
    with sqlite3.connect(directory / "scores.sqlite") as db:
        try:
            return db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        except sqlite3.OperationalError:  # no table yet
            return 0


def test_a_rerun_of_a_study_into_a_new_folder_scores_nothing(tmp_path, tiny_llama_dir):
    """The persistent cache serves every request of a second memorization run (a request is
    served only where prompt, candidates and scorer settings all match: the key parts are
    tested one by one below)."""
    from kgprobe.studies.memorization.study import run_memorization

    before = rows(cache_dir())
    run_memorization(str(tiny_llama_dir), tmp_path / "memo", tasks=["domain", "range"], limit=12,
                     batch_size=256, progress=False)
    memo_prompts = {json.loads(line)["prompt"]
                    for line in (tmp_path / "memo" / "predictions.jsonl").read_text().splitlines()}
    assert rows(cache_dir()) - before == len(memo_prompts) >= 2
    run_memorization(str(tiny_llama_dir), tmp_path / "memo2", tasks=["domain", "range"], limit=12,
                     batch_size=256, progress=False)
    assert rows(cache_dir()) - before == len(memo_prompts)
    assert (tmp_path / "memo" / "results.csv").read_text() == (tmp_path / "memo2" / "results.csv").read_text()


def score(scorer, prompt=PROMPT, cands=CANDS, vectors=None):
    return scorer.score([prompt], cands, pseudowords=vectors)[0]


def test_a_hit_returns_the_scored_bytes_and_every_key_part_gets_a_miss(tmp_path, tiny_llama_dir):
    loaded = load_model(str(tiny_llama_dir))
    cache = ScoreCache(tmp_path / "cache")
    scorer = CachedScorer(loaded.scorer(), loaded, cache)
    plain = loaded.scorer().score([PROMPT], CANDS)[0]
    first = score(scorer)
    assert (scorer.hits, scorer.misses) == (0, 1)
    again = score(scorer)
    assert (scorer.hits, scorer.misses) == (1, 1)
    assert np.array_equal(first, again) and np.array_equal(first, plain)

    def misses(other, **kw) -> None:
        n = other.misses
        score(other, **kw)
        assert other.misses == n + 1, kw

    misses(scorer, prompt="Berlin is the capital of [MASK] .")  # the prompt
    misses(scorer, cands=CANDS[::-1])  # the candidate list (order too)
    misses(scorer, cands=CANDS[:3])
    vx = torch.ones(loaded.hidden_size)
    misses(scorer, prompt="[X] is the capital of [MASK] .", vectors={"[X]": vx})
    misses(scorer, prompt="[X] is the capital of [MASK] .", vectors={"[X]": vx * 1.0001})  # vector bytes
    # A vector whose slot is not in the prompt changes nothing: a hit.
    hits = scorer.hits
    score(scorer, vectors={"[Y]": vx})
    assert scorer.hits == hits + 1
    misses(CachedScorer(loaded.scorer(pooling="mean"), loaded, cache))  # scorer settings
    misses(CachedScorer(loaded.scorer(include_suffix=True), loaded, cache))
    half = load_model(str(tiny_llama_dir), dtype="bfloat16")  # dtype
    misses(CachedScorer(half.scorer(), half, cache))
    # The same weights copied elsewhere are another source; changed weights in place another hash.
    copy = tmp_path / "copy"
    shutil.copytree(tiny_llama_dir, copy)
    misses(CachedScorer(load_model(str(copy)).scorer(), load_model(str(copy)), cache))
    model = load_model(str(copy))
    with torch.no_grad():
        model.model.lm_head.weight.mul_(1.5)
    model.model.save_pretrained(copy)
    reloaded = load_model(str(copy))
    misses(CachedScorer(reloaded.scorer(), reloaded, cache))
    # The batch size is no part of the key (it only chunks the work).
    hits = scorer.hits
    scorer.score([PROMPT], CANDS, batch_size=1)
    assert scorer.hits == hits + 1


def test_repeated_prompts_in_one_call_are_scored_once(tmp_path, tiny_gpt2):
    scorer = CachedScorer(tiny_gpt2.scorer(), tiny_gpt2, ScoreCache(tmp_path))
    got = scorer.score([PROMPT, "Berlin is the capital of [MASK] .", PROMPT], CANDS)
    assert scorer.misses == 2 and np.array_equal(got[0], got[2])


def test_no_cache_writes_nothing_and_the_cli_reports_and_clears(tmp_path, tiny_gpt2_dir, capsys):
    from kgprobe.studies.memorization.study import run_memorization

    run_memorization(str(tiny_gpt2_dir), tmp_path / "a", tasks=["range"], limit=4, progress=False,
                     cache=False)
    assert not (cache_dir() / "scores.sqlite").exists()
    run_memorization(str(tiny_gpt2_dir), tmp_path / "b", tasks=["range"], limit=4, progress=False)
    assert (tmp_path / "a" / "results.csv").read_text() == (tmp_path / "b" / "results.csv").read_text()
    n = rows(cache_dir())
    assert n == 4  # 4 records x the range task's one manual template
    assert main(["cache", "stats"]) == 0
    assert f"{n} score rows of 1 model(s)" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert f"removed {n} score rows" in capsys.readouterr().out
    assert rows(cache_dir()) == 0


@pytest.mark.parametrize("value", ["1", "0", "x", "-3"])
def test_a_bad_candidates_value_is_one_line(value, capsys, tmp_path):
    assert main(["study", "premise-ablation", "--model", "smollm2-135m", "--candidates", value,
                 "--out", str(tmp_path)]) == 2
    assert "--candidates" in capsys.readouterr().err


def test_distractors_are_seeded_same_kind_and_never_gold():
    from kgprobe.reasoning.distractors import distractor_candidates, parse_protocol

    pool = [f"c{i}" for i in range(100)]
    got = distractor_candidates(pool, ["c7"], 20, seed="0:item-1", exclude=["c8", "c9"])
    assert len(got) == 20 and "c7" in got and not {"c8", "c9"} & set(got)
    assert got == sorted(got, key=pool.index)  # pool order: the gold's position says nothing
    assert got == distractor_candidates(pool, ["c7"], 20, seed="0:item-1", exclude=["c8", "c9"])
    assert got != distractor_candidates(pool, ["c7"], 20, seed="0:item-2", exclude=["c8", "c9"])
    assert distractor_candidates(pool[:5], ["c1"], 20, seed=0) == pool[:5]  # a small pool: all of it
    assert parse_protocol("all").k is None and parse_protocol("20").k == 20
    assert parse_protocol(parse_protocol("20").name).k == 20


def test_premise_ablation_with_k_candidates_names_its_protocol(tmp_path, tiny_llama_dir):
    import csv

    from kgprobe.studies.premise_ablation.study import (
        AblationConfig,
        run_premise_ablation,
    )

    config = AblationConfig(str(tiny_llama_dir), rules=("rdfs9", "rdfs11"), limit=4, candidates="5")
    run_premise_ablation(config, tmp_path, progress=False)
    with open(tmp_path / "results.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {r["protocol"] for r in table} == {"K=5"}
    preds = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    by_item = {}
    for p in preds:
        assert 1 <= p["gold_rank"] <= 5 and len(p["top5"]) == 5 and p["answers"][0] in p["top5"]
        by_item.setdefault(p["item"], set()).add(tuple(sorted(p["top5"])))
    assert all(len(sets) == 1 for sets in by_item.values())  # one candidate set per item
    assert "Protocol `K=5`" in (tmp_path / "report.md").read_text()
    premises = json.loads((tmp_path / "memorized.json").read_text())["premises"]
    assert all(p["rr"] >= 1 / 5 for p in premises)  # ranked among 5 as well


def test_vectors_named_as_the_scorer_names_them_are_part_of_the_key():
    """The scorer reads a vector keyed "X " as [X] (encoding.slot_key); so must the key, or two
    different vectors would share cached scores."""
    from kgprobe.models.score_cache import _vector_hash

    for name in ("X", "X ", "[X]", " [X]"):
        assert _vector_hash("[X] is a dog .", {name: torch.ones(4)}) != _vector_hash(
            "[X] is a dog .", {name: torch.zeros(4)}), name
    assert _vector_hash("a dog .", {"X": torch.ones(4)}) == _vector_hash("a dog .", {"X": torch.zeros(4)})
