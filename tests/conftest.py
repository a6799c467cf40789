"""Shared fixtures: tiny randomly initialised language models built in the test session.

Nothing is downloaded. Each model is saved to a temporary directory, so `load_model(dir)`
is exercised too:

* ``tiny_bert``  - BertForMaskedLM (hidden 32, 2 layers) with a hand-written WordPiece vocab;
* ``tiny_gpt2``  - GPT2LMHeadModel with a byte-level BPE trained on a few sentences;
* ``tiny_llama`` - LlamaForCausalLM (rotary, grouped-query attention) with the same BPE;
* ``tiny_gemma3`` - Gemma3ForCausalLM with a 3-token sliding window (scaled embeddings).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

# Tiny models gain nothing from intra-op threads, and on a small shared machine OpenMP
# spin-waiting makes them 10-30x slower when another process holds a core (under `make test`
# the other pytest-xdist worker always does). So one thread here, and, through the
# environment, in every `kgprobe` command a test starts as a subprocess without `--threads`.
# Override with KGPROBE_TEST_THREADS=<n>.
THREADS = os.environ.get("KGPROBE_TEST_THREADS", "1")
os.environ["OMP_NUM_THREADS"] = THREADS

import torch  # noqa: E402  (after OMP_NUM_THREADS: OpenMP reads it when torch loads)

torch.set_num_threads(int(THREADS))

SENTENCES = [
    "Paris is the capital of France .",
    "Berlin is the capital of Germany .",
    "Lionel Messi is a soccer player .",
    "A person is a particular animal .",
    "Person is an agent . Therefore , X is a particular agent .",
    "The banana is a fruit . A motor race is a sports event .",
    "What is the type of it ? (a) work , (b) person , (c) place , (d) event",
    "Answer with the letter of the correct option . Answer : (e) work",
]

BERT_WORDS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ".", ",", "'", "s", "the", "a", "an", "is", "of", "capital", "paris", "france", "germany",
    "person", "animal", "agent", "particular", "sports", "event", "therefore", "x", "y",
    "ban", "##ana", "motor", "race", "fruit", "work", "place", "soc", "##cer", "player",
    "berlin", "has", "class", "implies", "[", "]", "##s", "##er", "one", "to", "be",
]


def _bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<pad>"
    )


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    root = tmp_path_factory.mktemp("tiny-bert")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(BERT_WORDS) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(BERT_WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.3,
        pad_token_id=0,
    )
    model = BertForMaskedLM(config).eval()
    out = root / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _save_causal(tmp_path_factory, name, model):
    out = tmp_path_factory.mktemp(name) / "model"
    model.eval().save_pretrained(out)
    _bpe_tokenizer().save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _bpe_tokenizer()
    torch.manual_seed(1)
    config = GPT2Config(
        vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=2, n_head=2, initializer_range=0.3,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    model = GPT2LMHeadModel(config)
    # Room for the demo's chained prompts (depth 2 with naming distractors run past 128
    # tokens): positions 128-511 drawn after the weights, from their own seed, so every
    # weight the 128-position model had stays what it was and short prompts score the same.
    wpe = model.transformer.wpe.weight.data
    more = torch.randn(512 - wpe.shape[0], wpe.shape[1],
                       generator=torch.Generator().manual_seed(11)) * config.initializer_range
    model.transformer.wpe = torch.nn.Embedding.from_pretrained(torch.cat([wpe, more]),
                                                                freeze=False)
    model.config.n_positions = 512
    return _save_causal(tmp_path_factory, "tiny-gpt2", model)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _bpe_tokenizer()
    torch.manual_seed(2)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.3,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    return _save_causal(tmp_path_factory, "tiny-llama", LlamaForCausalLM(config))


@pytest.fixture(scope="session")
def tiny_gemma3_dir(tmp_path_factory):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    tok = _bpe_tokenizer()
    torch.manual_seed(3)
    config = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, max_position_embeddings=128, sliding_window=3,
        layer_types=["sliding_attention", "full_attention"], initializer_range=0.3,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    return _save_causal(tmp_path_factory, "tiny-gemma3", Gemma3ForCausalLM(config))


def _load(path):
    from kgprobe.models.loading import load_model

    return load_model(str(path), device="cpu")


@pytest.fixture(scope="session")
def tiny_bert(tiny_bert_dir):
    return _load(tiny_bert_dir)


@pytest.fixture(scope="session")
def tiny_gpt2(tiny_gpt2_dir):
    return _load(tiny_gpt2_dir)


@pytest.fixture(scope="session")
def tiny_llama(tiny_llama_dir):
    return _load(tiny_llama_dir)


@pytest.fixture(scope="session")
def tiny_gemma3(tiny_gemma3_dir):
    return _load(tiny_gemma3_dir)


def pytest_configure(config):
    """Keep the order `pytest_collection_modifyitems` below gives the files under `make test`
    (pytest-xdist, `--dist loadfile`): by default xdist reorders files by their number of
    tests, which starts a file of a few long tests (a real model, a served one) last."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Files with the most `slow` tests (the real PyPI models: the longest files) first, then
    files by their number of tests (xdist's own order). Why: under `--dist loadfile` a file
    stays on one worker, so a long file started last is the run's tail while the other worker
    idles; started first, the short files fill in beside it. The order inside a file is
    kept, and no test depends on what ran before it."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    count = Counter(item.path for item in items)
    items.sort(key=lambda item: (-slow[item.path], -count[item.path]))  # stable


@pytest.fixture(scope="session", autouse=True)
def _shared_tag_cache(tmp_path_factory):
    """One tag cache (ontology/tag_cache.py) for the whole run, never ~/.cache: a label's tags
    depend only on the label and the tagger's version, so tests share them, and a command
    whose labels an earlier test tagged loads no tagger (tests/test_tag_cache.py checks
    that cached and fresh tags agree). Under pytest-xdist (`make test`) the workers share it too,
    in the run's temporary folder above their own: it is SQLite in WAL mode, written as every
    command of the suite writes it (a worker and the commands it starts write one file at
    once), so a label the other worker tagged is not tagged again (about 13 s of a worker's
    first study on the bundled ontology)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "tag-cache"
    folder.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGPROBE_TAG_CACHE_DIR", str(folder))
        yield


@pytest.fixture(autouse=True)
def _score_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own empty score cache (models/score_cache.py), never ~/.cache."""
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path_factory.mktemp("score-cache")))


#: The shared data folder: `shared/` beside the checkout (the repository's ../shared).
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(relative: str) -> Path:
    """`relative` inside the shared data folder; a test that needs it FAILS when it is missing
    (never a silent skip: a test skipped on every machine but one proves nothing)."""
    path = SHARED / relative
    if not path.exists():
        pytest.fail(f"shared data missing: {path} (the tests read ../shared beside the checkout; "
                    f"put the shared data folder there)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def shared_data():
    """`shared_path` as a fixture: ``shared_data("data/ontologies/pizza.owl")``."""
    return shared_path
