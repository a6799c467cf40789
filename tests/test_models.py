"""Model loading: local directories, kinds, one-line errors, GGUF presets (slow)."""

from __future__ import annotations

import time

import pytest
import torch

from kgprobe.errors import KgprobeError, ModelError
from kgprobe.models import gguf
from kgprobe.models import gguf
from kgprobe.models import loading as models_mod
from kgprobe.models.language_model import LanguageModel
from kgprobe.models.loading import PRESETS, load_model, resolve_device


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert text and "\n" not in text
    return text


def test_load_local_directories(tiny_bert, tiny_gpt2, tiny_bert_dir):
    assert isinstance(tiny_bert, LanguageModel)
    assert tiny_bert.kind == "masked" and tiny_gpt2.kind == "causal"
    assert tiny_bert.device == "cpu" and not tiny_bert.model.training
    assert tiny_bert.tokenizer.mask_token == "[MASK]"
    assert tiny_gpt2.tokenizer.pad_token_id is not None
    again = load_model(str(tiny_bert_dir), kind="masked")
    assert again.source == str(tiny_bert_dir) and again.info["converted"] is False


def test_unknown_model_lists_presets(tmp_path):
    for name in ["no-such-model-anywhere", str(tmp_path / "missing"), "./nope", "a/b/c"]:
        with pytest.raises(ModelError) as err:
            load_model(name, local_files_only=True)
        text = _one_line(err.value)
        assert all(preset in text for preset in PRESETS)
    with pytest.raises(ModelError) as err:
        load_model(str(tmp_path / "x.gguf"))
    assert "does not exist" in _one_line(err.value)
    with pytest.raises(ModelError) as err:
        load_model(str(tmp_path))  # a directory without config.json
    assert "config.json" in _one_line(err.value)
    with pytest.raises(ModelError):
        load_model(str(tmp_path), kind="seq2seq")


def test_model_without_lm_head(tmp_path):
    from transformers import BertConfig, BertModel, ViTConfig

    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8)
    BertModel(config).save_pretrained(tmp_path / "encoder")
    with pytest.raises(ModelError) as err:
        load_model(str(tmp_path / "encoder"))
    assert "LM head" in _one_line(err.value)
    ViTConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8).save_pretrained(tmp_path / "vit")
    with pytest.raises(ModelError) as err:
        load_model(str(tmp_path / "vit"))
    assert "head" in _one_line(err.value)


def test_devices():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(ModelError):
            resolve_device("cuda")
    with pytest.raises(ModelError):
        resolve_device("tpu")


def test_error_base_class():
    assert issubclass(ModelError, KgprobeError)


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("KGPROBE_CACHE", str(tmp_path))
    assert models_mod.default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("KGPROBE_CACHE")
    assert models_mod.default_cache_dir().parts[-3:] == (".cache", "kgprobe", "models")


@pytest.mark.slow
def test_smollm2_preset_converts_once_and_knows_capitals(tmp_path_factory, monkeypatch):
    from kgprobe.models.scoring import make_scorer

    cache = tmp_path_factory.mktemp("kgprobe-cache")
    t0 = time.perf_counter()
    first = load_model("smollm2-135m", cache_dir=cache)
    first_s = time.perf_counter() - t0
    assert first.kind == "causal" and first.info["converted"] is True
    assert (cache / "smollm2-135m" / "config.json").is_file()
    assert not any(p.name.startswith(".") for p in cache.iterdir())  # no temp leftovers
    scorer = make_scorer(first)
    scores = scorer.score(
        ["Paris is the capital of [MASK] .", "The capital of France is [MASK] ."],
        ["France", "banana", "Paris"],
    )
    assert scores[0, 0] > scores[0, 1] and scores[1, 2] > scores[1, 1]

    # Second load reuses the converted directory and never reads the GGUF file.
    def no_conversion(*args, **kwargs):
        raise AssertionError("GGUF converted again")

    monkeypatch.setattr(gguf, "_convert_gguf", no_conversion)
    t0 = time.perf_counter()
    second = load_model("smollm2-135m", cache_dir=cache)
    second_s = time.perf_counter() - t0
    assert second.info["converted"] is False
    assert second_s < first_s / 3, (first_s, second_s)
    again = make_scorer(second).score(["Paris is the capital of [MASK] ."], ["France", "banana", "Paris"])
    assert abs(again[0] - scores[0]).max() < 1e-4
    # The paper's multiple-choice protocol runs with the chat template (accuracy of a 135M model is near chance).
    from kgprobe.prompts.multiple_choice import score_multiple_choice

    assert second.tokenizer.chat_template
    mc = score_multiple_choice(
        second,
        ["What is the superclass of ice hockey league? (a) case, (b) sports league, (c) bank, (d) actor"],
        ["(b) sports league"],
    )
    assert mc.predictions[0] in "abcd" and mc.accuracy in (0.0, 1.0)
    print(f"smollm2-135m: first load (conversion) {first_s:.1f} s, cached load {second_s:.1f} s")


def test_cache_entries_are_published_atomically(tmp_path):
    import json

    def staged(name, marker):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text("{}")
        (d / gguf._MARKER).write_text(json.dumps(dict(marker, version=gguf._CONVERSION_VERSION)))
        return d

    entry = tmp_path / "smollm2-135m"
    prov = {"preset": "smollm2-135m", "size": 10}
    gguf._publish(staged(".tmp1", {"preset": "smollm2-135m", "size": 9}), entry, {"preset": "smollm2-135m", "size": 9})
    assert json.loads((entry / gguf._MARKER).read_text())["size"] == 9
    # a stale entry (other source) is replaced, nothing is left aside
    gguf._publish(staged(".tmp2", prov), entry, prov)
    assert json.loads((entry / gguf._MARKER).read_text())["size"] == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smollm2-135m"]  # renamed in; stale copy removed
    # an equivalent entry published by someone else is kept (ours is simply dropped by the caller)
    inode = (entry / "config.json").stat().st_ino
    other = staged(".tmp3", prov)
    gguf._publish(other, entry, prov)
    assert (entry / "config.json").stat().st_ino == inode and other.exists()
