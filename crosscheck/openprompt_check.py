"""OpenPrompt's side of the cross-check: render and score kgprobe's bundled templates with OpenPrompt.

Runs in its own virtual environment (.venv-openprompt: OpenPrompt 1.0.1 beside transformers
4.39.3, see requirements-openprompt.txt), never beside kgprobe. It

1. reads kgprobe's bundled templates (ontology/templates.toml: OpenPrompt's template syntax),
2. builds a tiny randomly initialised BERT and GPT-2 from a fixed seed (vocabularies made from
   the rendered prompts, so every candidate is one token) and saves them to OUT/bert, OUT/gpt2,
3. renders every manual template (OpenPrompt's ManualTemplate) and soft template (MixedTemplate,
   its ``{"soft"}`` vectors set to seeded values) with ``{"placeholder"}``, ``{"meta"}`` and
   ``{"mask"}`` parts, tokenizes them with OpenPrompt's tokenizer wrappers (MLM for BERT, LM for
   GPT-2) and scores the candidates with PromptForClassification + ManualVerbalizer,
4. writes OUT/openprompt.json: per case the rendered text, token ids, soft and mask positions,
   the log-probability of each candidate over the vocabulary at the mask, and OpenPrompt's own
   classification output (log-softmax over the candidates).

kgprobe's side (tests/test_openprompt_crosscheck.py) loads the same models and compares.

    .venv-openprompt/bin/python crosscheck/openprompt_check.py --templates ontology/templates.toml --out DIR
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import openprompt
import tokenizers
import tomllib
import torch
import transformers
from openprompt import PromptDataLoader, PromptForClassification
from openprompt.data_utils import InputExample
from openprompt.plms import LMTokenizerWrapper, MLMTokenizerWrapper
from openprompt.prompts import ManualTemplate, ManualVerbalizer, MixedTemplate

SEED = 0
CANDIDATES = ["animal", "city", "person", "place", "agent", "team"]
#: One example per relation: text_a, text_b and the meta fields its templates read.
EXAMPLES = {
    "type": dict(text_a="Dog"),
    "subClassOf": dict(text_a="Capital city"),
    "subPropertyOf": dict(text_a="plays for"),
    "domain": dict(text_a="plays for", meta={"as_subject": "one plays for a team",
                                             "as_object": "a person plays for that"}),
    "range": dict(text_a="plays for", meta={"as_subject": "one plays for a team",
                                            "as_object": "a person plays for that"}),
    "property": dict(text_a="X", text_b="Y"),
}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def rendered_text(template, example: InputExample) -> str:
    """The template's sentence as OpenPrompt fills it: each part with the space before it,
    the mask as [MASK] and soft tokens as [SOFT] (whitespace collapsed)."""
    pieces = []
    for d in template.text:
        space = d.get("add_prefix_space", "")
        if "placeholder" in d:
            pieces.append(space + getattr(example, d["placeholder"]))
        elif "meta" in d:
            pieces.append(space + example.meta[d["meta"]])
        elif "mask" in d:
            pieces.append(space + "[MASK]")
        elif "soft" in d:
            pieces.append(space + "[SOFT]")
        else:
            pieces.append(space + d["text"])
    return re.sub(r"\s+", " ", "".join(pieces)).strip()


def corpus(templates: dict) -> list[str]:
    """Every prompt with every candidate in the slot: the tokenizers' training text."""
    out = []
    for relation, spec in templates["relations"].items():
        ex = EXAMPLES[relation]
        for text in spec.get("manual", []) + spec.get("soft", []):
            filled = text.replace('{"placeholder":"text_a"}', ex["text_a"])
            filled = filled.replace('{"placeholder":"text_b"}', ex.get("text_b", ""))
            for key, value in ex.get("meta", {}).items():
                filled = filled.replace('{"meta":"%s"}' % key, value)
            filled = re.sub(r"\{[^{}]*\}", "", filled.replace('{"mask"}', "\0"))  # soft: vectors
            for cand in CANDIDATES:
                out.append(re.sub(r"\s+", " ", filled.replace("\0", cand)).strip())
    return out


def build_bert(texts: list[str], out: Path):
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t)})
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n", encoding="utf-8")
    # OpenPrompt's wrappers need a slow (Python) tokenizer, as its own load_plm gives.
    tok = transformers.BertTokenizer(str(out / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(SEED)
    config = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=64)
    model = transformers.BertForMaskedLM(config).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return model, tok


def build_gpt2(texts: list[str], out: Path):
    from tokenizers import decoders, models, pre_tokenizers, trainers

    bpe = tokenizers.Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(texts * 8, trainer=trainer)
    out.mkdir(parents=True, exist_ok=True)
    vocab, merges = bpe.model.save(str(out))
    tok = transformers.GPT2Tokenizer(vocab, merges, bos_token="<|endoftext|>",
                                     eos_token="<|endoftext|>", pad_token="<pad>",
                                     unk_token="<|endoftext|>")
    torch.manual_seed(SEED)
    config = transformers.GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2,
                                     n_positions=64, bos_token_id=tok.bos_token_id,
                                     eos_token_id=tok.eos_token_id)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return model, tok


def soft_vectors(n: int, hidden: int, case: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(SEED * 1000 + case)
    return torch.randn(n, hidden, generator=gen) * 0.5


def score_case(model, tok, wrapper, text: str, kind: str, example: InputExample, case: int) -> dict:
    if kind == "manual":
        template = ManualTemplate(tokenizer=tok, text=text)
    else:
        template = MixedTemplate(model=model, tokenizer=tok, text=text)
    verbalizer = ManualVerbalizer(tok, classes=CANDIDATES, label_words=[[c] for c in CANDIDATES],
                                  prefix=" ")
    clf = PromptForClassification(plm=model, template=template, verbalizer=verbalizer,
                                  freeze_plm=True).eval()
    vectors = []
    if kind == "soft":
        n = template.num_soft_token
        vectors = soft_vectors(n, template.embedding_size, case)
        with torch.no_grad():
            template.soft_embedding.weight[1:n + 1] = vectors
    loader = PromptDataLoader(dataset=[example], template=template, tokenizer=tok,
                              tokenizer_wrapper_class=wrapper, max_seq_length=64, batch_size=1,
                              shuffle=False)
    batch = next(iter(loader))
    length = int(batch["attention_mask"][0].sum())
    ids = batch["input_ids"][0][:length].tolist()
    soft_ids = batch["soft_token_ids"][0][:length].tolist() if "soft_token_ids" in batch else [0] * length
    mask_pos = torch.where(batch["loss_ids"][0] > 0)[0].tolist()
    with torch.no_grad():
        label_lp = clf(next(iter(loader)))[0]  # OpenPrompt's classification output
        batch = next(iter(loader))  # forward() consumes its batch: the same steps, kept open
        logits = clf.verbalizer.gather_outputs(clf.prompt_model(batch))
        at_mask = clf.extract_at_mask(logits, batch)[0]
    vocab_lp = torch.log_softmax(at_mask.float(), dim=-1)
    word_ids = verbalizer.label_words_ids[:, 0, :]
    assert bool((verbalizer.words_ids_mask[:, 0, 1:] == 0).all()) if word_ids.shape[1] > 1 else True, \
        "every candidate must be one token"
    return {"rendered": rendered_text(template, example), "input_ids": ids,
            "soft_positions": [i for i, s in enumerate(soft_ids) if s > 0],
            "mask_position": mask_pos, "candidate_ids": word_ids[:, 0].tolist(),
            "logprobs": vocab_lp[word_ids[:, 0]].tolist(), "label_logprobs": label_lp.tolist(),
            "soft_vectors": [v.tolist() for v in vectors]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    templates = tomllib.loads(args.templates.read_text(encoding="utf-8"))
    texts = corpus(templates)
    models = {"bert": (*build_bert(texts, args.out / "bert"), MLMTokenizerWrapper),
              "gpt2": (*build_gpt2(texts, args.out / "gpt2"), LMTokenizerWrapper)}
    cases = []
    for name, (model, tok, wrapper) in models.items():
        for relation, spec in templates["relations"].items():
            ex = EXAMPLES[relation]
            example = InputExample(guid=relation, text_a=ex["text_a"], text_b=ex.get("text_b", ""),
                                   meta=ex.get("meta", {}))
            for kind in ("manual", "soft"):
                for index, text in enumerate(spec.get(kind, [])):
                    result = score_case(model, tok, wrapper, text, kind, example, len(cases))
                    cases.append({"model": name, "relation": relation, "kind": kind,
                                  "index": index, "template": text, "text_a": example.text_a,
                                  "text_b": example.text_b, "meta": example.meta,
                                  "candidates": CANDIDATES, **result})
    versions = {"openprompt": openprompt.__version__, "transformers": transformers.__version__,
                "torch": torch.__version__, "tokenizers": tokenizers.__version__}
    (args.out / "openprompt.json").write_text(json.dumps(
        {"versions": versions, "seed": SEED, "cases": cases}, indent=1), encoding="utf-8")
    print(f"openprompt {versions['openprompt']}: {len(cases)} cases -> {args.out / 'openprompt.json'}")


if __name__ == "__main__":
    main()
