"""One request stream per study: the prompts a run scores are the prompts its dry run writes.

Each test runs a study through the command line with a recording model — the tiny model of
tests/conftest.py, loaded through the normal ``--model`` path, whose scorers note every
(text, candidates) they are asked before scoring it — and compares what was asked with the
dry run's ``prompts.jsonl`` of the same settings, line for line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.studies.dry_run import PROMPTS_FILE


class Recording:
    """A scorer that notes what it is asked, then lets the real one score it."""

    def __init__(self, inner, asked: list):
        self._inner, self._asked = inner, asked

    def score(self, prompts, candidates, *args, **kwargs):
        self._asked.extend((p, tuple(candidates)) for p in prompts)
        return self._inner.score(prompts, candidates, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.fixture
def recording(monkeypatch):
    """The (text, candidates) every scorer of a loaded model is asked, in order; the study
    loads its model as always (`models.loading.load_model`), unaware of the recording."""
    import kgprobe.models.loading as loading

    real, asked = loading.load_model, []

    def load_model(*args, **kwargs):
        loaded = real(*args, **kwargs)
        make = loaded.scorer
        loaded.scorer = lambda *a, **k: Recording(make(*a, **k), asked)
        return loaded

    monkeypatch.setattr(loading, "load_model", load_model)
    return asked


def dry_prompts(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / PROMPTS_FILE).read_text().splitlines()]


def run_and_dry(tmp_path: Path, study: str, model: str, *args: str) -> tuple[list[dict], Path]:
    """The dry run's prompts and the run's folder, both of `study` with `args`."""
    dry, run = tmp_path / "dry", tmp_path / "run"
    assert main(["study", study, *args, "--dry-run", "--out", str(dry)]) == 0
    assert main(["study", study, *args, "--model", model, "--no-cache", "--threads", "1",
                 "--out", str(run)]) == 0
    return dry_prompts(dry), run


def assert_asked_line_for_line(asked: list, prompts: list[dict]) -> None:
    """Every scored (text, candidates) is the dry run's line at the same place: its text, its
    number of candidates, and its golds among the candidates."""
    assert len(asked) == len(prompts)
    for (text, cands), row in zip(asked, prompts):
        assert text == row["text"]
        assert len(cands) == row["n_candidates"]
        assert set(row["golds"]) & set(cands), (row["golds"], text)


# --------------------------------------------------------------------------- memorization

# `--controls none`: the model's requests alone, line for line (the controls ask the very
# same requests again: tests/test_mem_controls.py)
MEMORIZATION = {
    "default": ["--task", "type", "--limit", "3", "--controls", "none"],
    "K": ["--task", "subClassOf", "--limit", "3", "--candidates", "5", "--template", "1",
          "--controls", "none"],
    "paper": ["--protocol", "paper", "--task", "subClassOf", "--limit", "3", "--template", "0",
              "--controls", "none"],
}


@pytest.mark.parametrize("setting", sorted(MEMORIZATION))
def test_memorization_scores_what_its_dry_run_writes(tmp_path, tiny_bert_dir, recording, setting):
    prompts, run = run_and_dry(tmp_path, "memorization", str(tiny_bert_dir), *MEMORIZATION[setting])
    assert_asked_line_for_line(recording, prompts)
    # the predictions are of the same records, with the dry run's golds
    preds = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert [p["prompt"] for p in preds] == [r["text"] for r in prompts]
    assert [list(p["answers"]) for p in preds] == [r["golds"] for r in prompts]


SPANISH = """\
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix ex: <http://example.org/es/> .
ex:Cancer a owl:Class ; rdfs:label "cancer"@en, "cáncer"@es .
ex:Carcinoma a owl:Class ; rdfs:subClassOf ex:Cancer ; rdfs:label "carcinoma"@en, "carcinoma"@es .
ex:Adeno a owl:Class ; rdfs:subClassOf ex:Carcinoma ;
    rdfs:label "stomach adenocarcinoma"@en, "adenocarcinoma estomacal"@es .
ex:Sarcoma a owl:Class ; rdfs:subClassOf ex:Cancer ; rdfs:label "sarcoma"@en, "sarcoma"@es .
ex:Osteo a owl:Class ; rdfs:subClassOf ex:Sarcoma ; rdfs:label "osteosarcoma"@en, "osteosarcoma"@es .
ex:Lipo a owl:Class ; rdfs:subClassOf ex:Sarcoma ; rdfs:label "liposarcoma"@en, "liposarcoma"@es .
ex:Melanoma a owl:Class ; rdfs:subClassOf ex:Cancer ; rdfs:label "melanoma"@en, "melanoma"@es .
"""


@pytest.fixture
def spanish_probes(tmp_path):
    """A memorizing probe set generated in Spanish from a tiny ontology."""
    onto, store, probes = tmp_path / "onto.ttl", tmp_path / "store", tmp_path / "probes"
    onto.write_text(SPANISH, encoding="utf-8")
    assert main(["kg", "load", str(onto), "--store", str(store)]) == 0
    assert main(["generate", "memorizing", "--store", str(store), "--lang", "es",
                 "--split-sizes", "1,1", "--out", str(probes)]) == 0
    return probes


def test_spanish_probes_are_asked_and_dry_run_in_spanish(tmp_path, tiny_bert_dir, recording,
                                                         spanish_probes):
    args = ["--probes", str(spanish_probes), "--task", "subClassOf", "--template", "0",
            "--controls", "none"]
    prompts, _ = run_and_dry(tmp_path / "model", "memorization", str(tiny_bert_dir), *args)
    assert_asked_line_for_line(recording, prompts)
    assert "Adenocarcinoma estomacal es un tipo de [MASK] ." in [r["text"] for r in prompts]
    # a baseline run scores the same Spanish prompts (its predictions say what it asked)
    prompts, run = run_and_dry(tmp_path / "random", "memorization", "random", *args)
    preds = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert [p["prompt"] for p in preds] == [r["text"] for r in prompts]
    assert not any(" is a " in r["text"] for r in prompts)


# --------------------------------------------------------------------------- premise ablation

ABLATION = {
    "default": ["--rules", "rdfs9", "--limit", "2", "--pairs", "2", "--templates", "manual"],
    "K": ["--rules", "rdfs11", "--limit", "2", "--templates", "manual", "--candidates", "6"],
    "depth": ["--rules", "rdfs11", "--limit", "2", "--templates", "manual", "--depth", "2",
              "--distractors", "0,1"],
    "paper": ["--protocol", "paper", "--rules", "rdfs9", "--limit", "2", "--pairs", "2",
              "--templates", "manual"],
    "counterfactual": ["--rules", "rdfs9", "--limit", "2", "--templates", "manual",
                       "--premises", "true,counterfactual", "--candidates", "6"],
}


#: The weightless controls only: the model's content-free prior (on by default for a language
#: model) asks the same model other texts, which its own dry run does not write.
NO_PRIOR = ["--controls", "frequency,copy,random,general,test-prior"]


@pytest.mark.parametrize("setting", sorted(ABLATION))
def test_premise_ablation_asks_only_what_its_dry_run_writes(tmp_path, tiny_bert_dir, recording,
                                                            setting):
    """Which cells an item lands in depends on the model's answers, so the dry run writes every
    premise probe and every reasoning prompt under each way of writing the premises: the run
    asks nothing else, asks every premise probe, every prompt with both premises written and
    every chained prompt (what no answer of the model decides)."""
    prompts, _ = run_and_dry(tmp_path, "premise-ablation", str(tiny_bert_dir), *ABLATION[setting],
                             *NO_PRIOR)
    written = {(r["text"], r["n_candidates"]) for r in prompts}
    asked = {(text, len(cands)) for text, cands in recording}
    assert asked <= written, sorted(asked - written)[:3]
    fixed = [r for r in prompts if r["extra"]["kind"] in ("premise probe", "chain")
             or (r["extra"]["kind"] == "reasoning" and r["p1"] and r["p2"])]
    assert fixed and {(r["text"], r["n_candidates"]) for r in fixed} <= asked
    if setting == "depth":
        assert any(r["extra"]["kind"] == "chain" for r in prompts)
    if setting == "counterfactual":  # asked with P1 naming the false term, both written
        false = [r for r in fixed if r["extra"].get("premises") == "counterfactual"]
        assert false and {(r["text"], r["n_candidates"]) for r in false} <= asked
    # every asked prompt ranks one of the dry run's golds for its text (the text with no
    # premise written is one text for many items)
    golds: dict[str, list[set]] = {}
    for r in prompts:
        golds.setdefault(r["text"], []).append(set(r["golds"]))
    bad = [text for text, cands in recording if not any(g & set(cands) for g in golds[text])]
    assert not bad, bad[:3]


# --------------------------------------------------------------------------- lm-eval export

def export_docs(out: Path, *args: str) -> list[dict]:
    assert main(["export", "lm-eval", "--out", str(out), *args]) == 0
    return [json.loads(line) for path in sorted(out.glob("kgprobe_*_*.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.mark.parametrize("protocol", ["default", "paper"])
def test_lm_eval_export_converts_the_memorization_runs_requests(tmp_path, tiny_bert_dir,
                                                                recording, protocol):
    """Each exported document is the request the run asked at that place: its context and
    suffix around the slot are the prompt, its choices the very candidates (same seeded
    distractors), its targets the golds among them."""
    study = ["--protocol", protocol, "--task", "subClassOf", "--template", "0", "--limit", "4",
             "--candidates", "6"]
    prompts, _ = run_and_dry(tmp_path, "memorization", str(tiny_bert_dir), *study,
                             "--controls", "none")
    docs = export_docs(tmp_path / "lm-eval", "--studies", "memorizing", "--protocol", protocol,
                       "--task", "subClassOf", "--template", "0", "--limit", "4",
                       "--candidates", "6")
    assert len(docs) == len(recording) == len(prompts) == 4
    for doc, (text, cands), row in zip(docs, recording, prompts):
        assert doc["text"] + "[MASK]" + doc["suffix"] == text == row["text"]
        assert doc["choices"] == list(cands)
        assert all(c.startswith(choice) for c, choice in zip(doc["continuations"], cands))
        assert sorted({doc["choices"][g] for g in doc["gold"]}) == sorted(set(row["golds"]) & set(cands))


def test_lm_eval_reasoning_export_is_the_dry_runs_written_premises(tmp_path):
    """The reasoning export's documents are the premise-ablation dry run's prompts with both
    premises written (pseudowords as the letters X and Y), ranked among as many candidates."""
    from kgprobe.prompts.lm_eval_tasks import with_letters

    dry = tmp_path / "dry"
    assert main(["study", "premise-ablation", "--dry-run", "--rules", "rdfs11", "--limit", "3",
                 "--candidates", "6", "--out", str(dry)]) == 0
    both = {(with_letters(r["text"]), r["n_candidates"]) for r in dry_prompts(dry)
            if r["extra"]["kind"] == "reasoning" and r["p1"] and r["p2"]}
    docs = export_docs(tmp_path / "lm-eval", "--studies", "reasoning", "--rules", "rdfs11",
                       "--limit", "3", "--candidates", "6")
    assert len(docs) == 3
    assert {(d["text"] + "[MASK]" + d["suffix"], len(d["choices"])) for d in docs} <= both
