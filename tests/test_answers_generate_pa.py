"""`study premise-ablation --answers generate`: each cell's prompt completed by the model,
graded by the ontology's closure. On the zoo ontology (tests/zoo.py), with the frequency
baseline and a tiny random causal LM whose pseudowords stay vectors."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import pytest
from kgprobe.errors import StudyError
from kgprobe.ontology.loaders import load_rdf
from kgprobe.reasoning.grading import GRADES, grade
from kgprobe.studies.open_answers import METRICS
from kgprobe.studies.premise_ablation.config import AblationConfig, add_arguments, config_from_args

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"))


def config(model, **settings) -> AblationConfig:
    base = dict(templates=("manual",), limit=None, batch_size=8, pairs=1, answers="generate",
                max_new_tokens=3, controls=())
    return AblationConfig(model, **{**base, **settings})


def run(zoo, out: Path, model: str, **settings):
    from kgprobe.studies.premise_ablation.study import run_premise_ablation

    rows = run_premise_ablation(config(model, **settings), out, source=load_rdf(zoo),
                                progress=False)
    preds = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    with open(out / "results.csv", newline="") as fh:
        return rows, preds, list(csv.DictReader(fh))


def check_tables(table, preds):
    from kgprobe.studies.premise_ablation.generate import COLUMNS

    assert table and list(table[0]) == COLUMNS
    for row in table:
        if int(row["n"]):
            assert sum(float(row[g]) for g in GRADES) == pytest.approx(1.0, abs=1e-3)
            assert float(row["accuracy"]) == pytest.approx(
                float(row["exact"]) + float(row["entailed"]), abs=1e-3)
            for m in METRICS:
                assert float(row[f"{m}_lo"]) <= float(row[m]) + 1e-9 <= float(row[f"{m}_hi"]) + 2e-9
    templates = [r for r in table if r["variant"] != "mean"]
    assert sum(int(r["n"]) for r in templates) == len(preds)
    assert all(isinstance(p["answer"], str) and p["grade"] in GRADES for p in preds)


def test_the_zoo_taxonomies_grade_superclasses_superproperties_siblings_and_premises(zoo):
    from kgprobe.studies.premise_ablation.build import build_data
    from kgprobe.studies.premise_ablation.generate import taxonomies

    source = load_rdf(zoo)
    data = build_data(config("frequency"), source)
    classes, properties = (taxonomies(data, source)[k] for k in ("class", "property_pattern"))
    got = grade("an animal", ["mammal"], classes)
    assert (got.grade, got.distance) == ("entailed", 1)
    assert grade("Mammals.", ["mammal"], classes).grade == "exact"
    assert grade("a cat", ["mammal"], classes).grade == "wrong"  # a subclass: the premise's own
    assert grade("a zebra", ["mammal"], classes).grade == "unmapped"
    # properties are named by the pattern the prompts write them with
    assert grade("knows", ["knows"], properties).grade == "exact"
    assert grade("is related to", ["knows"], properties).grade == "entailed"
    assert grade("takes care of", ["knows"], properties).grade == "wrong"  # a subproperty


def test_the_frequency_baseline_runs_end_to_end_with_controls_and_resumes(tmp_path, zoo):
    out = tmp_path / "run"
    rows, preds, table = run(zoo, out, "frequency", controls=("copy",))
    check_tables(table, preds)
    assert {r["variant"] for r in table} >= {"0", "mean"}
    # the most frequent training answer among the prompt's candidates: a class for a class
    # hypothesis, graded by the closure against each item's gold
    by_rule = {p["rule"]: p for p in preds}
    assert by_rule["rdfs9"]["label"] and by_rule["rdfs9"]["grade"] != "unmapped"
    # copy answers the first class the prompt names: with P1 written, the premise's own class,
    # a subclass of the gold, so wrong
    copied = [json.loads(x) for x in (out / "controls" / "copy" / "predictions.jsonl")
              .read_text().splitlines()]
    written = [p for p in copied if p["rule"] == "rdfs9" and p["p1"] == "explicit"]
    assert written and all(p["grade"] == "wrong" for p in written)
    report = (out / "report.md").read_text()
    assert "open answers graded by the ontology" in report and "| | | | copy |" in report
    assert json.loads((out / "config.json").read_text())["answers"] == "generate"
    assert run(zoo, out, "frequency", controls=("copy",))[0] == rows  # resumed, same rows
    from kgprobe.studies.premise_ablation.cli import PremiseAblation

    obs = PremiseAblation().observations(out)
    assert len(obs) == len(preds) and {o["accuracy"] for o in obs} <= {0.0, 1.0}


def test_the_run_asks_exactly_the_dry_runs_generation_prompts(tmp_path, zoo, monkeypatch):
    from kgprobe.models.baselines import FrequencyModel
    from kgprobe.studies.ontology_source import OntologySource
    from kgprobe.studies.premise_ablation.dry import write_dry_run

    asked: list[str] = []
    answer = FrequencyModel.generate

    def recording(self, prompts, **kwargs):
        asked.extend(prompts)
        return answer(self, prompts, **kwargs)

    monkeypatch.setattr(FrequencyModel, "generate", recording)
    run(zoo, tmp_path / "run", "frequency")
    dry = config(None, ontology=OntologySource("file", str(zoo)))
    write_dry_run(dry, tmp_path / "dry")
    lines = [json.loads(x) for x in (tmp_path / "dry" / "prompts.jsonl").read_text().splitlines()]
    written = {x["text"] for x in lines if x["extra"].get("kind") == "reasoning"}
    # with one pair every item is in its explicit cells and in one of implicit / not, so the
    # run writes each way of writing the premises: the same texts as the dry run
    assert asked and set(asked) == written
    assert all("[MASK]" not in t and "[MASK]" in x["extra"]["cloze"] for x in lines
               if x["extra"].get("kind") == "reasoning" for t in [x["text"]])


def test_pseudoword_vectors_are_placed_in_free_generation(tiny_llama):
    from kgprobe.models.encoding import PromptEncoder

    encoder = PromptEncoder(tiny_llama.tokenizer)
    word = next(w for w in ("Paris", "Person", "Berlin", "The", "A")
                if len(encoder.encode_text(w, "start")) == 1)
    vector = tiny_llama.model.get_input_embeddings().weight[encoder.encode_text(word, "start")[0]].detach()
    prompts = ["[X] is a", "[X] is the capital of France . Therefore , it is a"]  # [X] starts
    placed = tiny_llama.generate(prompts, max_new_tokens=4, stop=(), pseudowords={"[X]": vector})
    spelled = tiny_llama.generate([p.replace("[X]", word) for p in prompts], max_new_tokens=4,
                                  stop=())
    assert placed == spelled  # the vector at the slot reads as the word whose embedding it is
    alone = [tiny_llama.generate([p], max_new_tokens=4, stop=(), pseudowords={"[X]": vector})[0]
             for p in prompts]
    assert alone == placed  # left-padded batches change no answer


def test_a_tiny_causal_lm_completes_the_cells_with_its_pseudowords(tmp_path, zoo, tiny_llama_dir):
    rows, preds, table = run(zoo, tmp_path / "run", str(tiny_llama_dir), rules=("rdfs9", "rdfs7"),
                             limit=1)
    check_tables(table, preds)
    assert {p["rule"] for p in preds} == {"rdfs9", "rdfs7"}
    assert all("[X]" in p["prompt"] and p["prompt"].endswith(("is a", "[X]", "has class",
                                                              "is a particular")) for p in preds)


def parse(*argv: str) -> AblationConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(parser.parse_args(["--out", "x", "--model", "frequency", *argv]))


def test_settings_generation_cannot_run_are_refused_in_one_line():
    assert parse("--answers", "generate", "--templates", "manual").pinned()["answers"] == "generate"
    assert "answers" not in parse("--templates", "manual").pinned()  # a ranking folder as before
    for argv, option in ((("--templates", "manual,soft"), "--templates manual"),
                         (("--templates", "manual", "--depth", "1,2"), "--depth"),
                         (("--templates", "manual", "--controls", "prior"), "--controls"),
                         (("--protocol", "paper"), "--protocol paper"),
                         (("--templates", "manual", "--max-new-tokens", "0"), "--max-new-tokens")):
        with pytest.raises(StudyError, match=option) as err:
            parse("--answers", "generate", *argv)
        assert "\n" not in str(err.value)
