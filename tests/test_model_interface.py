"""Studies talk to the `LanguageModel` interface, never to the model's kind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kgprobe.models.registry import BASELINES
from kgprobe.models.causal_lm import CausalLM
from kgprobe.models.language_model import LanguageModel
from kgprobe.models.masked_lm import MaskedLM

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"masked", "causal"}


def _kind_branches(source: str) -> list[int]:
    """Lines comparing something's ``.kind`` (``==``, ``!=``, ``in``) or a "masked"/"causal" literal."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides) or any(
                    isinstance(s, ast.Constant) and s.value in KINDS for s in sides):
                lines.append(node.lineno)
    return lines


def test_the_check_finds_a_kind_branch():
    assert _kind_branches('if loaded.kind == "masked":\n    pass\n') == [1]
    assert _kind_branches('x = "sum" if kind != "causal" else "mean"\n') == [1]
    assert _kind_branches('fingerprint = {"kind": model.kind}\n') == []


def test_no_study_branches_on_the_model_kind():
    hits = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / "studies").rglob("*.py"))
            for line in _kind_branches(p.read_text(encoding="utf-8"))]
    assert not hits, hits


@pytest.mark.parametrize("cls", [MaskedLM, CausalLM])
def test_implementations_fill_the_whole_interface(cls):
    assert issubclass(cls, LanguageModel) and not cls.__abstractmethods__
    for attr in ("kind", "fills_masks", "answers_next_token", "default_pooling", "feature_pooling",
                 "pseudoword_anchor", "auto_class"):
        assert hasattr(cls, attr), attr


def test_loaded_models_answer_by_capability(tiny_bert, tiny_gpt2):
    assert isinstance(tiny_bert, MaskedLM) and isinstance(tiny_gpt2, CausalLM)
    assert (tiny_bert.fills_masks, tiny_gpt2.fills_masks) == (True, False)
    assert (tiny_bert.default_pooling, tiny_gpt2.default_pooling) == ("mean", "sum")
    assert (tiny_bert.feature_pooling, tiny_gpt2.feature_pooling) == ("first", "last")
    assert tiny_gpt2.next_token_logits([[1, 2, 3]]).shape[0] == 1


def test_no_study_names_a_baseline():
    """A study asks ``--model``'s interface, never whether it is a baseline: the registry
    (`models.registry.BASELINES`) is defined once, and no study or command compares the
    model's name with a baseline's."""
    names = re.compile(r"""model\s*(==|!=|\bin\b|\bnot in\b)\s*(["'](frequency|random)["']|\(?["']?BASELINES)""")
    hits, definitions = [], []
    for p in sorted(ROOT.rglob("*.py")):
        parts = p.relative_to(ROOT).parts
        if "tests" in parts or any(part.startswith(".") for part in parts):
            continue  # the tests, and virtual environments (.venv) inside the checkout
        text = p.read_text(encoding="utf-8")
        definitions += [str(p.relative_to(ROOT)) for line in text.splitlines()
                        if re.match(r"\s*BASELINES\s*[:=]", line)]
        if p.relative_to(ROOT).parts[0] in ("studies", "cli"):
            hits += [f"{p.relative_to(ROOT)}: {m.group(0)}" for m in names.finditer(text)]
    assert definitions == ["models/registry.py"], definitions
    assert not hits, hits
    assert names.search('if config.model in BASELINES:') and names.search('model == "random"')


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baselines_answer_every_interface_call(name):
    """A baseline has every public method and class attribute of `LanguageModel`, so a study
    that calls one on any model needs no check first (what a baseline cannot do is a
    `ModelError`, tested in test_baselines.py)."""
    cls = BASELINES[name]
    public = {a for a in dir(LanguageModel) if not a.startswith("_")}
    has = set(dir(cls(name))) | {"auto_class"}  # no transformers class reads its weights
    assert public <= has, public - has
    for attr in ("kind", "fills_masks", "answers_next_token", "default_pooling", "feature_pooling",
                 "pseudoword_anchor"):
        assert hasattr(cls, attr), attr
    assert issubclass(cls, LanguageModel)  # registered as a virtual subclass
