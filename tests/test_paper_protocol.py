"""`--protocol paper`: prompts equal the official OntoProbe code's, its metrics, `--dry-run`.

The expected strings below were produced by running the official code's prompt builder
(``data.py``'s ``DatasetLoader.load_data``, mode zs-f, premise mode 22) through
bench/paper_official_prompts.py and copied literally; they cover each task and rule and the
official code's quirks (capitalize() lower-casing, the DM/RG clauses, "a organisation",
rdfs7's literal [Y], rdfs11 = rdfs9).
"""

from __future__ import annotations

import csv
import json
import time

import numpy as np
import pytest
from kgprobe.cli import main
from kgprobe.reasoning import paper_items as P
from kgprobe.studies.metrics import item_metrics
from kgprobe.studies.paper_metrics import (
    paper_evaluate,
    paper_gold_indices,
    paper_item_metrics,
    paper_ranks,
    split_rank1,
    split_top_half,
)

MEMORIZING = [  # (task, template, test record, official text, official golds)
    ("type", 0, 0, "Cold lake metis settlement is a [MASK] .",
     ["municipality", "governmental administrative region", "administrative region", "region",
      "populated place", "place"]),
    ("type", 0, 7, "Andrew nunn is a [MASK] .",
     ["priest", "cleric", "person", "animal", "eukaryote", "species"]),
    ("type", 2, 3, "Ventral pallidum is a particular [MASK] .", ["brain", "anatomical structure"]),
    ("subClassOf", 1, 0, "Ice hockey league has class [MASK] .",
     ["sports league", "organisation", "agent"]),
    ("subPropertyOf", 0, 5, "Headquarters location implies [MASK] .",
     ["location", "significant place"]),
    ("domain", 0, 0, "One has to be a particular [MASK] if one has composer .", ["work"]),
    ("domain", 0, 1, "One has to be a particular [MASK] if one is an employer of an organisation .",
     ["person"]),
    ("domain", 0, 4, "One has to be a particular [MASK] if one is a citizen of a country .",
     ["person"]),
    ("range", 0, 0, "One has to be a particular [MASK] if a person is an employer of that .",
     ["organisation"]),
    ("range", 0, 1, "One has to be a particular [MASK] if one is a work's composer .", ["person"]),
    ("range", 0, 3, "One has to be a particular [MASK] if an organisation was founded by that .",
     ["person"]),
]

REASONING = [  # (rule, item, official text with both premises written, official golds)
    ("rdfs2", 1, "One has to be a person if one is an employer of an organisation . [X0] is an "
     "employer of [Y0] . Therefore, [X0] is a particular [MASK] .", ["person"]),
    ("rdfs3", 0, "One has to be a organisation if a person is an employer of that . [X0] is an "
     "employer of [Y0] . Therefore, [Y0] is a particular [MASK] .", ["organisation"]),
    ("rdfs5", 1, "Successful candidate implies winner . [X] implies successful candidate . "
     "Therefore, [X] implies [MASK] .", ["winner", "candidate", "participant", "significant person"]),
    ("rdfs7", 0, "Chief executive officer implies corporate officer . [X0]'s chief executive "
     "officer is [Y0] . Therefore, [X0] [MASK] [Y] .", ["'s corporate officer is", "is managed by"]),
    ("rdfs9", 0, "Ice hockey league is a sports league . [X] is an ice hockey league . "
     "Therefore, [X] is a particular [MASK] .", ["sports league", "organisation", "agent"]),
    ("rdfs11", 0, "Ice hockey league is a sports league . [X] is an ice hockey league . "
     "Therefore, [X] is a particular [MASK] .", ["sports league", "organisation", "agent"]),
]


@pytest.mark.parametrize("task,template,index,text,golds", MEMORIZING)
def test_memorizing_prompts_equal_the_official_code(task, template, index, text, golds):
    prompt = P.memorizing_prompts(task, template)[index]
    assert prompt.text == text
    assert list(prompt.golds) == golds


@pytest.mark.parametrize("rule,index,text,golds", REASONING)
def test_reasoning_prompts_equal_the_official_code(rule, index, text, golds):
    item = P.paper_items([rule])[rule][index]
    assert item.text() == text
    assert list(item.golds) == golds
    # a premise not written leaves the conjunction and hypothesis in place
    assert item.text(p1=False) == text.replace(item.p1 + " ", "")


def test_items_are_the_memorizing_test_records():
    counts = {rule: len(items) for rule, items in P.paper_items().items()}
    # domain/range/subPropertyOf: every test record; subClassOf: the 500 its premise run scores
    assert counts == {"rdfs2": 30, "rdfs3": 28, "rdfs5": 39, "rdfs7": 39, "rdfs9": 500,
                      "rdfs11": 500}
    assert len(P.memorizing_prompts("type", 0)) == 500
    assert P.memorizing_prompts("type", 0)[0].record == 20  # records 0–19 are train and dev


def test_p2_is_split_over_its_runs_whole_test_set():
    from kgprobe.reasoning.paper_items import p2_population

    population = p2_population("rdfs9")
    assert len(population) == 701 and population[0].text == "[X0] is a particular [MASK] ."
    assert population[0].golds == ("ice hockey league",)
    assert [p.record for p in p2_population("rdfs2")] == [i.record.index for i in
                                                         P.paper_items(["rdfs2"])["rdfs2"]]


def test_every_gold_is_a_candidate():
    for rule, items in P.paper_items().items():
        cands = set(P.candidates_for(items[0].candidates, [g for i in items for g in i.golds]))
        assert all(g in cands for i in items for g in i.golds), rule


def test_paper_metrics_on_a_hand_made_example():
    # candidates 0..4; scores tie between 0 and 2; golds 2, 0 and 2 again (a duplicate label)
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.7])
    golds = [2, 0, 2]
    # order, best first, ties in candidate order: 1 (0.9), 4 (0.7), 0 (0.5), 2 (0.5), 3
    assert paper_ranks(scores, golds).tolist() == [4, 3, 4]
    m = paper_item_metrics(scores, golds, ks=(1, 3, 5))
    assert m == {"R@1": 0.0, "R@3": 1.0, "R@5": 1.0, "MRR": 1 / 3, "MRRa": 1 / (11 / 3)}
    # kgprobe's default: ties pessimistic (both tied golds rank 4), golds a set
    default = item_metrics(scores, golds, ks=(1, 3, 5))
    assert default["MRR"] == 1 / 4 and default["MRRa"] == 1 / 4 and default["R@3"] == 0.0
    both = paper_evaluate([scores, np.array([0.0, 0.0, 0.0, 0.0, 1.0])], [golds, [4]], ks=(1,))
    assert both["n"] == 2 and both["R@1"] == 0.5 and both["MRR"] == pytest.approx((1 / 3 + 1) / 2)
    assert paper_gold_indices(["a", "b", "c"], ["c", "x", "a", "c"]) == [2, 0, 2]


def test_memorized_splits():
    rr = [0.5, 1.0, 0.2, 1.0, 0.1]
    mem, nope = split_top_half(rr)
    assert mem == [1, 3] and nope == [2, 4]  # n odd: the median record (0) is in neither
    assert split_rank1(rr) == ([1, 3], [0, 2, 4])


@pytest.mark.parametrize("rule", ["rdfs5", "rdfs7"])
def test_explicit_p2_cells_drop_the_median_record(rule):
    """The official select_premise takes P2's explicit records from split_by_MRR (the two
    halves, ⌊n/2⌋·2 of n), P1's from split_by_Acc (every record): 38 of rdfs5's and rdfs7's
    39 items, whichever record the model ranks in the middle."""
    from kgprobe.studies.premise_ablation.paper import cell_records

    records = [i.record.index for i in P.paper_items([rule])[rule]]
    assert len(records) == 39
    rr = list(np.random.default_rng(3).random(len(records)))
    median = records[int(np.argsort(rr)[len(rr) // 2])]

    def split(rule_of):
        mem, nope = rule_of(rr)
        return {"records": records, "rr": rr, "memorized": [records[i] for i in mem],
                "not": [records[i] for i in nope]}

    premises = {"P1": split(split_rank1), "P2": [split(split_top_half)]}
    both = cell_records(premises, "explicit", "explicit", 0)
    assert len(both) == 38 and median not in both
    assert cell_records(premises, "explicit", "not", 0) | cell_records(
        premises, "explicit", "implicit", 0) == both
    assert len(cell_records(premises, "explicit", "implicit", 0)) == 19
    # P1 explicit keeps every record (split_by_Acc's all_index): only P2 drops the median
    premises["P2"] = [{**premises["P2"][0], "not": premises["P2"][0]["not"] + [median]}]
    assert len(cell_records(premises, "explicit", "explicit", 0)) == 39


@pytest.fixture
def no_model(monkeypatch):
    import kgprobe.models.loading as loading

    def refuse(*args, **kwargs):
        raise AssertionError("--dry-run loaded a model")

    monkeypatch.setattr(loading, "load_model", refuse)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("protocol", ["paper", "default"])
def test_dry_run_writes_prompts_without_a_model(tmp_path, no_model, protocol, capsys):
    start = time.monotonic()
    assert main(["study", "memorization", "--dry-run", "--protocol", protocol, "--task", "domain",
                 "--templates", "all", "--out", str(tmp_path / "m")]) == 0
    assert main(["study", "premise-ablation", "--dry-run", "--protocol", protocol,
                 "--rules", "rdfs2,rdfs5", "--out", str(tmp_path / "p")]) == 0
    assert time.monotonic() - start < 60
    memo = _lines(tmp_path / "m" / "prompts.jsonl")
    assert len(memo) == 30 and all(r["study"] == "memorization" and r["task"] == "domain"
                                   for r in memo)
    assert all("[MASK]" in r["text"] and r["golds"] and r["n_candidates"] > 1 for r in memo)
    prompts = _lines(tmp_path / "p" / "prompts.jsonl")
    reasoning = [r for r in prompts if r["extra"]["kind"] == "reasoning"]
    assert {r["rule"] for r in reasoning} == {"rdfs2", "rdfs5"}
    both = [r for r in reasoning if r["p1"] and r["p2"]]
    assert both and all(r["p1"] in r["text"] and r["p2"] in r["text"] for r in both)
    assert any(not r["p1"] and not r["p2"] for r in reasoning)
    assert {r["extra"]["role"] for r in prompts if r["extra"]["kind"] == "premise probe"} == {"P1", "P2"}
    assert not (tmp_path / "m" / "results.csv").exists()


def test_paper_dry_run_matches_the_items(tmp_path, no_model):
    assert main(["study", "premise-ablation", "--dry-run", "--protocol", "paper",
                 "--rules", "rdfs7", "--out", str(tmp_path)]) == 0
    both = [r for r in _lines(tmp_path / "prompts.jsonl")
            if r["extra"]["kind"] == "reasoning" and r["p1"] and r["p2"]]
    assert [r["text"] for r in both] == [i.text() for i in P.paper_items(["rdfs7"])["rdfs7"]]
    assert both[0]["extra"]["pairs"] == 10  # the paper's 10 pseudoword pairs


def test_a_model_is_required_without_dry_run(tmp_path, capsys):
    assert main(["study", "memorization", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--model" in err[0] and "--dry-run" in err[0]


def test_paper_memorization_run_records_the_protocol(tmp_path):
    assert main(["study", "memorization", "--model", "frequency", "--protocol", "paper",
                 "--task", "subPropertyOf", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["study_protocol"] for r in rows] == ["paper"] and rows[0]["n"] == "39"
    assert json.loads((tmp_path / "config.json").read_text())["protocol"] == "paper"
    preds = _lines(tmp_path / "predictions.jsonl")
    assert preds[0]["prompt"] == "Chief executive officer implies [MASK] ."
    # a rerun into the folder under the other protocol is refused
    assert main(["study", "memorization", "--model", "frequency", "--task", "subPropertyOf",
                 "--out", str(tmp_path)]) == 2


def test_paper_premise_ablation_end_to_end(tmp_path, tiny_gpt2_dir):
    from kgprobe.studies.premise_ablation.config import AblationConfig
    from kgprobe.studies.options import ModelSettings
    from kgprobe.studies.premise_ablation.study import run_premise_ablation

    config = AblationConfig(str(tiny_gpt2_dir), rules=("rdfs5", "rdfs7"), limit=4, pairs=2,
                            candidates="5", protocol="paper", memorized="rank1",
                            settings=ModelSettings(batch_size=16))
    run_premise_ablation(config, tmp_path, progress=False)
    memorized = json.loads((tmp_path / "memorized.json").read_text())
    for rule in ("rdfs5", "rdfs7"):
        p1 = memorized["rules"][rule]["P1"]
        assert p1["records"] == list(range(20, 59))  # the whole test set, not the 4 scored
        assert sorted(p1["memorized"] + p1["not"]) == p1["records"]  # rank1: every record
        assert all((rr == 1.0) == (rec in p1["memorized"]) for rr, rec in zip(p1["rr"], p1["records"]))
        p2 = memorized["rules"][rule]["P2"]
        assert len(p2) == 2 and len(p2[0]["memorized"]) == len(p2[0]["not"]) == 19
    with open(tmp_path / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["study_protocol"] for r in rows} == {"paper"}
    explicit = [r for r in rows if r["rule"] == "rdfs7" and r["p1"] == r["p2"] == "explicit"
                and r["variant"] == "0"]
    # 4 items x 2 pairs, less any item that is P2's median record under a pair
    p2 = memorized["rules"]["rdfs7"]["P2"]
    scored = [i.record.index for i in P.paper_items(["rdfs7"])["rdfs7"][:4]]
    kept = sum(r in pair["memorized"] + pair["not"] for pair in p2 for r in scored)
    assert explicit and int(explicit[0]["n_prompts"]) == kept >= 6
    preds = [p for p in _lines(tmp_path / "predictions.jsonl") if p["rule"] == "rdfs7"
             and p["p1"] == p["p2"] == "explicit"]
    assert preds[0]["prompt"] == P.paper_items(["rdfs7"])["rdfs7"][0].text()


def test_lm_eval_export_under_the_paper_protocol(tmp_path):
    assert main(["export", "lm-eval", "--protocol", "paper", "--tasks", "reasoning",
                 "--rules", "rdfs9,rdfs7", "--candidates", "20", "--out", str(tmp_path)]) == 0
    docs = _lines(tmp_path / "kgprobe_reasoning_rdfs9.jsonl")
    assert len(docs) == 500
    assert docs[0]["text"] + "[MASK]" + docs[0]["suffix"] == (
        "Ice hockey league is a sports league . X is an ice hockey league . "
        "Therefore, X is a particular [MASK] .")
    assert sorted(docs[0]["choices"][g] for g in docs[0]["gold"]) == ["agent", "organisation",
                                                                       "sports league"]
    assert len(docs[0]["choices"]) == 20
    rdfs7 = _lines(tmp_path / "kgprobe_reasoning_rdfs7.jsonl")[0]
    assert rdfs7["text"].endswith("Therefore, X ") and rdfs7["suffix"] == " Y ."
    assert json.loads((tmp_path / "kgprobe_export.json").read_text())["settings"]["protocol"] == "paper"


@pytest.mark.parametrize("argv,named", [
    (["--memorized", "rank1"], "--memorized"),  # a paper option under the default protocol
    # soft templates under the paper protocol train by Appendix A's recipe only
    (["--protocol", "paper", "--templates", "soft", "--soft-recipe", "default"], "--soft-recipe"),
    (["--protocol", "paper", "--fraction", "0.3"], "--fraction"),
    (["--protocol", "paper", "--ontology", "x.ttl"], "--ontology"),
])
def test_bad_paper_settings_are_one_line(tmp_path, capsys, argv, named, no_model):
    assert main(["study", "premise-ablation", "--dry-run", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0]
    assert not (tmp_path / "prompts.jsonl").exists()


def test_frequency_baseline_reproduces_the_papers_table_4_row(tmp_path):
    # The official baseline scores every SCO test record (701); R@1 and R@5 do not depend on
    # the seeded order of the labels no train gold names, so they must be Table 4's 8.1, 38.9.
    assert main(["study", "memorization", "--model", "frequency", "--protocol", "paper",
                 "--task", "SCO", "--template", "0", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "results.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["n"] == "701"
    assert round(100 * float(row["R@1"]), 1) == 8.1 and round(100 * float(row["R@5"]), 1) == 38.9
