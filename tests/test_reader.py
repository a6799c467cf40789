"""The reader (a positive control: it reads the written premises and applies RDFS), reader:Q,
the label↔wording lexicon, the wording-aware copy and the copy heuristics. Hand-written
prompts in the English templates' words; no ontology, no network."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from kgprobe.errors import ModelError
from kgprobe.models.lexicon import best_match, similarity
from kgprobe.models.loading import load_model
from kgprobe.models.names import check_model_name, is_control_model, prior_target
from kgprobe.models.reader import read_prompt, reads_item

TRAIN = [["person"], ["person"], ["place"]]


def _order(model, prompt: str, cands: list[str]) -> list[str]:
    row = model.scorer().score([prompt], cands)[0]
    return [cands[i] for i in np.argsort(-row, kind="stable")]


def _reader(name: str = "reader", seed: int = 0):
    return load_model(name, seed=seed).trained_on(TRAIN)


CLASSES = ["person", "place", "agent", "organisation", "brewery", "animal", "company", "work"]

# rule → (prompt with both premises written, its gold); the gold is never the commonest class
WRITTEN = {
    "rdfs2": ("One has to be a particular company if one's specific industry is something . "
              "[X]'s specific industry is [Y] . Therefore , [X] is a [MASK] .", "company"),
    "rdfs3": ("One has to be a particular organisation if a person is an employer of that . "
              "[X] is an employer of [Y] . Therefore , [Y] is a [MASK] .", "organisation"),
    "rdfs9": ("Brewery is an agent . [X] is a brewery . Therefore , [X] is a [MASK] .", "agent"),
    "rdfs11": ("Brewery is an agent . [X] is a brewery . Therefore , [X] is a particular "
               "[MASK] .", "agent"),
}


@pytest.mark.parametrize("rule", sorted(WRITTEN))
def test_the_reader_derives_the_class_rules_and_ranks_derived_before_written(rule):
    prompt, gold = WRITTEN[rule]
    order = _order(_reader(), prompt, CLASSES)
    assert order[0] == gold
    if rule in ("rdfs9", "rdfs11"):  # "brewery" is merely written: after the derived agent
        assert order[1] == "brewery"


def test_the_reader_reads_a_range_clause_that_names_the_range_in_the_pattern():
    prompt = ("One has to be a particular animal if one is part of a constellation . "
              "[X] is part of constellation [Y] . Therefore , [X] is a [MASK] .")
    assert _order(_reader(), prompt, CLASSES)[0] == "animal"


def test_the_reader_chains_rdfs5_and_maps_rdfs7_labels_to_wordings():
    props = ["cast member", "contributor to the creative work or subject", "location", "creator"]
    rdfs5 = ("Cast member implies contributor to the creative work or subject . [X] implies "
             "cast member . Therefore , [X] implies [MASK] .")
    assert _order(_reader(), rdfs5, props)[:2] == [props[1], "cast member"]
    wordings = ["'s participant is", "is part of", "'s chairperson is", "is located in",
                "'s country is"]
    rdfs7 = ("Head of government implies chairperson . Conflict implies participant in . "
             "[X]'s government is headed by [Y] . Military branch implies part of . "
             "Therefore , [X] [MASK] [Y] .")
    assert _order(_reader(), rdfs7, wordings)[0] == "'s chairperson is"
    # a written false premise is followed (a counterfactual cell)
    false = rdfs7.replace("implies chairperson", "implies country")
    assert _order(_reader(), false, wordings)[0] == "'s country is"


def test_a_chain_with_naming_distractors_ranks_its_end_first():
    prompt = ("One has to be a particular organisation if one was founded by a person . "
              "Place is an animal . Organisation is an agent . Work is a company . "
              "[X] was founded by [Y] . Therefore , [X] is a [MASK] .")
    order = _order(_reader(), prompt, CLASSES)
    assert order[:2] == ["agent", "organisation"]  # three premises' conclusion, then two
    reading = read_prompt(prompt).entailed()
    assert set(reading) == {"organisation", "agent"}  # the distractors enter no proof


def test_what_is_not_written_is_ranked_as_frequency_ranks_it():
    freq = load_model("frequency", seed=0).trained_on(TRAIN)
    for prompt in ("Therefore , [X] is a [MASK] .",
                   "Brewery is an agent . Therefore , [X] is a [MASK] .",  # P2 not written
                   "[X] is a [MASK] ."):  # no conjunction: no premises
        assert _order(_reader(), prompt, CLASSES) == _order(freq, prompt, CLASSES)


def test_reader_q_decides_per_item_the_same_in_every_cell_and_reads_about_q_percent():
    freq = load_model("frequency", seed=3).trained_on(TRAIN)
    full = _reader("reader", seed=3)
    half = _reader("reader:50", seed=3)
    cells = [WRITTEN["rdfs9"][0], "[X] is a brewery . Therefore , [X] is a [MASK] ."]
    rng = np.random.default_rng(0)
    pool = [f"class {i}" for i in range(40)]
    decided = []
    for _ in range(60):  # items: their candidate lists, in any order the study writes them
        cands = ["agent", "brewery", *rng.choice(pool, 6, replace=False)]
        reads = [_order(half, p, cands) == _order(full, p, cands) != _order(freq, p, cands)
                 for p in cells]
        assert reads[0] == reads[1]  # one decision for the item, whatever the cell
        shuffled = list(rng.permutation(cands))
        assert reads_item(3, cands, 50) == reads_item(3, shuffled, 50) == reads[0]
        decided.append(reads[0])
    assert 0 < sum(decided) < len(decided)
    lists = [[f"c{i}", f"d{j}"] for i in range(50) for j in range(40)]
    share = np.mean([reads_item(7, c, 30) for c in lists])
    assert abs(share - 0.30) < 0.04  # 2,000 items: the binomial sd is 0.01
    assert not any(reads_item(7, c, 0) for c in lists[:50])
    with pytest.raises(ModelError, match="whole number from 0 to 100"):
        load_model("reader:150")


def test_the_lexicon_matches_labels_to_wordings():
    wordings = ["'s government is headed by", "'s chairperson is", "is part of", "has part",
                "'s contributor is", "is created by"]
    assert best_match("head of government", wordings) == "'s government is headed by"
    assert best_match("part of", wordings) == "is part of"
    assert best_match("contributor to the creative work or subject", wordings) == "'s contributor is"
    assert best_match("place of birth", wordings) is None
    assert similarity("creator", "is created by") == similarity("is created by", "creator") > 0


def test_copy_names_a_wording_by_its_label_and_a_label_by_its_wording():
    copy = load_model("copy", seed=0).trained_on(TRAIN)
    wordings = ["'s country is", "'s chairperson is", "is located in"]
    prompt = "Head of government implies chairperson . Therefore , [X] [MASK] [Y] ."
    assert _order(copy, prompt, wordings)[0] == "'s chairperson is"
    labels = ["country", "head of government", "location"]
    fact = "[X]'s government is headed by [Y] . Therefore , [X] implies [MASK] ."
    assert _order(copy, fact, labels)[0] == "head of government"
    # a word inside another word names nothing
    assert _order(copy, "A personality . Therefore , [X] is a [MASK] .", ["person", "place"]) \
        == _order(load_model("frequency").trained_on(TRAIN), "x", ["person", "place"])


def test_the_heuristics_load_by_name_and_are_no_controls():
    for name in ("heuristic:copy-random", "heuristic:copy-wording", "reader", "reader:25"):
        check_model_name(name)
        assert not is_control_model(name)
        assert load_model(name).kind == "baseline"  # weightless: no torch, no cache
    assert is_control_model("copy")
    with pytest.raises(ModelError, match="heuristic:copy-random"):
        check_model_name("heuristic:nope")
    with pytest.raises(ModelError, match="not a control"):
        prior_target("prior:reader")
    rnd = load_model("heuristic:copy-random", seed=0).trained_on(TRAIN)
    cands = ["chairperson", *(f"t{i}" for i in range(12))]
    prompt = "Head of government implies chairperson . Therefore , [X] implies [MASK] ."
    assert _order(rnd, prompt, cands)[0] == "chairperson"
    assert _order(rnd, prompt, cands) != _order(rnd, prompt + " ", cands)  # a tail per prompt
    wording = load_model("heuristic:copy-wording", seed=0).trained_on(TRAIN)
    copy = load_model("copy", seed=0).trained_on(TRAIN)
    assert _order(wording, prompt, cands) == _order(copy, prompt, cands)


def test_the_names_are_known_without_torch():
    code = ("import sys; from kgprobe.models.names import check_model_name; "
            "[check_model_name(n) for n in ('reader', 'reader:5', 'heuristic:copy-random')]; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
