"""`--chat-template auto|none|FILE` (models/chat.py): a cloze asked as a user turn, each
candidate scored as the assistant's completed statement, whole-sentence as without one.

A tiny random LlamaForCausalLM with a tokenizer whose chat template is set here: the scored
text carries the template's markers, the score is the hand-computed log-probability of
candidate + suffix after the wrapped prefix, ``none`` is the bare scoring, dry runs show the
wrap, config.json pins it and the score cache never shares a wrapped and a bare entry.
"""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest
import torch

from kgprobe.cli import main

TEMPLATE = ("{% for m in messages %}<|user|>{{ m['content'] }}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
PROMPT = "Paris is the capital of [MASK] in the west ."
CANDIDATES = ["France", "Germany", "banana"]


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory):
    """A tiny Llama whose tokenizer has `TEMPLATE` as its chat template."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.conftest import _bpe_tokenizer

    tok = _bpe_tokenizer()
    tok.chat_template = TEMPLATE
    torch.manual_seed(5)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        initializer_range=0.3, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id)
    out = tmp_path_factory.mktemp("chat-llama") / "model"
    LlamaForCausalLM(config).eval().save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _load(path, chat: str):
    from kgprobe.models.loading import load_model
    from kgprobe.studies.options import use_chat

    return use_chat(load_model(str(path), device="cpu"), chat, "memorization")


def test_wrapped_score_is_the_assistant_statement_after_the_user_turn(chat_dir):
    loaded = _load(chat_dir, "auto")
    tok, model = loaded.tokenizer, loaded.model
    scorer = loaded.scorer()
    prefix, _cands, _suffix = scorer.encode(PROMPT, CANDIDATES)
    text = tok.decode(prefix.ids)
    assert text.startswith("<|user|>Complete the following statement")
    assert "Paris is the capital of ___ in the west .<|end|>" in text
    assert text.endswith("<|assistant|>\nParis is the capital of")
    got = scorer.score([PROMPT], CANDIDATES)[0]
    header = scorer.chat.header(tok, PROMPT)
    before = header + "Paris is the capital of"
    n_before = len(tok(before, add_special_tokens=False)["input_ids"])
    for cand, score in zip(CANDIDATES, got):  # by hand: one plain forward of the whole string
        ids = tok(f"{before} {cand} in the west .", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
        hand = sum(float(lp[t - 1, ids[t]]) for t in range(n_before, len(ids)))
        assert score == pytest.approx(hand, abs=1e-4)
    bare = _load(chat_dir, "none").scorer()
    assert bare.chat is None
    assert not any(abs(a - b) < 1e-6 for a, b in zip(got, bare.score([PROMPT], CANDIDATES)[0]))


def test_a_template_marker_that_is_the_bos_token_stays():
    """SmolLM2's BOS token is ``<|im_start|>``, which its tokenizer never adds: the header
    keeps it (only a BOS the tokenizer adds itself is left to the encoder)."""
    from kgprobe.models.chat import ChatWrap

    from tests.conftest import _bpe_tokenizer

    tok = _bpe_tokenizer()
    assert tok("x")["input_ids"][0] != tok.bos_token_id
    header = ChatWrap("{{ bos_token }}" + TEMPLATE, "Fill in: {statement}", "auto").header(tok, PROMPT)
    assert header == "<|endoftext|><|user|>Fill in: Paris is the capital of ___ in the west .<|end|>\n<|assistant|>\n"


def test_none_is_the_bare_scorer_and_the_cache_keys_differ(chat_dir, tiny_bert):
    from kgprobe.models.chat import chat_wrap
    from kgprobe.models.loading import load_model
    from kgprobe.models.score_cache import cached_scorer, scorer_settings

    plain = load_model(str(chat_dir), device="cpu")
    today = plain.scorer().score([PROMPT], CANDIDATES)
    none = _load(chat_dir, "none").scorer()
    assert scorer_settings(none) == scorer_settings(plain.scorer())  # old cache entries serve
    assert none.score([PROMPT], CANDIDATES) == pytest.approx(today, abs=1e-6)
    wrapped = _load(chat_dir, "auto")
    keys = {cached_scorer(m.scorer(), m).keys([PROMPT], CANDIDATES, None)[0]
            for m in (plain, wrapped)}
    assert len(keys) == 2
    assert chat_wrap("auto", tiny_bert, "x") is None  # a masked LM: auto asks bare prompts


def test_a_template_file_with_a_masked_lm_is_one_line(tmp_path, tiny_bert, capsys):
    from kgprobe.errors import KgprobeError
    from kgprobe.models.chat import chat_wrap

    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE, encoding="utf-8")
    with pytest.raises(KgprobeError, match="masked LM"):  # the CLI: one line, exit 2
        chat_wrap(str(template), tiny_bert, "x")
    assert chat_wrap(str(template), SimpleNamespace(kind="baseline"), "x") is None
    code = main(["study", "memorization", "--model", "frequency", "--task", "DM",
                 "--chat-template", str(tmp_path / "missing.jinja"), "--out", str(tmp_path / "N")])
    err = _error(capsys)
    assert code == 2 and "no such file" in err and len(err.splitlines()) == 1, err


def _error(capsys) -> str:
    """stderr without transformers' weight-loading progress bar."""
    lines = capsys.readouterr().err.strip().splitlines()
    return "\n".join(x for x in lines if "Loading weights" not in x)


def _memorization(model, out, *extra) -> list[dict]:
    assert main(["study", "memorization", "--model", str(model), "--task", "DM",
                 "--candidates", "4", "--limit", "3", "--threads", "1", "--out", str(out),
                 *extra]) == 0
    with open(out / "results.csv", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_runs_pin_the_wrap_and_dry_runs_show_it(chat_dir, tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE.replace("<|user|>", "<|human|>"), encoding="utf-8")
    bare = _memorization(chat_dir, tmp_path / "today")
    assert _memorization(chat_dir, tmp_path / "none", "--chat-template", "none") == bare
    _memorization(chat_dir, tmp_path / "auto", "--chat-template", "auto")
    pinned = json.loads((tmp_path / "auto" / "config.json").read_text())
    assert pinned["chat_template"] == "auto" and "{statement}" in pinned["chat_instruction"]
    assert "chat_template" not in json.loads((tmp_path / "none" / "config.json").read_text())
    # a rerun under another wrap is refused, not mixed in
    assert main(["study", "memorization", "--model", str(chat_dir), "--task", "DM",
                 "--candidates", "4", "--limit", "3", "--out", str(tmp_path / "auto")]) == 2
    for setting, marker in (("auto", "<|user|>"), (str(template), "<|human|>")):
        dry = tmp_path / f"dry-{marker[2:-2]}"
        assert main(["study", "memorization", "--dry-run", "--model", str(chat_dir), "--task",
                     "DM", "--limit", "2", "--chat-template", setting, "--out", str(dry)]) == 0
        lines = [json.loads(x) for x in (dry / "prompts.jsonl").read_text().splitlines()]
        assert lines and all(x["chat"]["wrapped"].startswith(marker) for x in lines)
        for x in lines:
            assert x["chat"]["wrapped"].endswith("<|assistant|>\n" + x["text"])
            assert x["text"].replace("[MASK]", "___") in x["chat"]["user"]


def test_every_cloze_study_pins_the_wrap_and_the_others_refuse_it():
    from kgprobe.errors import KgprobeError
    from kgprobe.studies.consistency.config import ConsistencyConfig
    from kgprobe.studies.copen.config import CopenConfig
    from kgprobe.studies.options import ModelSettings
    from kgprobe.studies.premise_ablation.config import AblationConfig
    from kgprobe.studies.sta.config import StaConfig

    for config in (ConsistencyConfig("m", settings=ModelSettings(chat_template="auto")),
                   AblationConfig(model="m", settings=ModelSettings(chat_template="auto"))):
        pinned = config.pinned()
        assert pinned["chat_template"] == "auto" and "{statement}" in pinned["chat_instruction"]
    assert "chat_template" not in AblationConfig(model="m").pinned()  # old folders resume
    assert "chat_template" not in ConsistencyConfig("m").pinned()
    with pytest.raises(KgprobeError, match="sta does not ask cloze"):
        StaConfig(norms="n", model="m", settings=ModelSettings(chat_template="auto"))
    with pytest.raises(KgprobeError, match="copen does not ask cloze"):
        CopenConfig(model="m", method="zero-shot", settings=ModelSettings(chat_template="auto"))


def test_multiple_choice_chat_is_the_shared_option():
    from kgprobe.studies.multiple_choice.config import chat_setting

    def args(chat="auto", chat_template=None):
        return SimpleNamespace(chat=chat, chat_template=chat_template)

    assert chat_setting(args()) is None and chat_setting(args("off")) is False
    assert chat_setting(args("on")) is True
    assert chat_setting(args("on", "none")) is False  # --chat-template wins
    assert chat_setting(args("off", "auto")) is None


@pytest.mark.slow
def test_smollm2_memorization_with_and_without_its_template(tmp_path):
    """The instruct model's own template changes the numbers, and compare says by how much."""
    runs = {}
    for setting in ("auto", "none"):
        out = tmp_path / setting
        assert main(["study", "memorization", "--model", "smollm2-135m", "--chat-template",
                     setting, "--task", "DM", "--candidates", "20", "--threads", "1",
                     "--limit", "5", "--out", str(out)]) == 0
        runs[setting] = out
    assert json.loads((runs["auto"] / "config.json").read_text())["chat_template"] == "auto"
    cmp = tmp_path / "cmp"
    assert main(["compare", str(runs["none"]), str(runs["auto"]), "--out", str(cmp)]) == 0
    with open(cmp / "compare.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    wrapped = [r for r in rows if r["baseline"] == "False"]
    assert len(wrapped) == 1 and "[chat: auto]" in wrapped[0]["model"]
    assert wrapped[0]["test"] == "paired" and wrapped[0]["difference_lo"] != ""
    tops = {k: [json.loads(x)["top10"] for x in (out / "predictions.jsonl").read_text().splitlines()]
            for k, out in runs.items()}
    assert len(tops["auto"]) == 5 and tops["auto"] != tops["none"]  # the wrap changes scores


def test_open_answers_continue_the_statement_inside_the_conversation(chat_dir, tmp_path):
    """--answers generate under a chat template: the model continues the assistant's turn
    (the text up to the slot) after the user's turn that shows the whole statement, and the
    dry run shows the same text."""
    from kgprobe.studies.memorization.generate import wrap_for_generation

    loaded = _load(chat_dir, "auto")
    text = wrap_for_generation(loaded, PROMPT)
    assert "Paris is the capital of ___ in the west .<|end|>" in text
    assert text.endswith("<|assistant|>\nParis is the capital of")
    assert wrap_for_generation(_load(chat_dir, "none"), PROMPT).endswith("\nParis is the capital of")
    dry = tmp_path / "dry"
    assert main(["study", "memorization", "--model", str(chat_dir), "--chat-template", "auto",
                 "--answers", "generate", "--task", "TP", "--limit", "2", "--dry-run",
                 "--out", str(dry)]) == 0
    lines = [json.loads(x) for x in (dry / "prompts.jsonl").read_text().splitlines()]
    assert lines and all(line["chat"]["wrapped"].endswith(line["chat"]["assistant"])
                         and line["text"].endswith(line["chat"]["assistant"]) for line in lines)
    assert all("___" in line["chat"]["user"] for line in lines)


def test_the_prior_control_reads_the_same_wrap_as_the_model(chat_dir):
    """`--controls prior` under `--chat-template`: the model's content-free prior is asked
    inside the same conversation as the model, not as a bare cloze."""
    from kgprobe.studies.controls import ControlSettings, load_control

    wrapped = load_control("prior", str(chat_dir), ControlSettings(
        device="cpu", chat_template="auto", study="memorization"))
    bare = load_control("prior", str(chat_dir), ControlSettings(device="cpu"))
    assert wrapped.inner.chat is not None and getattr(bare.inner, "chat", None) is None
    got = wrapped.scorer().score([PROMPT], CANDIDATES)[0]
    assert not any(abs(a - b) < 1e-6 for a, b in zip(got, bare.scorer().score([PROMPT], CANDIDATES)[0]))


#: Renders each template named on the command line through `dry_wrapper` (the path a dry run
#: takes) under a 3 GiB address-space and 64 MiB file limit, one line per template: so the
#: original code, which had no bound, fails the test instead of taking the machine.
_BOUNDED = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
from kgprobe.errors import KgprobeError
from kgprobe.models.chat import dry_wrapper
for path in sys.argv[1:]:
    start = time.monotonic()
    try:
        out = 'rendered %d' % len(dry_wrapper(path, None, 'Fill in: {statement}')('A [MASK] .'))
    except KgprobeError as err:
        out = 'refused ' + str(err)
    print('%.1f' % (time.monotonic() - start), out.replace(chr(10), ' | '), flush=True)
peak = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0].split()[1]
print('peak', int(peak) >> 10)  # this process's own (ru_maxrss keeps the forking parent's)
"""


def test_a_looping_or_huge_template_is_refused_in_bounded_time_and_memory(tmp_path):
    """Issue 45: a looping template rendered for over 90 s, a huge string took 4.75 GB."""
    import os
    import subprocess
    import sys

    cases = {
        "loop.jinja": "{% for i in range(10**5) %}{% for j in range(10**5) %}x{% endfor %}{% endfor %}",
        "spin.jinja": "{% for i in range(10**5) %}{% for j in range(10**5) %}{% endfor %}{% endfor %}",
        "huge.jinja": "{{ 'x' * 10**9 }}",
        "double.jinja": "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
                        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "wide.jinja": "{{ '{:>999999999}'.format(1) }}",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "fine.jinja").write_text(TEMPLATE, encoding="utf-8")
    names = [*cases, "fine.jinja"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        res = subprocess.run([sys.executable, "-c", _BOUNDED, *(str(tmp_path / n) for n in names)],
                             capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"rendering was not stopped: {err.stdout!r}")
    lines = res.stdout.splitlines()
    assert res.returncode == 0 and len(lines) == len(names) + 1, (res.stdout, res.stderr[-2000:])
    for name, line in zip(names[:-1], lines):
        took, _, said = line.partition(" ")
        assert said.startswith(f"refused --chat-template {tmp_path / name}: rendering stopped"), line
        assert " | " not in said and float(took) < 10, line
    assert "loop or recursion" in lines[1] and "characters" in lines[2]
    assert lines[len(names) - 1].split(" ", 1)[1].startswith("rendered")  # a real one renders
    assert int(lines[-1].split()[1]) < 1024, lines[-1]  # MiB at the peak, interpreter included


def test_a_template_syntax_error_is_one_line_naming_the_file(tmp_path, capsys):
    """Issue 45: a template Jinja cannot parse was a traceback."""
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}{{ m['content'] }}\n{% if %}", encoding="utf-8")
    for model in ("frequency", None):  # refused as the options are read, whatever the model
        code = main(["study", "memorization", "--dry-run", *(["--model", model] if model else []),
                     "--task", "DM", "--limit", "1", "--chat-template", str(broken),
                     "--out", str(tmp_path / f"out-{model}")])
        err = _error(capsys)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert str(broken) in err and "line 2" in err and "Traceback" not in err
        assert not (tmp_path / f"out-{model}").exists()
