"""`--answers generate` in premise ablation (each cell's prompt completed by the model, graded
by the ontology's closure) and consistency (a statement believed when its answer is the gold).
On the zoo ontology (tests/zoo.py), with the frequency baseline and a tiny random causal LM
whose pseudowords stay vectors."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import pytest
from kgprobe.errors import StudyError
from kgprobe.ontology.loaders import load_rdf
from kgprobe.studies.options import ModelSettings
from kgprobe.reasoning.grading import GRADES, grade
from kgprobe.studies.open_answers import METRICS
from kgprobe.studies.controls import parse_controls
from kgprobe.studies.premise_ablation.config import (
    AblationConfig,
    add_arguments,
    config_from_args,
)

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"))


def config(model, **settings) -> AblationConfig:
    base = {"templates": ("manual",), "limit": None, "pairs": 1,
            "answers": "generate", "max_new_tokens": 3, "controls": ()}
    held = ModelSettings.taken_from(settings, batch_size=8)  # device, dtype, … among them
    return AblationConfig(model, settings=held, **{**base, **settings})


def run(zoo, out: Path, model: str, **settings):
    from kgprobe.studies.premise_ablation.study import run_premise_ablation

    rows = run_premise_ablation(config(model, ontology=zoo, **settings), out, progress=False)
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


def test_the_controls_of_open_answers_load_as_the_model_does(tmp_path, zoo, monkeypatch):
    """Each control of open answers is loaded with the run's device, dtype and seed and
    handed its chat template for the study (`controls.load_control`, the path every study's
    controls take), as the model is: the generation runner once loaded them bare."""
    from kgprobe.models import loading
    from kgprobe.studies import options
    from kgprobe.studies.premise_ablation.config import NAME

    loads, wraps = [], []
    real_load, real_wrap = loading.load_model, options.use_chat

    def load(name, **settings):
        loads.append((name, settings, real_load(name, **settings)))
        return loads[-1][2]

    def wrap(loaded, chat_template, study):
        wraps.append((loaded, chat_template, study))
        return real_wrap(loaded, chat_template, study)

    monkeypatch.setattr(loading, "load_model", load)
    monkeypatch.setattr(options, "use_chat", wrap)
    run(zoo, tmp_path / "run", "frequency", controls=("copy",), seed=3, device="cpu",
        dtype="bfloat16", chat_template="auto")
    # the model first (then its frequency control, which classifies the premises on the cpu)
    model_settings = loads[0][1]
    [(copy_settings, copy)] = [(kw, loaded) for name, kw, loaded in loads if name == "copy"]
    assert copy_settings == model_settings
    assert {k: copy_settings.get(k) for k in ("device", "dtype", "seed")} == {
        "device": "cpu", "dtype": "bfloat16", "seed": 3}
    assert [(t, s) for loaded, t, s in wraps if loaded is copy] == [("auto", NAME)]


def test_the_run_asks_exactly_the_dry_runs_generation_prompts(tmp_path, zoo, monkeypatch):
    from kgprobe.models.baselines import FrequencyModel
    from kgprobe.studies.ontology_source import OntologySource
    from kgprobe.studies.registry import get_study

    asked: list[str] = []
    answer = FrequencyModel.generate

    def recording(self, prompts, **kwargs):
        asked.extend(prompts)
        return answer(self, prompts, **kwargs)

    monkeypatch.setattr(FrequencyModel, "generate", recording)
    run(zoo, tmp_path / "run", "frequency")
    dry = config(None, ontology=OntologySource("file", str(zoo)))
    get_study("premise-ablation").dry_run(dry, tmp_path / "dry")
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
    _, preds, table = run(zoo, tmp_path / "run", str(tiny_llama_dir), rules=("rdfs9", "rdfs7"),
                             limit=1)
    check_tables(table, preds)
    assert {p["rule"] for p in preds} == {"rdfs9", "rdfs7"}
    assert all("[X]" in p["prompt"] and p["prompt"].endswith(("is a", "[X]", "has class",
                                                              "is a particular")) for p in preds)


def test_a_masked_lm_is_refused_in_one_line_before_the_folder_is_pinned(tmp_path, zoo,
                                                                         tiny_bert_dir):
    from kgprobe.errors import ModelError

    with pytest.raises(ModelError, match="needs a causal LM") as err:
        run(zoo, tmp_path / "run", str(tiny_bert_dir), rules=("rdfs9",), limit=1)
    assert "\n" not in str(err.value) and not (tmp_path / "run" / "config.json").exists()


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


# ------------------------------------------------------------------ consistency


def consistency(tmp_path, zoo, *extra: str) -> Path:
    from kgprobe.cli import main

    out = tmp_path / "C"
    assert main(["study", "consistency", "--model", "frequency", "--answers", "generate",
                 "--candidates", "3", "--limit", "5", "--ontology", str(zoo), "--threads", "1",
                 "--out", str(out), *extra]) == 0
    return out


def test_consistency_believes_a_statement_when_its_answer_is_exact(tmp_path, zoo):
    out = consistency(tmp_path, zoo)
    with open(out / "statements.csv", newline="") as fh:
        statements = list(csv.DictReader(fh))
    assert statements and all(sum(float(r[g]) for g in GRADES) == pytest.approx(1.0, abs=1e-3)
                              for r in statements)
    lines = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    asked = [s for p in lines for s in (*p["premises"], p["conclusion"])]
    assert asked and all((s["rank"] == 1) == (s["grade"] == "exact") for s in asked)
    assert all("[MASK]" not in s["prompt"] and "[MASK]" in s["cloze"] for s in asked)
    # the frequency baseline names the commonest superclass: exact or entailed on subClassOf
    assert {s["grade"] for s in asked if s["relation"] == "subClassOf"} >= {"exact", "entailed"}
    with open(out / "results.csv", newline="") as fh:
        assert {r["reference"] for r in csv.DictReader(fh)} == {"frequency"}  # no prior
    with open(out / "controls.csv", newline="") as fh:
        # the default controls that write an open answer (`parse_controls`, ranking=False)
        assert {r["model"] for r in csv.DictReader(fh)} == set(
            parse_controls(None, "frequency", ranking=False))
    assert "own answer is its gold" in (out / "report.md").read_text()
    assert json.loads((out / "config.json").read_text())["answers"] == "generate"


def test_an_entailed_answer_is_not_a_belief(zoo):
    from kgprobe.studies.consistency.config import ConsistencyConfig
    from kgprobe.studies.consistency.generate import generate_unit, taxonomies
    from kgprobe.studies.consistency.study import build
    from kgprobe.studies.open_answers import generation_prompt

    setup = build(ConsistencyConfig(None, ontology=zoo, limit=None, candidates="3",
                                    answers="generate", reference="frequency"))
    probes = setup.probes[("subClassOf", 0)]
    mammal = next(p for p in probes if p.statement.answer == "mammal")
    prompt = generation_prompt(mammal.prompt)

    class Answers:  # writes "an animal" for the mammal statement's question, else nothing
        def generate(self, prompts, **kwargs):
            return ["an animal" if p == prompt else "" for p in prompts]

    graders = taxonomies(setup, {"subClassOf"})
    _, preds = generate_unit(setup, probes, Answers(), graders["subClassOf"], desc="",
                             progress=False)
    same = [p for p in preds if p["prompt"] == prompt]
    got = next(p for p in same if p["answer"] == "mammal")
    # a true superclass: right, but a weaker statement than this one, so not believed
    assert (got["grade"], got["distance"], got["rank"]) == ("entailed", 1, len(mammal.candidates) + 1)
    # the same answer is the gold of the question's other statement: that one is believed
    assert [(p["grade"], p["rank"]) for p in same if p["answer"] == "animal"] == [("exact", 1)]
    assert all(p["grade"] == "unmapped" and p["rank"] > 1 for p in preds if p["prompt"] != prompt)


def test_consistency_asks_exactly_the_dry_runs_generation_prompts(tmp_path, zoo, monkeypatch):
    from kgprobe.cli import main
    from kgprobe.models.baselines import FrequencyModel

    asked: list[str] = []
    answer = FrequencyModel.generate

    def recording(self, prompts, **kwargs):
        asked.extend(prompts)
        return answer(self, prompts, **kwargs)

    monkeypatch.setattr(FrequencyModel, "generate", recording)
    consistency(tmp_path, zoo)
    assert main(["study", "consistency", "--dry-run", "--answers", "generate", "--candidates",
                 "3", "--limit", "5", "--ontology", str(zoo), "--out", str(tmp_path / "D")]) == 0
    written = [json.loads(x)["text"] for x in (tmp_path / "D" / "prompts.jsonl").read_text().splitlines()]
    assert asked and set(asked) == set(written)


@pytest.mark.parametrize("extra, needle", [(["--reference", "prior"], "--reference prior"),
                                           (["--believe-at", "2"], "--believe-at 2")])
def test_consistency_refuses_what_generation_cannot_read(tmp_path, capsys, extra, needle):
    from kgprobe.cli import main

    code = main(["study", "consistency", "--model", "frequency", "--answers", "generate",
                 *extra, "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x" / "config.json").exists()
