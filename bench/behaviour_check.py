"""Prove that a refactor changed no result: run every study through the command line, compare.

``run`` builds two tiny randomly initialised models with fixed seeds (a BERT with a word-piece
vocabulary, a GPT-2 with a byte-level BPE, as in tests/conftest.py, with a few more words and
positions), then runs each study on them through the CLI only, so the check survives any
reshuffle of the modules behind it (``--only NAME,...`` reruns some runs, for debugging):

    python bench/behaviour_check.py run --cli "python -m kgprobe.cli" --out before
    # ... refactor ...
    python bench/behaviour_check.py run --cli "python -m kgprobe.cli" --out after
    python bench/behaviour_check.py compare before after

(``--cli`` is the command line's entry as the checkout before the change has it.) Each mode
ends with one JSON line (``run``: the runs made; ``compare``: identical or not, files,
differences); the test suite runs both on two small runs (tests/test_bench_smoke.py).

``compare`` checks every csv/json/jsonl/md result file of two output folders, after masking
what may legitimately change between runs: absolute paths (only their last component is
kept), timings (keys/columns named like seconds, elapsed, time, timestamp; "Run time" lines
of report.md) and png figures (not read). Model files, the store and the cache live in
``OUT/_work`` and are not compared; ``OUT/models.json`` holds the models' hashes, so a
difference there means the two runs did not probe the same models. Exit 1 on any difference
except those a change intends (`INTENDED`, each with its reason; ``--strict`` counts them too).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NORMS = "../shared/data/mcrae"  # relative to the repository (the commands run there)
VOCAB = "../shared/data/lama/common_vocab_cased.txt"
SUFFIXES = {".csv", ".json", ".jsonl", ".md"}
TIMING = re.compile(r"(^|_)(seconds|secs|elapsed|time|timestamp|duration|started|finished|date)($|_)", re.IGNORECASE)
# not URIs, not ../relative; a model's content-free prior names it: prior:/abs/model
ABS_PATH = re.compile(r"(?:(?<=prior:)|(?<![\w.:/)\]]))/(?:[\w.+@-]+/)*([\w.+@-]+)")
MD_TIMING = re.compile(r"run time|\bseconds\b|\d\s*s\)", re.IGNORECASE)
MAX_LINES_PER_FILE = 20
# From tests/conftest.py, copied so that the models do not change when the tests do.
SENTENCES = ["Paris is the capital of France .", "Berlin is the capital of Germany .",
             "Lionel Messi is a soccer player .", "A person is a particular animal .",
             "Person is an agent . Therefore , X is a particular agent .",
             "The banana is a fruit . A motor race is a sports event .",
             "What is the type of it ? (a) work , (b) person , (c) place , (d) event",
             "Answer with the letter of the correct option . Answer : (e) work"]
BERT_WORDS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ".", ",", "'", "s", "the", "a", "an", "is", "of", "capital", "paris", "france", "germany",
    "person", "animal", "agent", "particular", "sports", "event", "therefore", "x", "y",
    "ban", "##ana", "motor", "race", "fruit", "work", "place", "soc", "##cer", "player",
    "berlin", "has", "class", "implies", "[", "]", "##s", "##er", "one", "to", "be",
    "banana", "bear", "bed", "box", "cat", "dog", "fur", "big",  # not in conftest: so `study sta` has targets
]


# ------------------------------------------------------------------------------ models

def build_models(root: Path) -> dict[str, Path]:
    """Tiny BERT and GPT-2 as in tests/conftest.py, saved with save_pretrained under `root`."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bert = root / "tiny-bert"
    bert.mkdir(parents=True, exist_ok=True)
    (root / "vocab.txt").write_text("\n".join(BERT_WORDS) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = tf.BertConfig(vocab_size=len(BERT_WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, initializer_range=0.3, pad_token_id=0)
    tf.BertForMaskedLM(config).eval().save_pretrained(bert)
    tf.BertTokenizer(vocab=str(root / "vocab.txt"), do_lower_case=True).save_pretrained(bert)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(SENTENCES * 4, trainer=trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok = tf.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                  pad_token="<pad>")
    gpt2 = root / "tiny-gpt2"
    torch.manual_seed(1)
    config = tf.GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=32, n_layer=2, n_head=2, initializer_range=0.3,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    tf.GPT2LMHeadModel(config).eval().save_pretrained(gpt2)
    tok.save_pretrained(gpt2)
    return {"bert": bert, "gpt2": gpt2}


# ------------------------------------------------------------------------------ run

#: name (its output folder, "-": none), then the CLI arguments; every line but the first gets
#: "--out OUT/name", study and probe lines "--threads 1". Each is kept small (~4 min in all on 2 cores).
#: The store the first line fills is the default store, so a study names its ontology
#: (`--ontology bundled`), as a study must beside a filled default store.
RUNS = """
kg-load               kg load --default --store {store}
generate-memorizing   generate memorizing --store {store}
generate-reasoning    generate reasoning --store {store}
demo-gpt2             demo --model {gpt2} --limit 2 --templates manual,soft --soft-epochs 1
ablation-bert         study premise-ablation --ontology bundled --model {bert} --templates manual --limit 2
memorizing-frequency  probe memorizing --ontology bundled --model frequency --task all
memorizing-random     probe memorizing --ontology bundled --model random --task all
memorizing-bert       probe memorizing --ontology bundled --model {bert} --task all --limit 3
memorizing-gpt2       probe memorizing --ontology bundled --model {gpt2} --task all --limit 3
mc-gpt2-letter        probe multiple-choice --model {gpt2} --answer letter --limit 2
mc-gpt2-text          probe multiple-choice --model {gpt2} --answer text --limit 2
copen-zero-shot-bert  study copen --from-kg --store {store} --norms {norms} --method zero-shot --model {bert} --limit 3
copen-linear-gpt2     study copen --data {root}/copen-zero-shot-bert/data --method linear --model {gpt2} --limit 3 --train-limit 8 --seeds 42
sta-bert              study sta --norms {norms} --vocab-file {vocab} --model {bert} --limit 3
sta-gpt2              study sta --norms {norms} --vocab-file {vocab} --model {gpt2} --limit 3
memorizing-paper-freq study memorization --ontology bundled --model frequency --protocol paper --task all
ablation-paper-gpt2   study premise-ablation --protocol paper --model {gpt2} --limit 2 --pairs 1 --rules rdfs9,rdfs11
dry-ablation          study premise-ablation --ontology bundled --dry-run --limit 2
dry-memorizing        study memorization --ontology bundled --dry-run --task all --limit 3
consistency-gpt2      study consistency --ontology bundled --model {gpt2} --rules rdfs9,rdfs11 --limit 2
consistency-controls  study consistency --ontology bundled --model {gpt2} --rules rdfs9,rdfs11 --limit 2 --candidates 5 --controls frequency,copy
consistency-frequency study consistency --ontology bundled --model frequency --limit 2
consistency-generate  study consistency --ontology bundled --model {gpt2} --rules rdfs9,rdfs11 --limit 2 --candidates 5 --answers generate
dry-consistency       study consistency --ontology bundled --dry-run --limit 2 --template all
dry-mc                probe multiple-choice --dry-run --limit 2 --chat-template auto
dry-mc-text           probe multiple-choice --dry-run --answer text --limit 2
dry-copen-kg          study copen --from-kg --store {store} --norms {norms} --method zero-shot --dry-run --limit 3
dry-copen-linear      study copen --data {root}/copen-zero-shot-bert/data --method linear --dry-run --limit 3 --train-limit 8
dry-sta               study sta --norms {norms} --vocab-file {vocab} --dry-run --limit 3
ablation-generate-gpt2 study premise-ablation --ontology bundled --model {gpt2} --answers generate --templates manual --limit 2 --pairs 1 --rules rdfs9
ablation-controls-gpt2 study premise-ablation --ontology bundled --model {gpt2} --templates manual --limit 2 --pairs 1 --rules rdfs9,rdfs2 --controls frequency,copy
ablation-deep-bert    study premise-ablation --ontology bundled --model {bert} --templates manual --limit 2 --pairs 1 --rules rdfs9 --depth 1,2 --distractors 0,2 --controls frequency
ablation-cf-bert      study premise-ablation --ontology bundled --model {bert} --templates manual --limit 2 --pairs 1 --rules rdfs9 --premises true,counterfactual --controls frequency
ablation-paper-soft-gpt2 study premise-ablation --protocol paper --model {gpt2} --limit 2 --pairs 1 --rules rdfs5 --templates manual,soft --soft-epochs 1 --controls frequency
dry-ablation-paper    study premise-ablation --protocol paper --dry-run --limit 2 --rules rdfs9 --templates manual,soft
dry-ablation-generate study premise-ablation --ontology bundled --dry-run --answers generate --templates manual --limit 2 --rules rdfs9 --chat-template auto
"""  # copen-linear reads the sets copen-zero-shot generated (COPEN's layout): no second generation


def commands(models: dict[str, Path], root: Path) -> list[tuple[str, list[str]]]:
    """(name, CLI arguments) of every run, placeholders filled in."""
    places = {"store": root / "_work" / "store", "root": root, "norms": NORMS, "vocab": VOCAB, **models}
    out = []
    for line in RUNS.strip().splitlines():
        name, *args = line.split()
        args = [a.format(**places) for a in args]
        args += ["--threads", "1"] if args[0] in ("demo", "study", "probe") else []
        out.append((name, args + (["--out", str(root / name)] if name != "kg-load" else [])))
    return out


def run(cli: str, out: Path, only: list[str] | None = None) -> int:
    out = out.resolve()
    if out.exists() and any(out.iterdir()) and not only:
        print(f"{out} is not empty; pass a new folder (studies resume from what a folder holds)", file=sys.stderr)
        return 2
    work = out / "_work"
    work.mkdir(parents=True, exist_ok=True)
    models = {"bert": work / "models" / "tiny-bert", "gpt2": work / "models" / "tiny-gpt2"}
    chosen = [(name, args) for name, args in commands(models, out) if not only or name in only]
    if not only or any(str(p) in args for p in models.values() for _, args in chosen):
        build_models(work / "models")  # runs without a model (--only) skip building them
        hashes = {k: {f.name: hashlib.sha256(f.read_bytes()).hexdigest()[:16] for f in sorted(p.iterdir())
                      if f.suffix in {".safetensors", ".txt"} or f.name == "tokenizer.json"}
                  for k, p in models.items()}
        (out / "models.json").write_text(json.dumps(hashes, indent=1) + "\n")
    env = {**os.environ, "KGPROBE_CACHE": str(work / "cache"), "KGPROBE_STORE": str(work / "store"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    spec = importlib.util.find_spec("kgprobe")
    print(f"kgprobe from {spec and Path(spec.origin).resolve().parent}; cli: {cli}", flush=True)
    start = time.perf_counter()
    (work / "logs").mkdir(exist_ok=True)
    ran = []
    for name, args in chosen:
        if (out / name).exists():
            shutil.rmtree(out / name)  # only with --only: rerun from scratch
        argv = [sys.executable if w == "python" else w for w in shlex.split(cli)] + args
        t0 = time.perf_counter()
        log = work / "logs" / f"{name}.log"
        with log.open("w") as fh:
            rc = subprocess.run(argv, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                check=False).returncode
        print(f"{name:24s} rc {rc}  {time.perf_counter() - t0:6.1f} s", flush=True)
        if rc:
            print(f"failed: {shlex.join(argv)}\n{log.read_text()[-3000:]}", file=sys.stderr)
            return 1
        ran.append(name)
    print(f"done in {time.perf_counter() - start:.0f} s -> {out}")
    print(json.dumps({"bench": "behaviour_check", "mode": "run", "runs": ran, "out": str(out),
                      "seconds": round(time.perf_counter() - start, 1)}))
    return 0


# ------------------------------------------------------------------------------ compare

def result_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and p.suffix in SUFFIXES and p.relative_to(root).parts[0] != "_work"}


def normalize(value):
    """Drop timing keys, reduce absolute paths to their last component, recursively."""
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if not TIMING.search(k)}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        return ABS_PATH.sub(r"<abs>/\1", value)
    return value


def records(path: Path) -> list:
    """The file as a list of comparable records (one per line, row or JSON document)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [normalize(json.loads(text))]
    if path.suffix == ".jsonl":  # a unit file's check line (its checksum) is no result
        return [normalize(r) for line in text.splitlines() if line.strip()
                if not (isinstance(r := json.loads(line), dict) and set(r) == {"unit_check"})]
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return [normalize(dict(r)) for r in rows] or [text.splitlines()[:1]]
    return [ABS_PATH.sub(r"<abs>/\1", line) for line in text.splitlines() if not MD_TIMING.search(line)]


def diff(a, b, where: str = ""):
    """Yield 'where: a != b' for every differing leaf."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            yield from diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f"{where}[{i}]")
    elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        show = lambda v: (s if len(s := json.dumps(v, ensure_ascii=False)) < 120 else s[:117] + "...")
        yield f"{where or '.'}: {show(a)} != {show(b)}"


#: Differences a change intends, each with why: (file pattern, difference pattern). A
#: difference matching one is listed as intended and does not fail the comparison.
INTENDED = [
    # config.json names the study that wrote the folder (`kgprobe report`, Results.from_path)
    (r".*/config\.json", r'\[0\]\.study: "<missing>" != "[a-z-]+"'),
    # `kgprobe demo` is `study premise-ablation --preset demo`: the study's own defaults
    (r"demo-[^/]*/config\.json", r'\[0\]\.device: "cpu" != "auto"'),
    (r"demo-[^/]*/config\.json", r'\[0\]\.extra\.ontology: "<missing>" != "bundled"'),
]


def intended(name: str, line: str) -> bool:
    return any(re.fullmatch(f, name) and re.fullmatch(d, line) for f, d in INTENDED)


def compare(dir_a: Path, dir_b: Path, *, strict: bool = False) -> int:
    """Print every difference; exit 1 on any that is not `INTENDED` (any at all if `strict`)."""
    files_a, files_b = result_files(dir_a), result_files(dir_b)
    differences = allowed = 0
    for name in sorted(files_a ^ files_b):
        print(f"{name}: only in {dir_a if name in files_a else dir_b}")
        differences += 1
    for name in sorted(files_a & files_b):
        ra, rb = records(dir_a / name), records(dir_b / name)
        where = "" if len(ra) == len(rb) else f" ({len(ra)} != {len(rb)} records)"
        found = list(diff(ra, rb) if not where else [f".: record count{where}"])
        expected = [] if strict else [line for line in found if intended(name, line)]
        for line in expected:
            print(f"{name}: intended: {line}")
        found = [line for line in found if line not in expected]
        allowed += len(expected)
        for line in found[:MAX_LINES_PER_FILE]:
            print(f"{name}: {line}")
        if len(found) > MAX_LINES_PER_FILE:
            print(f"{name}: ... {len(found) - MAX_LINES_PER_FILE} more differences")
        differences += len(found)
    if differences:
        print(f"different: {differences} difference(s) in {len(files_a | files_b)} files "
              f"(and {allowed} intended)")
    else:
        print(f"identical: {len(files_a)} files, apart from {allowed} intended difference(s)")
    print(json.dumps({"bench": "behaviour_check", "mode": "compare", "identical": not differences,
                      "files": len(files_a | files_b), "differences": differences,
                      "intended": allowed}))
    return 1 if differences else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("run", help="run every study into --out")
    p.add_argument("--cli", required=True, help="the command line's entry, e.g. 'python -m kgprobe.studies.cli' "
                   "(before the refactor) or 'python -m kgprobe.cli' (after); 'python' means this interpreter")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", type=lambda s: s.split(","), default=None, help="comma list of runs (debugging)")
    p = sub.add_parser("compare", help="compare two --out folders of `run`")
    p.add_argument("dirs", type=Path, nargs=2, metavar="DIR")
    p.add_argument("--strict", action="store_true", help="count the INTENDED differences too")
    args = parser.parse_args(argv)
    if args.mode == "run":
        return run(args.cli, args.out, args.only)
    return compare(*args.dirs, strict=args.strict)


if __name__ == "__main__":
    sys.exit(main())
