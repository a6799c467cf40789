"""`--answers generate`: open answers mapped to ontology terms and graded by the closure.

The grading tests use a hand-made taxonomy; the runs use a tiny Turtle ontology written here
(so no bundled data is read), the frequency baseline and a tiny random causal LM.
"""

from __future__ import annotations

import csv
import json

import pytest

from kgprobe.reasoning.grading import GRADES, Taxonomy, grade, specificity

SPORTS = Taxonomy(
    {"SoccerPlayer": ["soccer player", "footballer"], "TennisPlayer": ["tennis player"],
     "Athlete": ["athlete"], "Person": ["person"], "Agent": ["agent"], "Sport": ["soccer"],
     "City": ["city"]},
    parents={"SoccerPlayer": ["Athlete"], "TennisPlayer": ["Athlete"], "Athlete": ["Person"],
             "Person": ["Agent"], "City": []})
GOLD = ["soccer player"]  # the gold alone: what is entailed comes from the closure


def test_a_superclass_is_entailed_with_its_distance_and_a_sibling_is_wrong():
    athlete, person = grade("An athlete.", GOLD, SPORTS), grade("a person", GOLD, SPORTS)
    assert (athlete.grade, athlete.term, athlete.distance) == ("entailed", "Athlete", 1)
    assert (person.grade, person.distance) == ("entailed", 2)
    sibling = grade("a tennis player", GOLD, SPORTS)
    assert (sibling.grade, sibling.term) == ("wrong", "TennisPlayer")
    assert grade("the soccer player", GOLD, SPORTS).grade == "exact"
    assert specificity(grade("agent", GOLD, SPORTS)) == pytest.approx(1 / 4)
    assert specificity(sibling) == 0.0 and specificity(grade("soccer player", GOLD, SPORTS)) == 1.0


def test_unknown_words_are_unmapped_and_case_articles_plurals_and_synonyms_fold():
    assert grade("a banana", GOLD, SPORTS).grade == "unmapped"
    assert grade("", GOLD, SPORTS).grade == "unmapped"
    assert grade("the", GOLD, SPORTS).grade == "unmapped"  # an article alone names nothing
    for text in ("THE SOCCER PLAYERS", "Soccer players.", "footballers", "A Footballer"):
        assert grade(text, GOLD, SPORTS).grade == "exact", text
    assert grade("Athletes", GOLD, SPORTS).term == "Athlete"


def test_the_longest_name_wins_and_the_record_chain_counts_as_entailed():
    # "soccer" alone names the sport (wrong); the longer "soccer player" is the answer
    assert grade("a soccer player from Rosario", GOLD, SPORTS).term == "SoccerPlayer"
    assert grade("soccer", GOLD, SPORTS).grade == "wrong"
    # a classifier before "of" is read past to the head noun
    kinds = Taxonomy({**SPORTS.names, "Type": ["type"]}, SPORTS.parents)
    assert grade("a type of athlete", GOLD, kinds).term == "Athlete"
    assert grade("a type", GOLD, kinds).term == "Type"
    # a taxonomy without the edge: the record's own answer chain makes "athlete" true
    flat = Taxonomy({"a": ["soccer player"], "b": ["athlete"]})
    got = grade("athlete", ["soccer player", "athlete"], flat)
    assert (got.grade, got.distance) == ("entailed", 1)
    assert grade("athlete", ["soccer player"], flat).grade == "wrong"


def test_a_negated_answer_is_not_exact():
    """Issue 45: "not a soccer player" denies the gold; it was graded exact."""
    for text in ("not a soccer player", "He is not a soccer player.", "isn't a footballer",
                 "never a soccer player", "a non-soccer player"):
        got = grade(text, GOLD, SPORTS)
        assert got.grade == "wrong" and got.note == "negated", text
    assert grade("a soccer player", GOLD, SPORTS).grade == "exact"  # the plain answer still is
    assert "note" not in grade("a soccer player", GOLD, SPORTS).to_json()


def test_a_list_of_several_classes_is_not_exact():
    """Issue 45: a list of seven classes (the gold among them) was graded exact."""
    seven = "a soccer player, athlete, person, agent, tennis player, city and soccer"
    got = grade(seven, GOLD, SPORTS)
    assert got.grade == "wrong" and got.note == "a list of 7 terms", got
    assert grade("soccer player or athlete", GOLD, SPORTS).grade == "wrong"
    # several names of one term are no list; nor is a name that holds "and"
    assert grade("a footballer, i.e. a soccer player", GOLD, SPORTS).grade == "exact"
    arts = Taxonomy({"A": ["arts and crafts"], "B": ["arts"], "C": ["crafts"]})
    assert grade("arts and crafts", ["arts and crafts"], arts).grade == "exact"


def test_generation_prompts_end_at_the_slot():
    from kgprobe.studies.memorization.generate import generation_prompt

    assert generation_prompt("Lionel Messi is a [MASK] .") == "Lionel Messi is a"
    dm = generation_prompt("One has to be a particular [MASK] if one has a spouse .")
    assert dm.endswith("\nOne has to be a particular") and "[MASK]" not in dm
    assert dm.splitlines()[0] == "One has to be a particular ___ if one has a spouse ."


def test_the_baselines_answer_like_they_rank():
    from kgprobe.models.loading import load_model

    cands = [["person", "sports team", "team", "city"]] * 2
    prompts = ["Ajax is a sports team", "Paris is a"]
    train = [["city"], ["person"], ["city"]]
    assert load_model("frequency").trained_on(train).generate(prompts) == ["city", "city"]
    copied = load_model("copy").trained_on(train).generate(prompts, candidates=cands)
    assert copied == ["sports team", "city"]  # the longer name at the same place; else frequency
    rnd = load_model("random", seed=3).generate(prompts, candidates=cands)
    assert rnd == load_model("random", seed=3).generate(prompts, candidates=cands)
    assert all(a in cands[0] for a in rnd)


def test_a_causal_lm_answers_greedily_in_left_padded_batches(tiny_gpt2):
    prompts = ["Lionel Messi is a", "The city of Paris, the capital of France, is a"]
    batched = tiny_gpt2.generate(prompts, max_new_tokens=5, stop=())
    alone = [tiny_gpt2.generate([p], max_new_tokens=5, stop=())[0] for p in prompts]
    assert batched == alone and all(isinstance(a, str) for a in batched)
    assert tiny_gpt2.generate(prompts, max_new_tokens=5, stop=()) == batched  # greedy


def test_a_masked_lm_is_refused_in_one_line_before_the_folder_is_pinned(tmp_path, tiny_bert_dir):
    from kgprobe.errors import ModelError

    with pytest.raises(ModelError, match="needs a causal LM") as err:
        run(tmp_path, str(tiny_bert_dir), limit=2)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "config.json").exists()


# ------------------------------------------------------------------ runs on a tiny ontology
TTL = """@prefix : <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
:Agent a owl:Class ; rdfs:label "agent" .
:Person a owl:Class ; rdfs:label "person" ; rdfs:subClassOf :Agent .
:Athlete a owl:Class ; rdfs:label "athlete" ; rdfs:subClassOf :Person .
:SoccerPlayer a owl:Class ; rdfs:label "soccer player" ; skos:altLabel "footballer" ;
    rdfs:subClassOf :Athlete .
:TennisPlayer a owl:Class ; rdfs:label "tennis player" ; rdfs:subClassOf :Athlete .
:Place a owl:Class ; rdfs:label "place" .
:City a owl:Class ; rdfs:label "city" ; rdfs:subClassOf :Place .
"""


def tiny_ontology(tmp_path):
    lines = [TTL]
    for i in range(12):
        kind = ("SoccerPlayer", "TennisPlayer", "City")[i % 3]
        lines.append(f':x{i} a :{kind} ; rdfs:label "Someone Number {i}" .')
    path = tmp_path / "tiny.ttl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(tmp_path, model, **settings):
    from kgprobe.studies.memorization.study import run_memorization
    from kgprobe.studies.ontology_source import OntologySource

    out = tmp_path / "run"
    rows = run_memorization(model, out, tasks=["type"], templates="0", answers="generate",
                            ontology=OntologySource("file", str(tiny_ontology(tmp_path))),
                            progress=False, batch_size=4, **settings)
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    with open(out / "results.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    return out, rows, preds, table


def check_tables(table, preds):
    from kgprobe.studies.memorization.generate import COLUMNS, METRICS

    assert table and set(COLUMNS) <= set(table[0])
    for row in table:
        assert sum(float(row[g]) for g in GRADES) == pytest.approx(1.0, abs=1e-3)
        for m in METRICS:
            assert float(row[f"{m}_lo"]) <= float(row[m]) + 1e-9 <= float(row[f"{m}_hi"]) + 2e-9
        assert float(row["accuracy"]) == pytest.approx(float(row["exact"]) + float(row["entailed"]), abs=1e-3)
    assert preds and all(isinstance(p["answer"], str) and p["grade"] in GRADES for p in preds)
    assert sum(int(row["n"]) for row in table) == len(preds)


def test_the_frequency_baseline_runs_end_to_end_and_resumes(tmp_path):
    out, rows, preds, table = run(tmp_path, "frequency")
    check_tables(table, preds)
    # its answer is the most frequent training type, graded against each record
    assert len({p["answer"] for p in preds}) == 1 and preds[0]["answer"]
    for p in preds:
        assert p["grade"] == ("exact" if p["answer"] == p["answers"][0] else
                              "entailed" if p["answer"] in p["answers"] else "wrong")
    again = run(tmp_path, "frequency")[1]
    assert again == rows  # resumed: the unit files are read back, the same numbers
    from kgprobe.studies.memorization.report import observations, write_report

    report = write_report(out).read_text()
    assert "open answers" in report and "entailed" in report
    obs = observations(out)
    assert len(obs) == len(preds) and {o["exact"] + o["entailed"] for o in obs} <= {0.0, 1.0}


def test_a_tiny_causal_lm_runs_end_to_end_with_raw_answers_kept(tmp_path, tiny_gpt2_dir):
    out, rows, preds, table = run(tmp_path, str(tiny_gpt2_dir), max_new_tokens=3)
    check_tables(table, preds)
    assert all(p["prompt"].startswith("Someone Number") and p["prompt"].endswith(" is a")
               for p in preds)
    assert json.loads((out / "config.json").read_text())["answers"] == "generate"


def test_the_dry_run_writes_the_generation_prompts(tmp_path):
    from kgprobe.studies.memorization.config import MemorizationConfig
    from kgprobe.studies.registry import get_study
    from kgprobe.studies.ontology_source import OntologySource

    config = MemorizationConfig(None, tasks=["type"], templates="0", answers="generate",
                                ontology=OntologySource("file", str(tiny_ontology(tmp_path))))
    n = get_study("memorization").dry_run(config, tmp_path / "dry")
    lines = [json.loads(x) for x in (tmp_path / "dry" / "prompts.jsonl").read_text().splitlines()]
    assert n == len(lines) > 0
    assert all(x["text"].endswith(" is a") and "[MASK]" in x["extra"]["cloze"] for x in lines)


def test_the_run_asks_exactly_what_the_dry_run_writes(tmp_path, monkeypatch):
    from kgprobe.models.baselines import FrequencyModel
    from kgprobe.studies.memorization.config import MemorizationConfig
    from kgprobe.studies.registry import get_study
    from kgprobe.studies.ontology_source import OntologySource

    asked: list[str] = []
    answer = FrequencyModel.generate

    def recording(self, prompts, **kwargs):
        asked.extend(prompts)
        return answer(self, prompts, **kwargs)

    monkeypatch.setattr(FrequencyModel, "generate", recording)
    run(tmp_path, "frequency")
    config = MemorizationConfig(None, tasks=["type"], templates="0", answers="generate",
                                ontology=OntologySource("file", str(tmp_path / "tiny.ttl")))
    get_study("memorization").dry_run(config, tmp_path / "dry")
    written = [json.loads(x)["text"] for x in (tmp_path / "dry" / "prompts.jsonl").read_text().splitlines()]
    assert asked == written and asked


@pytest.mark.slow
def test_smollm2_writes_open_answers_the_ontology_grades(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from cli_run import ok

    ok(tmp_path, "study", "memorization", "--model", "smollm2-135m", "--answers", "generate",
       "--task", "TP", "--limit", "10", "--threads", "1", "--out", str(tmp_path / "G"))
    preds = [json.loads(x) for x in (tmp_path / "G" / "predictions.jsonl").read_text().splitlines()]
    with open(tmp_path / "G" / "results.csv", newline="") as fh:
        check_tables(list(csv.DictReader(fh)), preds)
    # a pretrained model names ontology terms: not every answer is unmapped
    assert any(p["grade"] != "unmapped" for p in preds)


@pytest.mark.slow
def test_a_served_model_writes_open_answers_through_completions(tmp_path):
    """A real llama.cpp server (the served-model tests' `Server`, SmolLM2's GGUF file): the
    study's answers come from its /v1/completions, one request per record."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_served_model import Server

    server = Server(tmp_path, logits_all=True)
    try:
        before = server.completions()
        out, rows, preds, table = run(tmp_path, f"openai:{server.url}#smollm2", max_new_tokens=6)
        check_tables(table, preds)
        assert server.completions() - before >= len(preds)
        assert any(p["answer"] for p in preds)  # the server's text, kept raw
    finally:
        server.stop()
