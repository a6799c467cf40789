"""The premise-blind priors as controls: ``general`` (the most general candidate first, from
the training answers) and ``test-prior`` (each scored batch's own golds by frequency).
Hand-made records and candidates."""

from __future__ import annotations

import numpy as np
import pytest
from kgprobe.errors import ModelError
from kgprobe.models.general_prior import generality
from kgprobe.models.loading import load_model
from kgprobe.models.names import is_control_model
from kgprobe.studies.probes import ProbeRequest, predict

#: Type records: every ancestor of the subject is a gold. dog/cat ⊑ mammal ⊑ animal ⊑ thing,
#: fish ⊑ animal, rock ⊑ thing; dogs are the most numerous subjects.
RECORDS = [["dog", "mammal", "animal", "thing"]] * 4 + [
    ["cat", "mammal", "animal", "thing"], ["fish", "animal", "thing"], ["rock", "thing"]]


def _order(scorer, cands, prompt="[X] is a particular [MASK] ."):
    row = scorer.score([prompt], cands)[0]
    return [cands[i] for i in np.argsort(-row, kind="stable")]


def test_generality_counts_the_labels_below_each_from_the_records_alone():
    below = generality([set(r) for r in RECORDS])
    assert below == {"thing": 6, "animal": 4, "mammal": 2, "dog": 0, "cat": 0, "fish": 0,
                     "rock": 0}


def test_general_ranks_the_most_general_first_whatever_the_prompt_says():
    general = load_model("general", seed=0).trained_on(RECORDS)
    cands = ["dog", "unseen", "mammal", "rock", "thing", "animal"]
    order = _order(general.scorer(), cands)
    # by labels below; leaves by training count (dog 4 > rock 1); the unseen last
    assert order == ["thing", "animal", "mammal", "dog", "rock", "unseen"]
    # it reads no premise: a prompt naming the answer ranks alike
    assert _order(general.scorer(), cands, "Dog is a mammal . Therefore , [X] is a [MASK] .") == order
    # not frequency: a class over few records (flyer: bird, bat) outranks a leaf that is a
    # gold in many (dog), which frequency ranks first
    records = [["dog", "mammal"]] * 5 + [["bird", "flyer"], ["bat", "flyer", "mammal"]]
    freq = load_model("frequency").trained_on(records).scorer()
    gen = load_model("general").trained_on(records).scorer()
    assert _order(freq, ["dog", "flyer"]) == ["dog", "flyer"]
    assert _order(gen, ["dog", "flyer"]) == ["flyer", "dog"]
    assert is_control_model("general") and general.generate(["[MASK]"], candidates=[cands]) == ["thing"]


def _request(item, cands, gold):
    return ProbeRequest(f"{item} is a [MASK] .", tuple(cands), item=item,
                        golds=(cands.index(gold),))


def test_test_prior_ranks_each_item_by_the_other_items_golds():
    cands = ["thing", "animal", "mammal", "dog"]
    cell = [_request("a", cands, "mammal"), _request("b", cands, "mammal"),
            _request("c", cands, "dog"), _request("d", cands, "mammal")]
    scorer = load_model("test-prior").trained_on(RECORDS).scorer()
    predictions = predict(scorer, cell, filtered=False, batch_size=8, desc="", progress=False)
    # a: the others' golds are mammal twice and dog once: mammal first, dog next, then the
    # rest as general ranks them
    order = [cands[i] for i in np.argsort(-predictions[0].scores, kind="stable")]
    assert order[:2] == ["mammal", "dog"]
    assert predictions[0].ranks == (1,) and predictions[3].ranks == (1,)
    # c: its own gold (dog) is no other item's, so it is not counted: mammal (3) ranks first
    # and dog where general puts it among the rest, never first
    general = load_model("general").trained_on(RECORDS).scorer()
    rest = [c for c in _order(general, cands) if c != "mammal"]
    assert predictions[2].ranks == (2 + rest.index("dog"),)
    # the same item twice (two templates or pseudoword pairs) is one item: its copies do
    # not count for each other
    twice = [_request("a", cands, "dog"), _request("a", cands, "dog"),
             _request("b", cands, "mammal")]
    got = predict(scorer, twice, filtered=False, batch_size=8, desc="", progress=False)
    assert got[0].ranks == got[1].ranks == (2 + rest.index("dog"),)
    # another cell, another ranking: its golds only, never the first cell's
    other = predict(scorer, [_request("e", cands, "animal"), _request("f", cands, "animal")],
                    filtered=False, batch_size=8, desc="", progress=False)
    assert other[0].ranks == other[1].ranks == (1,)
    assert is_control_model("test-prior")


def test_test_prior_refuses_to_rank_without_the_golds():
    model = load_model("test-prior")
    with pytest.raises(ModelError, match="drop test-prior"):
        model.scorer().score(["x [MASK]"], ["a", "b"])
    with pytest.raises(ModelError, match="drop test-prior"):
        model.generate(["x [MASK]"], candidates=[["a", "b"]])
