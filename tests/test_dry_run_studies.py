"""`--dry-run` on multiple-choice, COPEN and STA: prompts.jsonl without loading a model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kgprobe.cli import main
from kgprobe.studies.dry_run import PROMPTS_FILE


def _sibling(name: str):
    """A test module beside this one (pytest runs with --import-mode=importlib: no sys.path)."""
    spec = importlib.util.spec_from_file_location(f"_dry_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


official_fixture = _sibling("test_copen").official_fixture
_sta = _sibling("test_sta")
HEADER, ROWS, VOCAB = _sta.HEADER, _sta.ROWS, _sta.VOCAB

FIELDS = {"study", "text", "golds", "n_candidates", "task", "rule", "template"}


@pytest.fixture
def no_model(monkeypatch):
    """Any model load fails the test."""
    import kgprobe.models.loading as loading

    def refuse(*args, **kwargs):
        raise AssertionError("--dry-run loaded a model")

    monkeypatch.setattr(loading, "load_model", refuse)


def read_prompts(out):
    rows = [json.loads(line) for line in (out / PROMPTS_FILE).read_text().splitlines()]
    assert rows and all(FIELDS <= set(r) for r in rows)
    return rows


def test_multiple_choice_dry_run(no_model, tmp_path, capsys):
    out = tmp_path / "mc"
    assert main(["study", "multiple-choice", "--dry-run", "--task", "type,rdfs9-22",
                 "--limit", "3", "--out", str(out)]) == 0
    rows = read_prompts(out)
    assert len(rows) == 6 and {r["study"] for r in rows} == {"multiple-choice"}
    assert [r["task"] for r in rows[:3]] == ["type"] * 3 and {r["rule"] for r in rows[3:]} == {"rdfs9"}
    for r in rows:
        assert r["text"].endswith("Answer: (") and r["template"] == "letter"
        assert r["n_candidates"] == 20 and len(r["golds"]) == 1
        assert f"({r['golds'][0]}) " in r["text"]  # the gold letter is one of the options
    assert not (out / "results.csv").exists()
    # --answer text: the option list is left out, the gold option's text fills the slot
    assert main(["study", "multiple-choice", "--dry-run", "--answer", "text", "--task", "type",
                 "--limit", "2", "--out", str(out)]) == 0
    for r in read_prompts(out):
        assert r["text"].endswith("Answer: [MASK]") and "(a)" not in r["text"]
        assert r["golds"][0] in r["extra"]["gold"]
    # without --dry-run the model is required: one line, exit 2
    assert main(["study", "multiple-choice", "--out", str(tmp_path / "x")]) == 2
    assert "--model" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["zero-shot", "linear"])
def test_copen_dry_run(no_model, tmp_path, method):
    data = official_fixture(tmp_path / "copen")
    out = tmp_path / "out"
    assert main(["study", "copen", "--dry-run", "--method", method, "--data", str(data),
                 "--out", str(out)]) == 0
    rows = read_prompts(out)
    assert sorted(p.name for p in out.iterdir()) == [PROMPTS_FILE]
    by_task = {t: [r for r in rows if r["task"] == t] for t in ("csj", "cpj", "cic")}
    # CSJ: one prompt per candidate (4) of each of the 7 test items
    test_csj = [r for r in by_task["csj"] if r["extra"]["split"] == "test"]
    assert len(test_csj) == 7 * 4 and all(r["n_candidates"] == 4 for r in test_csj)
    assert all("is conceptually similar with" in r["text"] for r in test_csj)
    labelled = [r for r in test_csj if r["golds"]]
    assert labelled and all(r["golds"][0] in {"paris", "berlin", "france", "germany", "person",
                                                "animal", "agent", "work", "place", "event",
                                                "fruit", "player"} for r in labelled)
    if method == "zero-shot":
        # CPJ: the statement with "true" and with "false"; CiC: in and out of context
        assert {r["extra"]["answer"] for r in by_task["cpj"]} == {"true", "false"}
        assert any(r["extra"].get("context") is False for r in by_task["cic"])
        assert {r["extra"]["split"] for r in rows} == {"test"}
    else:
        assert {r["extra"]["split"] for r in rows} == {"train", "dev", "test"}


def test_sta_dry_run(no_model, tmp_path):
    norms = tmp_path / "mcrae"
    norms.mkdir()
    lines = [HEADER] + [f"{c}\t{f}\tx\t{label}\t{pf}\t{ph}" for c, f, label, pf, ph in ROWS]
    (norms / "CONCS_FEATS_concstats_brm.txt").write_text("\n".join(lines) + "\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    out = tmp_path / "out"
    assert main(["study", "sta", "--dry-run", "--norms", str(norms), "--vocab-file", str(vocab),
                 "--conditions", "top-dec", "--out", str(out)]) == 0
    rows = read_prompts(out)
    retrieval = [r for r in rows if r["task"] == "retrieval"]
    elicitation = [r for r in rows if r["task"] == "elicitation"]
    assert retrieval and elicitation
    for r in retrieval:
        assert r["text"].startswith("A [MASK] ") and r["golds"][0] in VOCAB
        assert r["golds"][0] not in ("animal", "zebra")  # vowel-initial / outside the vocabulary
    # person has 7 top-dec properties: prompts with 1…7 of them
    person = [r for r in retrieval if r["golds"] == ["person"]]
    assert sorted(r["extra"]["n_properties"] for r in person) == list(range(1, 8))
    assert all("[MASK]" in r["text"] and r["golds"] for r in elicitation)
