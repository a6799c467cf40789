"""`kgprobe probe multiple-choice`: the paper's 20-option questions as a resumable study."""

from __future__ import annotations

import csv
import json

import pytest

from kgprobe.cli import main
from kgprobe.studies.multiple_choice.study import COLUMNS, calibrated, choose, find_sets, letter_bias


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_bundled_sets_are_the_papers():
    sets = find_sets()
    memorizing = {q.task: q for q in sets if q.set == "memorizing"}
    assert list(memorizing) == ["type", "subClassOf", "subPropertyOf", "domain", "range"]
    # §5.1: 500 sampled test cases for TP and SCO, the whole test sets for the others.
    n = {t: sum(1 for line in q.path.read_text().splitlines() if line.strip()) for t, q in memorizing.items()}
    assert n["type"] == n["subClassOf"] == 500 and n["subPropertyOf"] == 39
    reasoning = [(q.task, q.p1) for q in sets if q.set == "reasoning"]
    assert len(reasoning) == 18 and reasoning[:3] == [("rdfs2", "not given"), ("rdfs2", "implicit"),
                                                      ("rdfs2", "explicit")]
    assert reasoning[-1] == ("rdfs11", "explicit")  # rules in numeric order, not string order
    assert [(q.task, q.p1) for q in choose(sets, "TP,rdfs9-12")] == [("type", "-"), ("rdfs9", "implicit")]
    assert len(choose(sets, "rdfs7")) == 3 and len(choose(sets, "memorizing")) == 5


def test_letter_bias():
    assert letter_bias(["a", "b", "a", "a"]) == ("a", 0.75)
    assert letter_bias([]) == ("-", 0.0)


def test_calibration_removes_a_letter_preference():
    # Every question prefers (a) by 5 nats; underneath, the gold letter gets +1.
    golds = ["b", "c", "a", "b"]
    scores = [{l: (5.0 if l == "a" else 0.0) + (1.0 if l == g else 0.0) for l in "abc"} for g in golds]
    assert [max(r, key=r.get) for r in scores] == ["a"] * 4
    assert calibrated(scores) == golds
    # A letter offered by only some questions is corrected by its own mean.
    assert calibrated([{"a": -1.0, "b": -2.0}, {"a": -1.5, "b": -3.0, "c": -0.5}]) == ["b", "c"]


@pytest.fixture()
def small_data(tmp_path):
    """Three questions of the paper's TP set and of rdfs9-22, in the bundled layout."""
    root = tmp_path / "mc"
    for sub, name in (("memorizing", "type"), ("reasoning", "rdfs9-22")):
        (root / sub).mkdir(parents=True)
        lines = (find_sets()[0].path.parent.parent / sub / f"{name}.jsonl").read_text().splitlines()[:3]
        (root / sub / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_cli_writes_accuracy_predictions_and_resumes(tiny_llama_dir, tiny_llama, small_data, tmp_path, capsys):
    from kgprobe.prompts.multiple_choice import load_multiple_choice, score_multiple_choice

    out = tmp_path / "out"
    args = ["probe", "multiple-choice", "--model", str(tiny_llama_dir), "--data", str(small_data),
            "--limit", "2", "--threads", "1", "--out", str(out)]
    assert main(args) == 0
    assert "chance: 5.0%" in capsys.readouterr().out
    rows = read_rows(out / "results.csv")
    # the model's columns, then its default controls' (copy is not run for letter answers)
    from kgprobe.studies.controls import control_columns

    assert list(rows[0]) == COLUMNS + control_columns(("frequency", "random"), ("accuracy",))
    assert [(r["set"], r["task"], r["p1"], r["answer"], r["n"]) for r in rows] == [
        ("memorizing", "type", "-", "letter", "2"), ("reasoning", "rdfs9", "explicit", "letter", "2")]
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 4
    for row in rows:
        mine = [p for p in preds if p["task"] == row["task"]]
        assert float(row["accuracy"]) == pytest.approx(
            sum(p["predicted"] == p["gold"] for p in mine) / len(mine), abs=1e-4)
        assert [p["calibrated"] for p in mine] == calibrated([p["scores"] for p in mine])
        assert all(len(p["scores"]) == 20 and p["predicted"] == max(p["scores"], key=p["scores"].get)
                   for p in mine)
    # The same numbers as the scoring function called directly.
    prompts, golds = load_multiple_choice(small_data / "memorizing" / "type.jsonl")
    direct = score_multiple_choice(tiny_llama, prompts[:2], golds[:2])
    assert [p["predicted"] for p in preds[:2]] == direct.predictions

    # A rerun finds every unit finished and leaves the files alone.
    stamps = {p: p.stat().st_mtime_ns for p in (out / "units").iterdir()}
    assert main(args) == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "units").iterdir()} == stamps
    # Another instruction would change every number: the folder is pinned to its settings.
    assert main([*args, "--instruction", "Answer:"]) == 2
    assert "other settings (instruction)" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (out / "units").iterdir()} == stamps


@pytest.fixture()
def short_data(tmp_path):
    """Questions short enough for the tiny BERT's 64 positions."""
    root = tmp_path / "short"
    (root / "reasoning").mkdir(parents=True)
    records = [{"prompt": "X is a cat. What is X? (a) dog, (b) animal, (c) car", "gold": "(b) animal"},
               {"prompt": "X is a rose. What is X? (a) flower, (b) stone, (c) red wine", "gold": "(a) flower"},
               {"prompt": "What is Paris? (a) a city, (b) a river, (c) a sport", "gold": "(a) a city"}]
    (root / "reasoning" / "rdfs9-22.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_llama"])
def test_text_answers_rank_the_option_texts(model, request, short_data, tmp_path):
    from kgprobe.prompts.multiple_choice import load_multiple_choice, split_question
    from kgprobe.models.scoring import make_scorer
    from kgprobe.studies.multiple_choice.study import run_multiple_choice

    loaded = request.getfixturevalue(model)
    model_dir = request.getfixturevalue(f"{model}_dir")
    out = tmp_path / "out"
    rows = run_multiple_choice(str(model_dir), out, tasks="rdfs9-22", data=short_data,
                               answer="text", progress=False)
    assert rows[0]["answer"] == "text" and rows[0]["calibrated_accuracy"] == "-" and rows[0]["n"] == 3
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    prompts, golds = load_multiple_choice(short_data / "reasoning" / "rdfs9-22.jsonl")
    scorer = make_scorer(loaded)
    for pred, question, gold in zip(preds, prompts, golds):
        stem, options = split_question(question)
        assert len(options) == 3 and gold == f"({pred['gold']}) {options[pred['gold']]}"
        assert stem.endswith("?") and "(a)" not in stem
        direct = scorer.score([stem + "\nAnswer: [MASK]"], list(options.values()))[0]
        assert list(pred["scores"].values()) == pytest.approx(list(direct), abs=1e-3)
        assert pred["predicted"] == max(pred["scores"], key=pred["scores"].get)
    assert rows[0]["accuracy"] == pytest.approx(sum(p["predicted"] == p["gold"] for p in preds) / 3)


def test_cli_errors_are_one_line(tiny_bert_dir, tiny_llama_dir, tiny_gpt2_dir, small_data,
                                 tmp_path, capsys):
    def fails(*extra, out=tmp_path / "never"):
        code = main(["probe", "multiple-choice", "--out", str(out), *extra])
        err = capsys.readouterr().err.strip().splitlines()[-1]  # after transformers' loading bar
        assert code == 2 and err.startswith("kgprobe: error:")
        assert not (out / "results.csv").exists()
        return err

    assert "--answer text" in fails("--model", str(tiny_bert_dir), "--data", str(small_data))
    # A question longer than the tiny BERT's 64 positions: said, not a crash.
    long = tmp_path / "long"
    (long / "memorizing").mkdir(parents=True)
    (long / "memorizing" / "type.jsonl").write_text(json.dumps(
        {"prompt": "Is " + "very " * 80 + "long? (a) yes, (b) no", "gold": "(a) yes"}) + "\n")
    assert "at most 64" in fails("--model", str(tiny_bert_dir), "--data", str(long), "--answer", "text")
    # and longer than the tiny GPT-2's 512 learned positions, as a letter question: the same
    longer = tmp_path / "longer"
    (longer / "memorizing").mkdir(parents=True)
    (longer / "memorizing" / "type.jsonl").write_text(json.dumps(
        {"prompt": "Is " + "very " * 600 + "long? (a) yes, (b) no", "gold": "(a) yes"}) + "\n")
    assert "at most 512" in fails("--model", str(tiny_gpt2_dir), "--data", str(longer),
                                  out=tmp_path / "never-gpt2")
    assert "rdfs99" in fails("--model", str(tiny_llama_dir), "--task", "rdfs99")
    assert "--threads" in fails("--model", str(tiny_llama_dir), "--threads", "0")
    (small_data / "reasoning" / "rdfs9-33.jsonl").write_text("")
    assert "rename" in fails("--model", str(tiny_llama_dir), "--data", str(small_data))
