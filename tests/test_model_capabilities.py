"""Capabilities are declared once per model family and refused in one place (`models.capabilities`)."""

from __future__ import annotations

import pytest

from kgprobe.errors import ModelError
from kgprobe.models.baselines import Baseline
from kgprobe.models.capabilities import CAPABILITIES, METHODS, Declared
from kgprobe.models.loading import load_model
from kgprobe.models.prior import PriorModel
from kgprobe.models.registry import CONTROLS
from kgprobe.models.served import ServedModel

WEIGHTLESS = [*CONTROLS, "reader", "heuristic:copy-random", "heuristic:copy-wording"]


@pytest.mark.parametrize("name", WEIGHTLESS)
def test_every_weightless_model_refuses_what_it_does_not_declare_in_one_line(name):
    model = load_model(name)
    refused = set(CAPABILITIES) - model.capabilities
    assert {"distribution", "next_token", "segments", "features"} <= refused
    for capability in refused:
        for method in METHODS[capability]:
            with pytest.raises(ModelError) as err:
                getattr(model, method)([])
            line = str(err.value)
            assert "\n" not in line and f"'{name}'" in line and CAPABILITIES[capability] in line
    for capability in model.capabilities:
        assert not any(hasattr(getattr(type(model), m), "refuses") for m in METHODS[capability])


def test_each_family_names_what_to_use_instead():
    assert "language model" in str(_refused(load_model("random"), "features"))
    assert "drop test-prior" in str(_refused(load_model("test-prior"), "generate"))
    prior = PriorModel(load_model("frequency"), "prior:frequency")
    assert "use --model frequency" in str(_refused(prior, "letter_scores"))
    assert ServedModel.capabilities == {"rank", "generate"}
    assert hasattr(ServedModel.input_embeddings, "refuses")


def _refused(model, method: str) -> ModelError:
    with pytest.raises(ModelError) as err:
        getattr(model, method)([])
    return err.value


def test_a_subclass_answers_what_it_defines_and_a_declaration_needs_a_method():
    class WithFeatures(Baseline):
        def features(self, prompts, pooling=None, spans=None):
            return [0.0] * len(prompts)

    assert "features" in WithFeatures.capabilities and "features" not in Baseline.capabilities
    assert WithFeatures("x").features(["a"]) == [0.0]
    with pytest.raises(TypeError, match="inherits a refusal"):
        type("Claims", (Baseline,), {"capabilities": Baseline.capabilities | {"features"}})
    with pytest.raises(TypeError, match="names no capability"):
        type("Typo", (Declared,), {"capabilities": frozenset({"fly"})})
