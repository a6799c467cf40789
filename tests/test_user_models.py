"""User models (``--model module:Class``, the ``kgprobe.models`` entry points) and which
controls a run scores by default. Tiny scorers written here; nothing downloads."""

from __future__ import annotations

import csv
import importlib.metadata
import json
import sys
import textwrap

import kgprobe
import numpy as np
import pytest
from kgprobe.errors import ModelError
from kgprobe.models import user_models
from kgprobe.models.loading import load_model
from kgprobe.models.names import check_model_name, is_control_model, is_language_model
from kgprobe.studies.controls import (
    RANKING_ONLY,
    WEIGHTLESS,
    control_model,
    default_controls,
    parse_controls,
)

#: docs/user-models.md's example, as a reader copies it.
SCORER = textwrap.dedent('''
    import numpy as np
    from kgprobe.models.baselines import Baseline


    class ShortestFirst:
        name = "shortest"

        def score(self, prompts, candidates, *, pseudowords=None, batch_size=32):
            row = -np.array([len(c) for c in candidates], dtype=float)
            return np.tile(row, (len(prompts), 1))


    class Shortest(Baseline):
        """Ranks the shortest candidate label first, whatever the prompt says."""

        def scorer(self, **settings):
            return ShortestFirst()


    class Declared(Shortest):
        control = True


    def not_a_class():
        return None
''')


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module ``h46_user_scorer`` in tmp_path, on sys.path for this test only."""
    (tmp_path / "h46_user_scorer.py").write_text(SCORER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "h46_user_scorer", raising=False)
    yield "h46_user_scorer"
    sys.modules.pop("h46_user_scorer", None)


@pytest.fixture
def no_entry_points():
    user_models._entry_points.cache_clear()
    yield
    user_models._entry_points.cache_clear()


def test_a_module_class_model_loads_ranks_and_is_no_control(user_module):
    name = f"{user_module}:Shortest"
    check_model_name(name)
    model = load_model(name, seed=3)
    assert model.name == name and model.seed == 3
    row = model.trained_on([["x"]]).scorer().score(["[X] is a [MASK] ."], ["animal", "dog", "thing"])[0]
    assert [["animal", "dog", "thing"][i] for i in np.argsort(-row, kind="stable")] == \
        ["dog", "thing", "animal"]
    assert not is_control_model(name) and not is_language_model(name)
    assert is_control_model(f"{user_module}:Declared")  # control = True declares one
    # a user model gets the weightless controls by default; its prior only when asked
    assert parse_controls(None, name) == WEIGHTLESS
    assert control_model("prior", name) == f"prior:{name}"


def test_a_file_in_the_current_directory_counts(tmp_path, monkeypatch):
    (tmp_path / "h46_cwd_scorer.py").write_text(SCORER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "h46_cwd_scorer", raising=False)
    check_model_name("h46_cwd_scorer:Shortest")
    assert type(load_model("h46_cwd_scorer:Shortest")).__name__ == "Shortest"


def test_a_study_runs_a_user_model_and_claims_from_it(user_module, tmp_path):
    out = tmp_path / "mem"
    kgprobe.run("memorization", model=f"{user_module}:Shortest", out=out, task="domain",
                limit=2, candidates="5")
    config = json.loads((out / "config.json").read_text())
    assert config["model"] == f"{user_module}:Shortest"
    with open(out / "results.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and int(rows[0]["n"]) == 2
    # every default control scored beside it, prior not (a user model is no language model)
    assert all(rows[0][f"MRR_{c}"] != "" for c in WEIGHTLESS)
    assert not any(k.startswith("MRR_prior") for k in rows[0])


def test_an_entry_point_names_a_model(user_module, monkeypatch, no_entry_points):
    points = [importlib.metadata.EntryPoint(name=n, group=user_models.ENTRY_POINTS,
                                            value=f"{user_module}:Shortest")
              for n in ("shortest-first", "frequency")]
    asked = []

    def entry_points(*, group=None):
        asked.append(group)
        return points if group == user_models.ENTRY_POINTS else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    check_model_name("shortest-first")
    assert type(load_model("shortest-first")).__name__ == "Shortest"
    assert asked and set(asked) == {user_models.ENTRY_POINTS}
    assert not is_language_model("shortest-first") and not is_control_model("shortest-first")
    # the built-in names win over an entry point of the same name
    assert type(load_model("frequency")).__name__ == "FrequencyModel"
    assert is_control_model("frequency")


@pytest.mark.parametrize("name, says", [
    ("h46_no_such_module:Model", "no module named h46_no_such_module"),
    ("{m}:Missing", "has no Missing"),
    ("{m}:not_a_class", "not a model class"),
    ("{m}:ShortestFirst", "not a model class"),
])
def test_bad_user_model_names_are_one_line_and_exit_2(name, says, user_module, tmp_path,
                                                      capsys):
    from kgprobe.cli import main

    name = name.format(m=user_module)
    with pytest.raises(ModelError, match=says):
        check_model_name(name)
    capsys.readouterr()
    code = main(["study", "memorization", "--model", name, "--task", "domain",
                 "--out", str(tmp_path / "out")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, lines
    assert name in lines[0] and says in lines[0]


def test_a_module_that_fails_to_import_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "h46_broken.py").write_text("import h46_missing_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModelError, match="install h46_missing_dependency"):
        check_model_name("h46_broken:Model")
    (tmp_path / "h46_raises.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    with pytest.raises(ModelError, match="RuntimeError: boom"):
        check_model_name("h46_raises:Model")


def test_prefixed_names_are_never_user_models(no_entry_points):
    for name in ("openai:http://localhost:8000/v1#m", "prior:smollm2-135m", "reader:Q",
                 "heuristic:copy-random", "HuggingFaceTB/SmolLM2-135M", "model.gguf",
                 "./models/x", "gpt2"):
        assert user_models.user_model_spec(name) is None, name
    assert user_models.user_model_spec("pkg.mod:Cls.Inner") == ("pkg.mod", "Cls.Inner")


def test_prior_is_on_by_default_only_where_a_language_model_loads(no_entry_points):
    language_models = ("smollm2-135m", "gemma3-270m", "gpt2", "HuggingFaceTB/SmolLM2-135M",
                       "some/model.gguf", "openai:http://localhost:8000/v1#m")
    others = ("frequency", "copy", "random", "general", "test-prior", "prior:gpt2",
              "reader:Q", "heuristic:copy-random", "pkg.mod:Cls", None)
    for name in language_models:
        assert default_controls(name) == (*WEIGHTLESS, "prior"), name
        assert parse_controls(None, name) == default_controls(name)
    for name in others:
        assert default_controls(name) == WEIGHTLESS, name
    # open answers: no ranking-only control by default
    assert not set(RANKING_ONLY) & set(default_controls("gpt2", ranking=False))
    assert "general" in default_controls("gpt2", ranking=False)
