"""The tacit-assumption study: prompt order, metrics against hand-computed values, scorers,
and both tasks end to end on tiny models (plus one slow run on smollm2-135m)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from kgprobe.models.scoring import make_scorer
from kgprobe.studies.sta import elicitation as eli
from kgprobe.studies.sta import retrieval as ret
from kgprobe.ontology.norms import Concept, Feature, load_mcrae
from kgprobe.studies.runner import read_results
from kgprobe.errors import StudyError
from kgprobe.studies.options import ModelSettings
from kgprobe.studies.sta.study import StaConfig, run_sta
from kgprobe.models.distributions import (
    MaskDistribution, NextTokenDistribution, SentenceLikelihood, single_token_vocabulary,
    softmax_rows, word_vocabulary,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MCRAE = SHARED / "mcrae"
LAMA = SHARED / "lama" / "common_vocab_cased.txt"

HEADER = "Concept\tFeature\tWB_Label\tBR_Label\tProd_Freq\tPhon_1st"
#: A tiny McRae-layout norms file. Concept words are single tokens of the tiny test models
#: (conftest.py); "animal" and "event" start with a vowel sound, "zebra" is in no vocabulary.
ROWS = [
    ("person", "has_work", "encyclopaedic", 20, "p"),
    ("person", "is_particular", "visual-form_and_surface", 18, "p"),
    ("person", "a_player", "taxonomic", 15, "p"),
    ("person", "has_a_capital", "function", 12, "p"),
    ("person", "made_of_fruit", "visual-form_and_surface", 9, "p"),
    ("person", "lives_in_a_place", "encyclopaedic", 7, "p"),
    ("person", "beh_-_races", "visual-motion", 5, "p"),
    ("fruit", "is_particular", "visual-colour", 25, "f"),
    ("fruit", "has_sports", "encyclopaedic", 11, "f"),
    ("fruit", "used_for_work", "function", 10, "f"),
    ("fruit", "a_place", "taxonomic", 6, "f"),
    ("place", "has_a_race", "function", 14, "p"),
    ("place", "is_capital", "encyclopaedic", 13, "p"),
    ("place", "made_of_work", "visual-form_and_surface", 8, "p"),
    ("player", "has_motor", "function", 17, "p"),
    ("player", "is_particular", "visual-form_and_surface", 16, "p"),
    ("player", "a_person", "taxonomic", 5, "p"),
    ("animal", "is_particular", "visual-colour", 20, "&"),
    ("animal", "has_fruit", "encyclopaedic", 9, "&"),
    ("zebra", "is_particular", "visual-colour", 22, "z"),
    ("zebra", "has_sports", "encyclopaedic", 5, "z"),
]
VOCAB = ["person", "fruit", "place", "player", "capital", "work", "race", "sports", "motor",
         "animal", "event", "agent", "particular", "Paris", "paris"]


@pytest.fixture
def norms_dir(tmp_path):
    d = tmp_path / "mcrae"
    d.mkdir()
    # WB_Label holds "x"; the loader finds columns by header name.
    lines = [HEADER] + [f"{c}\t{f}\tx\t{label}\t{pf}\t{ph}" for c, f, label, pf, ph in ROWS]
    (d / "CONCS_FEATS_concstats_brm.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return path


def make_concept(n_features: int, key: str = "bear") -> Concept:
    feats = [Feature(key, f"f{i}", 100 - i, "visual-colour" if i % 2 else "function",
                     "visual perceptual" if i % 2 else "functional", f"has p{i}", i)
             for i in range(n_features)]
    return Concept(key, key, False, feats)


# ------------------------------------------------------------------------------ prompts


def test_conditions_select_and_order_by_pf():
    concept = make_concept(14)  # p0 has the highest PF, p13 the lowest
    names = lambda seqs: [[f.phrase[4:] for f in s] for s in seqs]  # noqa: E731
    top = names(ret.property_sequences(concept, ret.Condition("top-dec")))
    assert top == [[f"p{i}" for i in range(10)]]
    assert names(ret.property_sequences(concept, ret.Condition("top-inc"))) == [[f"p{i}" for i in range(9, -1, -1)]]
    assert names(ret.property_sequences(concept, ret.Condition("bottom-dec"))) == [[f"p{i}" for i in range(4, 14)]]
    assert names(ret.property_sequences(concept, ret.Condition("bottom-inc"))) == [[f"p{i}" for i in range(13, 3, -1)]]
    group = names(ret.property_sequences(concept, ret.Condition("group:functional")))
    assert group == [[f"p{i}" for i in range(0, 14, 2)]]
    rnd = ret.property_sequences(concept, ret.Condition("random"), seed=3)
    assert len(rnd) == 25 and all(len(s) == 10 and len({f.feature for f in s}) == 10 for s in rnd)
    # 5 sets, each in 5 orders: sequences 0-4 share one set
    assert len({frozenset(f.feature for f in s) for s in rnd[:5]}) == 1
    assert rnd[0] != rnd[1]
    same = ret.property_sequences(concept, ret.Condition("random"), seed=3)
    other = ret.property_sequences(concept, ret.Condition("random"), seed=4)
    assert [[f.feature for f in s] for s in rnd] == [[f.feature for f in s] for s in same]
    assert [[f.feature for f in s] for s in rnd] != [[f.feature for f in s] for s in other]


def test_prompts_grow_one_property_at_a_time_in_order():
    concept = make_concept(12)
    for cond in ("top-dec", "bottom-inc"):
        seq = ret.property_sequences(concept, ret.Condition(cond))[0]
        prompts = [ret.build_prompts([concept], ret.Condition(cond), n)[0] for n in range(1, 11)]
        for n, p in enumerate(prompts, start=1):
            assert p.properties == [f.phrase for f in seq[:n]]
        assert prompts[0].prompt == f"A [MASK] {seq[0].phrase} ."
        assert prompts[1].prompt == f"A [MASK] {seq[0].phrase} and {seq[1].phrase} ."
        assert prompts[2].prompt == f"A [MASK] {seq[0].phrase}, {seq[1].phrase}, and {seq[2].phrase} ."
    # A concept with 6 properties has no prompt of size 7.
    small = make_concept(6, "cat")
    assert ret.build_prompts([small], ret.Condition("top-dec"), 7) == []
    assert len(ret.build_prompts([concept, small], ret.Condition("top-dec"), 6)) == 2


# ------------------------------------------------------------------------------ metrics


def test_average_precision_by_hand():
    # golds at ranks 1 and 3: (1/1 + 2/3) / 2
    assert eli.average_precision([0.9, 0.8, 0.7, 0.6], [0, 2]) == pytest.approx((1 + 2 / 3) / 2)
    # order 1, 2, 0, 3: golds 2 and 0 at ranks 2 and 3 -> (1/2 + 2/3) / 2
    assert eli.average_precision([0.1, 0.9, 0.8, 0.05], [0, 2]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    # golds 0 and 3 at ranks 3 and 4 -> (1/3 + 2/4) / 2
    assert eli.average_precision([0.1, 0.9, 0.8, 0.05], [3, 0]) == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert eli.average_precision([0.1, 0.9], [1]) == 1.0
    # ties are pessimistic: a constant scorer earns 1/4 for one gold among 4
    assert eli.average_precision([0.0, 0.0, 0.0, 0.0], [0]) == pytest.approx(0.25)


def test_mrr_and_probability_by_hand():
    records = [
        {"concept": "a", "rank": 1, "rr": 1.0, "p_target": 0.5},
        {"concept": "a", "rank": 4, "rr": 0.25, "p_target": 0.1},
        {"concept": "b", "rank": 2, "rr": 0.5, "p_target": 0.2},
    ]
    s = ret.summarize(records)
    # concept a: mean rr 0.625; concept b: 0.5 -> MRR 0.5625; each concept counts once
    assert s["MRR"] == pytest.approx(0.5625)
    assert s["p_target"] == pytest.approx(((0.5 + 0.1) / 2 + 0.2) / 2)
    assert s["R@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert s["n_concepts"] == 2 and s["n_prompts"] == 3 and s["median_rank"] == 2


def test_score_prompts_ranks_targets_pessimistically():
    prompts = [ret.RetrievalPrompt("x", "w1", "top-dec", 1, 0, ["has p"], "A [MASK] has p .")] * 2
    scores = np.log(np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2]]))
    recs = ret.score_prompts(prompts, scores, np.exp(scores), [1, 1], ["w0", "w1", "w2"])
    assert [r["rank"] for r in recs] == [2, 2]  # the tie with w0 costs a rank
    assert recs[0]["p_target"] == pytest.approx(0.3)
    assert recs[0]["top"][0][0] == "w0"


def test_elicitation_metrics_by_hand():
    concept = Concept("bear", "bear", False, [])
    prompt = eli.ElicitationPrompt("bear", "has", "everyone", "Everyone knows that a bear has [MASK] .",
                                   {"fur": 20, "claws": 15, "teeth": 7, "wings": 3})
    words = ["fur", "claws", "legs", "teeth", "eyes"]  # "wings" is outside the vocabulary
    index = {w: i for i, w in enumerate(words)}.get
    probs = np.array([[0.40, 0.10, 0.25, 0.05, 0.15]])
    rec = eli.score_prompts([prompt], np.log(probs), probs, words, index, sensible=[0, 1, 3])[0]
    # vocabulary ranks: fur 1, legs 2, eyes 3, claws 4, teeth 5 -> AP = (1/1 + 2/4 + 3/5) / 3
    assert rec["ap_vocab"] == pytest.approx((1 + 2 / 4 + 3 / 5) / 3)
    assert rec["ap_sens"] == pytest.approx(1.0)  # the sensible set holds only golds here
    assert rec["rho"] == pytest.approx(1.0)  # fur > claws > teeth in both
    assert rec["gold_dropped"] == 1
    s = eli.summarize([rec])
    assert s["mAP_vocab"] == pytest.approx(rec["ap_vocab"]) and s["spearman_prompts"] == 1
    assert concept.word == "bear"


def test_gold_answers_follow_the_relation_syntax():
    feats = [Feature("bear", f, pf, "x", "x", phrase, i) for i, (f, pf, phrase) in enumerate([
        ("has_fur", 20, "has fur"), ("has_a_tail", 9, "has a tail"), ("is_large", 23, "is large"),
        ("a_mammal", 8, "is a mammal"), ("an_animal", 19, "is an animal"),
        ("made_of_meat", 5, "is made of meat"), ("lives_in_forests", 6, "lives in forests"),
        ("has_sharp_claws", 6, "has sharp claws")])]
    gold = eli.gold_answers(Concept("bear", "bear", False, feats))
    assert gold == {"has": {"fur": 20}, "has a": {"tail": 9}, "is": {"large": 23},
                    "is a": {"mammal": 8}, "made of": {"meat": 5}}
    c = Concept("apple", "apple", True, [])
    assert eli.elicitation_prompt(c, "is a") == "Everyone knows that an apple is a [MASK] ."
    assert eli.elicitation_prompt(c, "has", "bare") == "An apple has [MASK] ."


# ------------------------------------------------------------------------------ scorers


def test_single_token_vocabulary_merges_spellings(tiny_bert, tiny_gpt2):
    vocab = single_token_vocabulary(["Paris", "paris", "person", "banana", "zebra"], tiny_bert)
    # uncased WordPiece: Paris == paris (one candidate); banana is two pieces; zebra unknown
    assert vocab.words == ["Paris", "person"]
    assert vocab.index("paris") == vocab.index("Paris") == 0
    assert vocab.index("banana") is None and "banana" in vocab.dropped
    gpt = single_token_vocabulary(["person", "Paris", "place"], tiny_gpt2)
    assert gpt.words == ["person", "place"]  # " Paris" is two BPE tokens
    words = word_vocabulary(["person", "Paris", "person"])
    assert words.words == ["person", "Paris"] and words.index("Paris") == 1


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_gemma3"])
def test_next_token_distribution_matches_causal_scorer(fixture, request):
    loaded = request.getfixturevalue(fixture)
    vocab = single_token_vocabulary(VOCAB, loaded)
    prompts = ["What is particular? It is a [MASK] .",
               "What has work, is particular, and has a capital? It is a [MASK] .",
               "Paris is the [MASK] ."]
    scorer = NextTokenDistribution(loaded, vocab, batch_size=2)  # batches of unequal lengths
    fast = scorer.score(prompts)
    ref = make_scorer(loaded, pooling="first").score(prompts, vocab.words)
    np.testing.assert_allclose(fast, ref, atol=1e-4)
    assert np.exp(fast).sum(axis=1).max() <= 1.0 + 1e-6
    with pytest.raises(ValueError, match="follow"):
        scorer.score(["[MASK] is here ."])  # sentence-initial tokens differ from the vocabulary's


def test_mask_distribution_is_the_mask_softmax(tiny_bert):
    vocab = single_token_vocabulary(VOCAB, tiny_bert)
    scorer = MaskDistribution(tiny_bert, vocab)
    prompt = "A [MASK] is particular ."
    scores = scorer.score([prompt])
    ids, positions, _ = make_scorer(tiny_bert, masks="single", pooling="first").build(prompt, 1)
    with torch.no_grad():
        logits = tiny_bert.model(input_ids=torch.tensor([ids])).logits[0, positions[0]]
    expected = torch.log_softmax(logits, -1)[vocab.token_ids].numpy()
    np.testing.assert_allclose(scores[0], expected, atol=1e-5)


def test_sentence_likelihood_is_the_sentence_log_likelihood(tiny_gpt2):
    vocab = word_vocabulary(["person", "place", "Paris"])
    scorer = SentenceLikelihood(tiny_gpt2, vocab, batch_size=2)
    prompt = "A [MASK] has work and is particular ."
    scores = scorer.score([prompt])[0]
    tok = tiny_gpt2.tokenizer

    def sentence_lp(word: str) -> float:
        ids = tok(f"A {word} has work and is particular .", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(tiny_gpt2.model(input_ids=torch.tensor([ids])).logits[0], -1)
        return float(sum(lp[t - 1, ids[t]] for t in range(1, len(ids))))  # log P(all | "A")

    for j, word in enumerate(vocab.words):
        assert scores[j] == pytest.approx(sentence_lp(word), abs=1e-3)
    assert softmax_rows(scores[None])[0].sum() == pytest.approx(1.0)


# ------------------------------------------------------------------------------ end to end


def _config(norms_dir, vocab_file, model_dir, **kw) -> StaConfig:
    defaults = dict(norms=norms_dir, model=str(model_dir), vocab_file=vocab_file, progress=False,
                    settings=ModelSettings(batch_size=4), random_sets=2, random_permutations=2)
    defaults.update(kw)
    return StaConfig(**defaults)


def test_both_tasks_end_to_end_causal(norms_dir, vocab_file, tiny_gpt2_dir, tmp_path):
    out = tmp_path / "run"
    rows = run_sta(_config(norms_dir, vocab_file, tiny_gpt2_dir), out)
    summary = json.loads((out / "summary.json").read_text())
    r = summary["retrieval"]
    # 6 concepts: animal skipped (vowel), zebra not in the vocabulary, 4 targets
    assert (r["concepts"], r["skipped_vowel_sound"], r["dropped_out_of_vocabulary"], r["targets"]) == (6, 1, 1, 4)
    assert r["template"] == "question" and r["method"] == "next-token distribution"
    top = {int(x["n_properties"]): x for x in rows if x["task"] == "retrieval" and x["condition"] == "top-dec"}
    # person has 7 properties, fruit 4, place 3, player 3
    assert {n: top[n]["n_concepts"] for n in top} == {1: 4, 2: 4, 3: 4, 4: 2, 5: 1, 6: 1, 7: 1}
    assert all(0 < x["MRR"] <= 1 and 0 <= x["p_target"] <= 1 for x in top.values())
    random_rows = [x for x in rows if x["task"] == "retrieval" and x["condition"] == "random"]
    assert random_rows[0]["n_prompts"] == 4 * 4  # 2 sets x 2 orders per concept
    e = {(x["relation"], x["context"]): x for x in rows if x["task"] == "elicitation"}
    assert set(e) >= {("is", "everyone"), ("is", "bare"), ("has", "everyone"), ("made of", "bare")}
    for x in e.values():  # the sensible set holds every gold, so narrowing can only help
        assert 0 < x["mAP_vocab"] <= x["mAP_sens"] + 1e-9
    for name in ("results.csv", "predictions.jsonl", "report.md", "fig2_retrieval.png",
                 "fig3_conditions.png", "fig4_elicitation.png"):
        assert (out / name).stat().st_size > 0, name
    csv_rows = read_results(out / "results.csv")
    assert len(csv_rows) == len(rows)
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    first = next(p for p in preds if p["task"] == "retrieval" and p["condition"] == "top-dec" and p["n"] == 3
                 and p["concept"] == "person")
    assert first["prompt"] == "What has work, is particular, and is a player? It is a [MASK] ."
    assert "Concept retrieval" in (out / "report.md").read_text()


def test_rerun_resumes_and_same_seed_same_numbers(norms_dir, vocab_file, tiny_bert_dir, tmp_path, monkeypatch):
    cfg = _config(norms_dir, vocab_file, tiny_bert_dir, tasks=("retrieval",), conditions=("top-dec", "random"))
    first = run_sta(cfg, tmp_path / "a")
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["retrieval"]["method"] == "mask distribution"
    # A finished run is not recomputed: any scoring would now fail.
    monkeypatch.setattr(MaskDistribution, "score", lambda *a, **k: (_ for _ in ()).throw(AssertionError("rescored")))
    again = run_sta(cfg, tmp_path / "a")
    assert again == first
    monkeypatch.undo()
    # A fresh folder with the same seed gives the same numbers.
    assert run_sta(cfg, tmp_path / "b") == first
    with pytest.raises(StudyError, match="other settings.*seed"):
        run_sta(_config(norms_dir, vocab_file, tiny_bert_dir, tasks=("retrieval",),
                        conditions=("top-dec", "random"), seed=1), tmp_path / "a")


def test_interrupted_run_finishes_the_rest(norms_dir, vocab_file, tiny_bert_dir, tmp_path, monkeypatch):
    cfg = _config(norms_dir, vocab_file, tiny_bert_dir, tasks=("retrieval",), conditions=("top-dec",))
    full = run_sta(cfg, tmp_path / "full")
    calls = {"n": 0}
    real = MaskDistribution.score

    def flaky(self, prompts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, prompts)

    monkeypatch.setattr(MaskDistribution, "score", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sta(cfg, tmp_path / "part")
    assert len(list((tmp_path / "part" / "units").iterdir())) == 2
    monkeypatch.setattr(MaskDistribution, "score", real)
    assert run_sta(cfg, tmp_path / "part") == full


def test_the_determiner_keeps_vowel_concepts_and_statement_template(norms_dir, vocab_file, tiny_gpt2_dir, tmp_path):
    cfg = _config(norms_dir, vocab_file, tiny_gpt2_dir, tasks=("retrieval",), conditions=("top-dec",),
                  determiner="the", template="statement")
    run_sta(cfg, tmp_path / "s")
    r = json.loads((tmp_path / "s" / "summary.json").read_text())["retrieval"]
    # animal is kept ("The"), zebra is a candidate because causal statements score any concept word
    assert r["skipped_vowel_sound"] == 0 and r["targets"] == 6
    assert r["method"] == "sentence log-likelihood" and r["vocabulary"] == "concepts"
    preds = [json.loads(x) for x in (tmp_path / "s" / "predictions.jsonl").read_text().splitlines()]
    assert preds[0]["prompt"].startswith("The [MASK] ")
    # probabilities are the posterior over the 6 candidate concepts
    assert all(0 < x["p_target"] <= 1 and sum(p for _, p in x["top"]) <= 1 + 1e-5 for x in preds)


def test_cli_runs_and_reports_bad_input(norms_dir, vocab_file, tiny_bert_dir, tmp_path, capsys):
    from kgprobe.cli import main

    out = tmp_path / "cli"
    code = main(["study", "sta", "--norms", str(norms_dir), "--model", str(tiny_bert_dir), "--task", "elicitation",
                 "--vocab-file", str(vocab_file), "--limit", "3", "--out", str(out)])
    assert code == 0
    assert "Property elicitation" in capsys.readouterr().out
    assert (out / "fig4_elicitation.png").exists()
    code = main(["study", "sta", "--norms", str(tmp_path / "nope"), "--model", str(tiny_bert_dir),
                 "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "norms file not found" in err and len(err.splitlines()) == 1
    code = main(["study", "sta", "--norms", str(norms_dir), "--norms-format", "cslb", "--model", str(tiny_bert_dir),
                 "--out", str(tmp_path / "y")])
    assert code == 2 and "--norms-format mcrae" in capsys.readouterr().err
    code = main(["study", "sta", "--norms", str(norms_dir), "--model", str(tmp_path / "no-model"),
                 "--out", str(tmp_path / "z")])
    assert code == 2 and "unknown model" in capsys.readouterr().err
    code = main(["study", "sta", "--compare", str(out), "--out", str(tmp_path / "cmp")])
    assert code == 0 and (tmp_path / "cmp" / "comparison.md").exists()


@pytest.mark.slow
def test_smollm2_end_to_end_on_mcrae(tmp_path, shared_data):
    shared_data("data/mcrae")
    shared_data("data/lama/common_vocab_cased.txt")
    cfg = StaConfig(norms=MCRAE, model="smollm2-135m", limit=3, elicitation_limit=10, vocab_file=LAMA,
                    conditions=("top-dec", "random"), random_sets=1, random_permutations=2, progress=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # far faster than 2 when other processes share the cores
    try:
        rows = run_sta(cfg, tmp_path / "smol")
    finally:
        torch.set_num_threads(threads)
    top = [r for r in rows if r["task"] == "retrieval" and r["condition"] == "top-dec"]
    assert len(top) == 10 and all(r["n_concepts"] == 3 for r in top)
    eli_rows = [r for r in rows if r["task"] == "elicitation"]
    relations = {r["relation"] for r in eli_rows}
    assert len(relations) >= 3 and len(eli_rows) == 2 * len(relations)  # both contexts each
    assert all(0 <= r["mAP_vocab"] <= r["mAP_sens"] + 1e-9 for r in eli_rows)
    assert any(r["mAP_vocab"] > 0.01 for r in eli_rows)
    norms = load_mcrae(MCRAE)
    assert len(norms.concepts) == 541
    assert (tmp_path / "smol" / "fig2_retrieval.png").exists()


def test_concept_sample_is_seeded_and_shared_across_vocabularies():
    from kgprobe.studies.sta.study import sample

    concepts = [make_concept(3, f"c{i:02d}") for i in range(40)]
    a = sample(concepts, 10, 0, "concepts")
    assert [c.key for c in a] == [c.key for c in sample(concepts, 10, 0, "concepts")]
    assert [c.key for c in a] != [c.key for c in sample(concepts, 10, 1, "concepts")]
    assert {c.key for c in a} <= {c.key for c in sample(concepts, 20, 0, "concepts")}
    # A model that cannot take every third concept probes the same ones wherever it can.
    keep = lambda c: int(c.key[1:]) % 3 != 0  # noqa: E731
    b = sample(concepts, 10, 0, "concepts", keep=keep)
    assert len(b) == 10 and {c.key for c in a if keep(c)} <= {c.key for c in b}
    assert [c.key for c in a] == sorted(c.key for c in a)  # norms order
