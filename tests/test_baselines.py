"""Baselines are models: ``--model frequency`` and ``--model random`` load through
`load_model`, are known to the model-name check from one registry, rank like the paper's
pseudo-models, and run in every ranking study with no study-specific code."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kgprobe
from kgprobe.errors import ModelError
from kgprobe.models.baselines import Baseline, FrequencyModel, RandomModel
from kgprobe.models.registry import BASELINES
from kgprobe.models.loading import load_model
from kgprobe.models.names import check_model_name, unknown_model

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_load_model_returns_the_registered_baselines_seeded():
    for name, cls in BASELINES.items():
        model = load_model(name, seed=7)
        assert type(model) is cls and model.name == name and model.seed == 7
    from kgprobe.models.language_model import LanguageModel

    assert isinstance(load_model("random"), LanguageModel)


def test_the_name_check_knows_the_baselines_from_the_registry(monkeypatch):
    monkeypatch.setitem(BASELINES, "always-first", RandomModel)
    for name in BASELINES:
        check_model_name(name)  # no error, no hub look-up
    assert "always-first" in str(unknown_model("always-firs", "not a model"))
    assert "did you mean 'frequency'" in str(unknown_model("frequncy", "not a model"))


def test_loading_a_baseline_imports_no_torch():
    code = ("import sys; from kgprobe.models.loading import load_model; "
            "m = load_model('frequency').trained_on([['a']]); m.scorer().score(['p'], ['a', 'b']); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT.parent, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_weightless_study_with_threads_imports_no_torch(tmp_path):
    """`--threads` keeps the number for torch without importing it: a memorization run of the
    frequency baseline with every weightless control never loads torch."""
    argv = ["study", "memorization", "--ontology", "bundled", "--model", "frequency",
            "--task", "domain", "--threads", "1", "--max-memory", "0", "--out", str(tmp_path / "f")]
    code = (f"import sys; from kgprobe.cli import main; code = main({argv!r}); "
            "print(code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert out.stdout.split()[-2:] == ["0", "False"], out.stdout[-500:] + out.stderr[-2000:]
    assert (tmp_path / "f" / "results.csv").exists()


def test_threads_set_before_torch_apply_when_a_model_with_weights_loads(tiny_gpt2_dir):
    """The kept number reaches torch: imported after `set_threads` (by the load), torch runs
    on that many threads, and one set while torch is loaded applies at once."""
    code = ("import sys; from kgprobe.models.loading import load_model, set_threads; "
            "set_threads(3); assert 'torch' not in sys.modules; "
            f"load_model({str(tiny_gpt2_dir)!r}); import torch; first = torch.get_num_threads(); "
            "set_threads(2); print(first, torch.get_num_threads())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["3", "2"], out.stdout


def test_random_is_seeded_and_deterministic():
    prompts, cands = ["a [MASK] .", "b [MASK] ."], [f"c{i}" for i in range(12)]
    one = load_model("random", seed=3).scorer().score(prompts, cands)
    assert np.array_equal(one, load_model("random", seed=3).scorer().score(prompts, cands))
    assert not np.array_equal(one, load_model("random", seed=4).scorer().score(prompts, cands))
    assert not np.array_equal(one[0], one[1])  # each prompt its own order
    assert len(set(one[0])) == len(cands)  # no ties


def test_frequency_ranks_the_training_golds_by_count_on_hand_made_records():
    train = [["person", "agent"], ["place"], ["person"], ["work"], ["place"], ["person"]]
    model = load_model("frequency", seed=0).trained_on(iter(train))
    cands = ["work", "thing", "place", "agent", "person", "event"]
    row = model.scorer().score(["x [MASK] ."], cands)[0]
    order = [cands[i] for i in np.argsort(-row)]
    # person 3, place 2, then agent and work once each (agent seen first), then the unseen
    assert order[:4] == ["person", "place", "agent", "work"]
    assert set(order[4:]) == {"thing", "event"}
    # trained_on returns a fitted copy: the model it was asked of has seen nothing
    assert isinstance(model, FrequencyModel) and load_model("frequency").answers == []


def test_a_ranking_is_kept_per_candidate_list_and_handed_out_as_a_copy(monkeypatch):
    """The rankings a frequency-like baseline keeps are the ones it computes, each caller gets
    its own array, and no more than `RANKINGS_KEPT` are kept."""
    from kgprobe.models import baselines
    from kgprobe.models.general_prior import GeneralBaseline

    train = [["person", "agent"], ["place"], ["person"]]
    for cls in (baselines.FrequencyBaseline, GeneralBaseline, baselines.CopyBaseline):
        scorer = cls(train, seed=3)
        cands = ["work", "thing", "place", "agent", "person", "event"]
        first = scorer.ranking(cands)
        assert np.array_equal(first, scorer._rank(cands)), cls
        first[:] = 0  # a caller's change stays its own
        assert np.array_equal(scorer.ranking(list(cands)), scorer._rank(cands)), cls
    monkeypatch.setattr(baselines, "RANKINGS_KEPT", 3)
    scorer = baselines.FrequencyBaseline(train, seed=0)
    for n in range(10):
        assert np.array_equal(scorer.ranking([f"c{k}" for k in range(n + 2)]),
                              scorer._rank([f"c{k}" for k in range(n + 2)]))
        assert len(scorer._rankings) <= 3


def test_copy_names_a_candidate_where_the_prompt_names_it_whatever_its_letters():
    """`named_at` tests a label's first word as a substring before its regular expression: the
    answers are those of the expression alone, ASCII or not (re's case-insensitive matching
    folds the long s and the Kelvin sign, which lowering does not)."""
    import random

    from kgprobe.models.naming import PromptWords, blank_slots, mention, named_at

    words = ["sports", "team", "Sports", "TEAM", "person", "personality", "ſports", "\u212aing",
             "king", "head", "government", "headed", "[MASK]", "[X]", "<s1>", "İstanbul", "é"]
    rng = random.Random(0)
    checked = named = 0
    for _ in range(400):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) + " ."
        blank = blank_slots(text)
        found = PromptWords(blank)
        for label in ("sports team", "team", "person", "king", "sports", "istanbul", "head of government",
                      "é", "mask", ""):
            at = mention(label, blank, blanked=True)
            other = found.named_at(label)
            want = (0, at) if at is not None else None if other is None else (1, other)
            assert named_at(label, blank, found) == want, (label, text)
            checked += 1
            named += want is not None and want[0] == 0
    assert checked == 4000 and named > 200  # the expression found names, not only misses


def test_a_pretrained_model_ignores_the_training_answers(tiny_bert):
    def never():
        raise AssertionError("a pretrained model read the training answers")
        yield

    assert tiny_bert.trained_on(never()) is tiny_bert


def test_baselines_answer_letters_and_refuse_what_only_a_network_has():
    options = [{"a": "work", "b": "person", "c": "place"}]
    freq = load_model("frequency").trained_on([["person"], ["person"], ["place"]])
    scores = freq.letter_scores(["What is X? (a) work, (b) person, (c) place"], options)[0]
    assert max(scores, key=scores.get) == "b"
    rand = load_model("random", seed=1)
    q = ["What is X? (a) work, (b) person, (c) place"]
    assert rand.letter_scores(q, options) == load_model("random", seed=1).letter_scores(q, options)
    with pytest.raises(ModelError, match="random baseline"):
        rand.features([])
    with pytest.raises(ModelError, match="soft templates"):
        rand.scorer().score_tensor(["p"], ["a"])
    assert issubclass(RandomModel, Baseline) and not Baseline.caches_scores


def _rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


STUDIES = {
    "memorization": dict(task="domain", limit=3),
    "consistency": dict(rules="rdfs9", limit=2, candidates="3"),  # on the zoo ontology
    "premise-ablation": dict(rules="rdfs9", limit=2, pairs=1, templates="manual",
                             candidates="20"),
    "multiple-choice": dict(task="TP", limit=2),
}


@pytest.mark.parametrize("model", sorted(BASELINES))
@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_ranking_study_runs_a_baseline_through_model(study, model, tmp_path, monkeypatch):
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    extra = {"ontology": write_zoo(tmp_path)} if study == "consistency" else {}
    kgprobe.run(study, model=model, out=out, **STUDIES[study], **extra)
    rows = _rows(out)
    assert any(float(r.get("n") or r.get("n_derivations") or 0) > 0 for r in rows), rows
    assert not (tmp_path / "cache" / "scores.sqlite").exists()  # baselines keep no cache


def test_multiple_choice_text_answers_with_a_baseline(tmp_path):
    out = tmp_path / "mc"
    kgprobe.run("multiple-choice", model="frequency", out=out, task="TP", limit=3, answer="text")
    (row,) = _rows(out)
    assert row["answer"] == "text" and row["n"] == "3"
