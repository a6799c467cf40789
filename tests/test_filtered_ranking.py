"""The default protocol: filtered ranking, and premises classified over their whole population."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from kgprobe.errors import KgprobeError
from kgprobe.ontology.loaders import load_rdf
from kgprobe.studies.options import ModelSettings
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.distractors import Protocol
from kgprobe.reasoning.filtering import TrueAnswers, others, parse_ranking
from kgprobe.reasoning.items import Verbalizer, item_closure, reasoning_items
from kgprobe.reasoning.memorizing import MemorizingRecord
from kgprobe.studies.metrics import evaluate, filtered_gold_ranks, gold_indices, gold_ranks

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

#: Beside the zoo: labelled classes no item names (distractors) and a person who is no keeper.
EXTRA = """ex:Plant rdfs:label "plant"@en . ex:Rock rdfs:label "rock"@en . ex:Place rdfs:label "place"@en .
ex:Tool rdfs:label "tool"@en . ex:Song rdfs:label "song"@en . ex:Car rdfs:label "car"@en .
ex:kim a ex:Person .
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"), EXTRA)


@pytest.fixture(scope="module")
def built(zoo):
    src = load_rdf(zoo)
    templates = load_templates()
    closure = item_closure(src.ontology, src.triples)
    items = reasoning_items(src.ontology, closure, templates)
    return items, TrueAnswers.of(Verbalizer(src.ontology, templates), closure)


def by_text(items, rule, p2, answer):
    return next(i for i in items[rule] if i.premises[1].text == p2 and i.answers == [answer])


def test_true_answers_are_what_the_premises_entail(built):
    items, truth = built
    # [X] is a dog, dog ⊑ mammal ⊑ animal ⊑ agent: asked for "animal", all four are true.
    item = by_text(items, "rdfs9", "[X] is a dog .", "animal")
    assert truth.item(item) == {"dog", "mammal", "animal", "agent"}
    # [X] feeds [Y]: feeds ⊑ cares for, so [X] is a person and a zoo keeper (cares for's
    # domain), and so an agent; [Y] a mammal and an animal (both ranges) and an agent.
    feeds = [i for i in items["rdfs2"] if i.premises[1].triple[1] == "http://ex.org/feeds"]
    assert feeds and all(truth.item(i) == {"person", "zoo keeper", "agent"} for i in feeds)
    ranged = [i for i in items["rdfs3"] if i.premises[1].triple[1] == "http://ex.org/feeds"]
    assert ranged and all(truth.item(i) == {"mammal", "animal", "agent"} for i in ranged)
    # rdfs7: the wording of the property and of every superproperty
    rdfs7 = [i for i in items["rdfs7"] if i.premises[1].triple[1] == "http://ex.org/feeds"]
    assert rdfs7 and all({"feeds", "takes care of", "knows"} <= truth.item(i) for i in rdfs7)
    # a schema premise (P1 "Dog is a mammal"): every superclass of dog; dog itself is not
    p1 = by_text(items, "rdfs9", "[X] is a dog .", "mammal").premises[0]
    assert truth.premise(p1) == {"mammal", "animal", "agent"}
    # a domain premise has its one answer
    assert truth.premise(feeds[0].premises[0]) == {feeds[0].premises[0].answer}


def test_filtered_ranking_leaves_the_other_true_answers_out(built):
    """A hand-made item: the gold "animal" of "[X] is a dog . … [X] is a particular [MASK]"."""
    items, truth = built
    item = by_text(items, "rdfs9", "[X] is a dog .", "animal")
    pool = ["agent", "animal", "car", "dog", "mammal", "person", "place", "plant", "rock",
            "song", "tool"]
    left_out = others(truth.item(item), item.answers)
    assert left_out == {"dog", "mammal", "agent"}
    # K = 5: gold + 4 distractors, none of them true for the item, whatever the seed
    for seed in range(20):
        cands = Protocol(5).candidates(pool, item.answers, seed=seed, exclude=sorted(left_out))
        assert len(cands) == 5 and "animal" in cands and not set(cands) & left_out
    # raw K: the true answers may be drawn as distractors (they are for some seed)
    raw = [Protocol(5).candidates(pool, item.answers, seed=s) for s in range(20)]
    assert any(set(c) & left_out for c in raw)
    # Every candidate: scores put "dog" and "mammal" above the gold, "car" above it too.
    scores = {"dog": 5.0, "mammal": 4.0, "car": 3.0, "animal": 2.0, "agent": 1.5}
    row = np.array([scores.get(c, 0.0) for c in pool])
    gold = gold_indices(pool, item.answers)
    also = gold_indices(pool, left_out)
    assert filtered_gold_ranks(row, gold, also).tolist() == [2]  # only "car" is above it
    assert gold_ranks(row, gold).tolist() == [4]  # raw: dog, mammal and car
    assert evaluate([row], [gold], ks=(1,), filtered=True, also_true=[also])["MRR"] == 0.5
    assert evaluate([row], [gold], ks=(1,))["MRR"] == 0.25


def test_filtered_memorizing_ranks_each_gold_without_the_other_golds():
    from kgprobe.studies.memorization.study import score_unit

    class Fixed:
        def score(self, prompts, candidates, *, pseudowords=None, batch_size=32):
            order = ["dog", "mammal", "car", "animal", "rock"]
            return np.array([[-order.index(c) for c in candidates] for _ in prompts], float)

    rec = MemorizingRecord("type-0", "type", "rex", None, ["dog", "mammal", "animal"], "test")
    pool = ["animal", "car", "dog", "mammal", "rock"]
    filtered, preds = score_unit(Fixed(), ["Rex is a [MASK] ."], [rec], pool, 8)
    raw, raw_preds = score_unit(Fixed(), ["Rex is a [MASK] ."], [rec], pool, 8, ranking="raw")
    # gold order in the candidates: animal, dog, mammal
    assert preds[0]["gold_ranks"] == [2, 1, 1] and raw_preds[0]["gold_ranks"] == [4, 1, 2]
    assert filtered["MRR"] == raw["MRR"] == 1.0
    assert filtered["MRRa"] == pytest.approx(1 / (4 / 3)) and raw["MRRa"] == pytest.approx(1 / (7 / 3))
    assert (filtered["ranking"], raw["ranking"]) == ("filtered", "raw")


def test_ranking_option_is_checked():
    assert parse_ranking(None) == "filtered" and parse_ranking("RAW") == "raw"
    with pytest.raises(KgprobeError, match="--ranking"):
        parse_ranking("loose")


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("ranking", ["filtered", "raw"])
def test_premise_ablation_ranks_filtered_by_default(tmp_path, zoo, tiny_gpt2_dir, built, ranking):
    from kgprobe.studies.premise_ablation.study import AblationConfig, run_premise_ablation

    items, truth = built
    config = AblationConfig(str(tiny_gpt2_dir), rules=("rdfs9", "rdfs2"), limit=None,
                            settings=ModelSettings(batch_size=16, cache=False), candidates="6",
                            ranking=ranking, ontology=zoo)
    run_premise_ablation(config, tmp_path, progress=False)
    assert {r["ranking"] for r in _read(tmp_path / "results.csv")} == {ranking}
    every = {i.id: i for rule in ("rdfs9", "rdfs2") for i in items[rule]}
    preds = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    leaked = [p for p in preds
              if set(p["top5"]) & others(truth.item(every[p["item"]]), p["answers"])]
    premises = json.loads((tmp_path / "memorized.json").read_text())["premises"]
    if ranking == "filtered":
        assert not leaked  # never a candidate, so never ranked above the gold
        assert all(p["rr"] >= 1 / 6 for p in premises)  # each premise among 5 distractors
        assert "Ranking `filtered`" in (tmp_path / "report.md").read_text()
    else:
        assert leaked  # raw keeps them among the candidates


def test_memorized_split_does_not_depend_on_the_limit(tmp_path, zoo, tiny_gpt2_dir):
    """Two runs that sample different items classify the premises they share identically:
    the split is made over every premise of the relation, not over the run's sample."""
    from kgprobe.studies.premise_ablation.study import (
        AblationConfig,
        PremiseKey,
        build_setup,
        classify_premises,
    )

    outcomes = []
    for limit in (1, 3):
        config = AblationConfig(str(tiny_gpt2_dir), rules=("rdfs9", "rdfs11"), limit=limit,
                                settings=ModelSettings(batch_size=16, cache=False), pairs=2,
                                ontology=zoo)
        setup = build_setup(config)
        data = setup.data
        assert sum(len(v) for v in data.items.values()) < sum(len(v) for v in data.all_items.values())
        premises = classify_premises(setup, tmp_path / f"limit{limit}")
        sampled = {PremiseKey.of(i, role, pair) for v in data.items.values() for i in v
                   for role in ("P1", "P2") for pair in range(2)}
        assert sampled <= set(premises)  # every sampled premise is classified …
        outcomes.append({k: (m.known, m.rr) for k, m in premises.items()})
    # … and both runs classify the whole population, the same way
    assert outcomes[0] == outcomes[1]
    kinds = {(k.role, k.relation) for k in outcomes[0]}
    assert kinds == {("P1", "subClassOf"), ("P2", "type"), ("P2", "subClassOf")}
    # known is absolute: ranked first by the model and not by the frequency control
    assert all(m.known == (m.rank == 1 and m.null_rank > 1) for m in premises.values())


@pytest.mark.parametrize("k", [6, None])
def test_lm_eval_reasoning_docs_rank_what_the_study_ranks(tmp_path, k):
    """The exported choices are the premise-ablation study's candidates (its own function),
    and lm-eval's rank of the gold is the study's filtered rank."""
    from types import SimpleNamespace

    from kgprobe.ontology.loaders import bundled_source
    from kgprobe.reasoning.distractors import Protocol
    from kgprobe.reasoning.memorizing import candidate_sets
    from kgprobe.studies.lm_eval import harness_utils
    from kgprobe.studies.lm_eval.export import ExportSettings, export_lm_eval
    from kgprobe.studies.premise_ablation.candidates import item_candidates, item_others

    export_lm_eval(tmp_path, ExportSettings(studies=("reasoning",), rules=("rdfs9",),
                                            candidates=k, limit=8, seed=3))
    src = bundled_source(word=True)  # as premise ablation reads it, and so the export
    templates = load_templates()
    closure = item_closure(src.ontology, src.triples)
    items = {i.id: i for i in reasoning_items(src.ontology, closure, templates, rules=["rdfs9"])["rdfs9"]}
    data = SimpleNamespace(candidates=candidate_sets(src.ontology), protocol=Protocol(k),
                           config=SimpleNamespace(seed=3),
                           truth=TrueAnswers.of(Verbalizer(src.ontology, templates), closure))
    docs = [json.loads(line) for line in (tmp_path / "kgprobe_reasoning_rdfs9.jsonl").read_text().splitlines()]
    assert len(docs) == 8 and all(d["ranking"] == "filtered" for d in docs)
    rng = np.random.default_rng(0)
    for doc in docs:
        item = items[doc["id"]]
        ranked = item_candidates(data, item)
        left_out = item_others(data, item)
        assert left_out  # rdfs9 items have true answers besides the gold
        assert doc["choices"] == [c for c in ranked if c not in left_out]
        if k:
            assert len(doc["choices"]) == k  # drawn from the filtered pool: K stays K
        # the same scores for the same candidates: the harness's rank is the study's
        scores = {c: float(rng.integers(-5, 5)) for c in ranked}
        row = np.array([scores[c] for c in ranked])
        want = filtered_gold_ranks(row, gold_indices(ranked, item.answers),
                                   gold_indices(ranked, left_out)).min()
        got = harness_utils.gold_rank([scores[c] for c in doc["choices"]], doc["gold"], True)
        assert got == want
