"""Soft templates under `--protocol paper` (paper_soft.py): the official code's soft forms,
and on a tiny random model the mechanics — both phases trained by Appendix A's recipe, the
conjunctions and fine-tuned template copies started as the official code loads them, the soft
cells in the results, and the dry run listing every soft request the run scores or trains on."""

from __future__ import annotations

import csv
import json
import math

import pytest
import torch
from kgprobe.cli import main
from kgprobe.reasoning import paper_items as P
from kgprobe.studies.premise_ablation import soft_recipe


def test_soft_forms_are_the_official_codes():
    # data.py with --trained_soft load: "{uuu} {soft}x3 {xxx} ." for P1, "[X] {soft}x3 {uuu} ."
    # for rdfs9's P2, a conjunction after each written premise, "[X] {soft}x3 [MASK] ." as H
    item = P.paper_items(["rdfs9"])["rdfs9"][0]
    assert item.soft_text() == (
        "Ice hockey league [p1~0] [p1~1] [p1~2] sports league . [conj~0] [X] [p2~0] [p2~1] "
        "[p2~2] ice hockey league . [conj~1] [X] [h~0] [h~1] [h~2] [MASK] .")
    assert item.soft_text(False, False) == "[conj~1] [X] [h~0] [h~1] [h~2] [MASK] ."
    rdfs7 = P.paper_items(["rdfs7"])["rdfs7"][0]
    assert rdfs7.soft_text(False, True) == (  # P2 the property's own pattern; H has no soft
        "[X0]'s chief executive officer is [Y0] . [conj~1] [X0] [MASK] [Y] .")
    domain = P.soft_memorizing_prompt(P.load_records("domain")[0])
    assert domain.text == "spouse [domain~0] [domain~1] [domain~2] [MASK] ."  # fs: the label
    # utils.py's load_soft_emb_with_conj: which trained template starts each position
    assert P.soft_relations("rdfs9") == {"p1": "subClassOf", "p2": "type", "h": "type"}
    assert P.soft_relations("rdfs7") == {"p1": "subPropertyOf"}


def _refuse(*args, **kwargs):
    raise AssertionError("trained a soft template")


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def recorded(monkeypatch):
    """Every training the run starts: its label, starting vectors, examples, and every loss
    row's width (BCE over the example's whole candidate list)."""
    calls, widths = [], []
    train, bce = soft_recipe.train_recipe, soft_recipe.bce_over_candidates

    def recording(score, params, train_set, dev, **kwargs):
        calls.append({"label": kwargs["label"], "start": {k: v.detach().clone()
                                                           for k, v in params.items()},
                      "train": [r.prompt for r in train_set], "dev": [r.prompt for r in dev],
                      "kwargs": kwargs})
        return train(score, params, train_set, dev, **kwargs)

    def counting(scores, golds):
        widths.append(scores.shape[0])
        return bce(scores, golds)

    monkeypatch.setattr(soft_recipe, "train_recipe", recording)
    monkeypatch.setattr(soft_recipe, "bce_over_candidates", counting)
    return calls, widths


ARGS = ["--protocol", "paper", "--templates", "manual,soft", "--rules", "rdfs7",
        "--limit", "2", "--pairs", "2", "--candidates", "5", "--memorized", "rank1",
        "--controls", "none"]  # controls score the same requests (studies.controls' tests)


def test_paper_soft_run_trains_by_the_recipe_and_scores_what_the_dry_run_lists(
        tmp_path, tiny_gpt2_dir, recorded, monkeypatch):
    from kgprobe.cli import build_parser
    from kgprobe.studies.premise_ablation.config import config_from_args
    from kgprobe.studies.premise_ablation.study import run_premise_ablation

    calls, widths = recorded
    args = build_parser().parse_args(["study", "premise-ablation", "--model", str(tiny_gpt2_dir),
                                      "--out", str(tmp_path / "run"), "--soft-epochs", "2",
                                      "--batch-size", "16", *ARGS])
    config = config_from_args(args)
    assert (config.soft_recipe, config.templates) == ("paper", ("manual", "soft"))
    run_premise_ablation(config, tmp_path / "run", progress=False)

    labels = [c["label"] for c in calls]
    # phase 1 (the relation rdfs7's soft P1 uses), then per way of writing the premises, and
    # per pair: rdfs7's forms hold the pseudoword [X0] (rdfs5's none: the next test)
    assert labels[0] == "subPropertyOf"
    assert set(labels[1:]) == {
        f"rdfs7:{s}:pair{n}" for s in ("P1P2", "P1-", "-P2", "--") for n in (0, 1)}
    by_label = {c["label"]: c for c in calls}
    records = P.load_records("subPropertyOf")  # phase 1: records 0–9 train, 10–19 dev
    assert by_label["subPropertyOf"]["train"] == [P.soft_memorizing_prompt(r).text
                                                  for r in records[:10]]
    assert by_label["subPropertyOf"]["dev"] == [P.soft_memorizing_prompt(r).text
                                                for r in records[10:20]]
    # phase 2, as the official fs mode: the first 10 test items train, the next 10 select
    items = P.paper_items(["rdfs7"])["rdfs7"]
    assert by_label["rdfs7:P1-:pair0"]["train"] == [i.soft_text(True, False) for i in items[:10]]
    assert by_label["rdfs7:P1-:pair0"]["dev"] == [i.soft_text(True, False) for i in items[10:20]]
    assert all(c["kwargs"]["epochs"] == 2 and "lr" not in c["kwargs"] for c in calls)
    assert widths and set(widths) == {5}  # every loss row: the request's whole candidate list

    log = json.loads((tmp_path / "run" / "soft" / "paper_training.json").read_text())
    steps = math.ceil(10 / 8) * 2
    for label in labels:  # Appendix A: lr 0.5 decaying linearly per step; best dev MRRa kept
        entry = log[label]
        assert entry["lr"] == pytest.approx([0.5 * (steps - k) / steps for k in range(steps)])
        assert entry["best_dev_mrra"] == pytest.approx(max(entry["dev_mrra"]), abs=1e-6)

    # phase 1 starts at the official words; phase 2 at the trained template (a copy at each
    # position) and fresh conjunctions: one after each written premise, or one before H
    store = torch.load(tmp_path / "run" / "soft" / "paper.pt")
    trained = store["relations"]["subPropertyOf"]
    start = {c["label"]: c["start"] for c in calls}
    first = start["subPropertyOf"]
    assert sorted(first) == P.soft_slots("subPropertyOf")
    both = start["rdfs7:P1P2:pair1"]
    assert set(both) == {*P.soft_slots("p1"), *P.CONJ}  # rdfs7: P2 and H have no soft tokens
    for name, source in zip(P.soft_slots("p1"), P.soft_slots("subPropertyOf")):
        assert torch.equal(both[name], trained[source])
    assert set(start["rdfs7:--:pair1"]) == {"[conj~1]"}
    assert set(start["rdfs7:P1-:pair0"]) == {*P.soft_slots("p1"), "[conj~1]"}
    tuned = store["shapes"]["rdfs7:P1P2:pair1"]
    assert not torch.equal(tuned["[p1~0]"], trained["[subPropertyOf~0]"])  # fine-tuned too

    with open(tmp_path / "run" / "results.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["variant"] == "0" and r["rule"] != "mean"]
    cells = {(r["rule"], r["template"], r["p1"], r["p2"]): r["n_prompts"] for r in rows}
    for p1 in ("explicit", "implicit", "not"):
        for p2 in ("explicit", "implicit", "not"):
            # the soft cell scores the manual cell's items (the same split)
            assert cells[("rdfs7", "soft", p1, p2)] == cells[("rdfs7", "manual", p1, p2)]
    assert any(n not in ("", "0") for k, n in cells.items() if k[1] == "soft")
    preds = [p for p in _lines(tmp_path / "run" / "predictions.jsonl") if p["template"] == "soft"]
    assert preds and all("[conj~1]" in p["prompt"] for p in preds)

    # the dry run with the same options: every soft prompt scored and every training request
    monkeypatch.setattr(soft_recipe, "train_recipe", _refuse)  # the dry run trains nothing
    assert main(["study", "premise-ablation", "--dry-run", "--out", str(tmp_path / "dry"),
                 *ARGS]) == 0
    dry = _lines(tmp_path / "dry" / "prompts.jsonl")
    soft = {(r["text"], r["n_candidates"]) for r in dry
            if r["template"] == "soft" and r["extra"]["kind"] == "reasoning"}
    assert {(p["prompt"], 5) for p in preds} <= soft
    for call in calls:
        listed = [r for r in dry if r["extra"].get("training") == call["label"]]
        assert [r["text"] for r in listed if r["extra"]["split"] == "train"] == call["train"]
        assert [r["text"] for r in listed if r["extra"]["split"] == "dev"] == call["dev"]


def test_a_rerun_reuses_the_trained_vectors(tmp_path, tiny_gpt2_dir, monkeypatch):
    from kgprobe.studies.premise_ablation.config import AblationConfig
    from kgprobe.studies.options import ModelSettings
    from kgprobe.studies.premise_ablation.paper import paper_study, train_soft, with_model
    from kgprobe.studies.registry import get_study

    config = AblationConfig(str(tiny_gpt2_dir), rules=("rdfs5",), templates=("soft",), limit=1,
                            pairs=1, candidates="5", protocol="paper", soft_epochs=1,
                            soft_recipe="paper", settings=ModelSettings(batch_size=16, cache=False))
    study = with_model(paper_study(config), get_study("premise-ablation").load(config))
    train_soft(study, tmp_path)
    first = {k: {n: v.clone() for n, v in vs.items()} for k, vs in study.soft.items()}
    # rdfs5's soft forms hold no pseudoword: one training per way of writing, every pair's
    assert set(first) == {"rdfs5:P1P2", "rdfs5:P1-", "rdfs5:-P2", "rdfs5:--"}
    assert set(first["rdfs5:P1P2"]) == {*P.soft_slots("p1"), *P.soft_slots("p2"),
                                        *P.soft_slots("h"), *P.CONJ}

    monkeypatch.setattr(soft_recipe, "train_recipe", _refuse)  # OUT/soft/paper.pt reused
    train_soft(study, tmp_path)
    assert all(torch.equal(study.soft[k][n], first[k][n]) for k in first for n in first[k])


@pytest.mark.parametrize("argv,named", [
    (["--soft-recipe", "default"], "--soft-recipe"),
    (["--model", "frequency"], "gradients"),  # a baseline cannot train a soft template
])
def test_paper_soft_refusals_are_one_line(tmp_path, capsys, argv, named):
    argv = ["--model", "frequency", *argv] if "--model" not in argv else argv
    code = main(["study", "premise-ablation", "--protocol", "paper", "--templates", "soft",
                 "--rules", "rdfs5", "--limit", "1", "--pairs", "1", "--out", str(tmp_path),
                 *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and named in err[0], err
    assert not (tmp_path / "results.csv").exists()
