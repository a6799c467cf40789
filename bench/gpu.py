"""Benchmark: the premise-ablation study's scoring on a GPU, with models that need no download.

    python bench/gpu.py prepare [--models smollm2-135m,gemma3-270m] [--dir .gpu]
    python bench/gpu.py run [--dir .gpu] [--device cuda] [--dtypes float32,bfloat16]

A GPU machine here can receive 64 MiB and download nothing, so no preset's weights can travel.
``prepare`` (on a machine where the presets load) copies each preset's exact ``config.json`` and
tokenizer files, no weights, into ``DIR/configs/NAME``. ``run`` (on the GPU machine) builds a
randomly initialised model from each config (seed 0, the architecture and sizes exactly the
preset's), saves it to a temporary folder and times it with ``bench/study.py``'s own measurement
(the study's reasoning prompts of the bundled ontology, every candidate and K = 20), once per
dtype. A random model's speed is the trained model's speed: the work is the same matrices; its
answers are meaningless, so no accuracy is read from it.

It prints ONE JSON line with, per model and dtype:

* ``all`` / ``k``: prompts/s batched through the token trie, and the anchor ``all_before``
  measured in the same run (one prompt at a time): ``speedup_vs_one_at_a_time`` is their ratio;
* ``fraction_of_matmul``: the scoring's FLOP/s over a same-dtype 8192² matrix product's on
  the same GPU;
* ``peak_memory_gib``: the most GPU memory the model and the scoring held;
* ``paper_scale_hours``: the paper-scale study's prompts (every item, 10 pairs, every manual
  template, its 4 cells, the premise probes) over the measured rate;
* ``bf16_vs_fp32``: on the same random weights, the share of prompts whose top candidate is the
  same under both dtypes and the mean Spearman correlation of the candidate scores — how far
  bfloat16 moves the rankings the study reads.

The tests run the ``run`` step on the CPU at a tiny size (tests/test_bench_smoke.py), so the
code path is exercised without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: What of a converted preset travels: its configuration and tokenizer, never its weights.
CONFIG_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "chat_template.jinja", "tokenizer.model")


def log(msg: str) -> None:
    print(f"[bench/gpu] {msg}", file=sys.stderr, flush=True)


def prepare(models: list[str], folder: Path) -> None:
    """Copy each preset's configuration and tokenizer (converted once, locally) into `folder`."""
    from kgprobe.models.gguf import PRESETS, preset_entry
    from kgprobe.models.loading import default_cache_dir

    for name in models:
        if name not in PRESETS:
            raise SystemExit(f"bench/gpu: {name} is no preset ({', '.join(PRESETS)})")
        source, _ = preset_entry(name, default_cache_dir())
        target = folder / "configs" / name
        target.mkdir(parents=True, exist_ok=True)
        copied = [f for f in CONFIG_FILES if (source / f).is_file()]
        for f in copied:
            shutil.copy2(source / f, target / f)
        log(f"{name}: {', '.join(copied)} from {source.name}")


def random_model(config_dir: Path, target: Path) -> Path:
    """A randomly initialised model of `config_dir`'s exact architecture, saved in `target`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(config_dir)
    config.__dict__.pop("quantization_config", None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    model.save_pretrained(target)
    for f in CONFIG_FILES:
        if f != "config.json" and (config_dir / f).is_file():
            shutil.copy2(config_dir / f, target / f)
    return target


def matmul_rate(device: str, dtype: str, n: int) -> float:
    """Best n×n matrix product rate (FLOP/s) of `dtype` on `device`, after warm-ups."""
    import torch

    dt = getattr(torch, dtype)
    a = torch.randn(n, n, device=device, dtype=dt)
    b = torch.randn(n, n, device=device, dtype=dt)
    best = float("inf")
    for i in range(6):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        a @ b
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        if i >= 2:
            best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def rank_agreement(model_dir: Path, requests, device: str) -> dict:
    """Top-1 agreement and mean Spearman of bfloat16 against float32 scores, same weights."""
    from kgprobe.models.loading import load_model
    from kgprobe.studies.probes import Request, score_requests
    from scipy.stats import spearmanr

    rows = {}
    for dtype in ("float32", "bfloat16"):
        loaded = load_model(str(model_dir), device=device, dtype=dtype)
        rows[dtype] = score_requests(loaded.scorer(), [Request(p, tuple(c), v) for p, c, v in requests],
                                     batch_size=64, desc="agreement", progress=False)
        del loaded
    same = rhos = 0.0
    for a, b in zip(rows["float32"], rows["bfloat16"]):
        a, b = list(a), list(b)
        same += max(range(len(a)), key=a.__getitem__) == max(range(len(b)), key=b.__getitem__)
        rho = spearmanr(a, b).statistic
        rhos += 0.0 if rho != rho else float(rho)
    n = max(1, len(requests))
    return {"prompts": len(requests), "top1_agreement": round(same / n, 4),
            "mean_spearman": round(rhos / n, 4)}


def run(args) -> dict:
    import study as study_bench
    import torch

    from kgprobe.pseudowords.sampler import sample_pseudoword_sets
    from kgprobe.models.loading import load_model
    from kgprobe.reasoning.distractors import Protocol

    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit("bench/gpu: no CUDA device here; run it on a GPU machine or pass --device cpu")
    items, pools, conjunction, scale = study_bench.study_prompts(args.source)
    study_args = argparse.Namespace(device=args.device, pairs=args.pairs, prompts_all=args.prompts_all,
                                    prompts_k=args.prompts_k, k=args.k, batch_size=args.batch_size)
    out = {"bench": "gpu", "device": torch.cuda.get_device_name(0) if cuda else args.device,
           "paper_scale": {**scale, "prompts": scale["reasoning_prompts"] + scale["premise_probes"]},
           "models": []}
    peaks = {d: matmul_rate(args.device, d, args.matmul_size) for d in args.dtypes}
    out["matmul_tflops"] = {d: round(r / 1e12, 2) for d, r in peaks.items()}
    configs = Path(args.dir) / "configs"
    names = [m for m in args.models.split(",") if m] or sorted(p.name for p in configs.iterdir())
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            # A preset's prepared configs, or any folder with a config.json and a tokenizer.
            config_dir = Path(name) if Path(name, "config.json").is_file() else configs / name
            name = config_dir.name
            model_dir = random_model(config_dir, Path(tmp) / name)
            entry = {"model": name, "weights": "random (seed 0), the preset's exact config"}
            for dtype in args.dtypes:
                if cuda:
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                study_args.dtype = dtype
                log(f"{name} {dtype}")
                result = study_bench.bench_model(str(model_dir), study_args, items, pools, conjunction,
                                                 scale, peaks[dtype])
                for part in ("all_before", "all", "k"):
                    if part in result:
                        r = result[part]
                        r["fraction_of_matmul"] = round(r.pop("flop_per_s") / peaks[dtype], 4)
                        r.pop("flops")
                if "all_before" in result:
                    result["speedup_vs_one_at_a_time"] = round(
                        result["all"]["prompts_per_s"] / result["all_before"]["prompts_per_s"], 2)
                if cuda:
                    result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
                result.pop("model", None)
                entry[dtype] = result
            if {"float32", "bfloat16"} <= set(args.dtypes):
                loaded = load_model(str(model_dir), device=args.device, dtype="float32")
                vectors = sample_pseudoword_sets(loaded, 1, seed=0)[0]
                del loaded
                sample = items[: args.agreement_prompts]
                requests = [(study_bench.prompt_of(i, conjunction),
                             Protocol(args.k).candidates(pools[i.candidates_key], i.answers, seed=f"0:{i.id}"),
                             vectors) for i in sample]
                entry["bf16_vs_fp32"] = rank_agreement(model_dir, requests, args.device)
            out["models"].append(entry)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["prepare", "run"])
    parser.add_argument("--dir", default=".gpu", help="where prepare writes and run reads the configs")
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--prompts-all", type=int, default=16)
    parser.add_argument("--prompts-k", type=int, default=256)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--agreement-prompts", type=int, default=200)
    parser.add_argument("--matmul-size", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", help="ontology to take the items from (default: the bundled one)")
    args = parser.parse_args()
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    if args.step == "prepare":
        prepare([m for m in args.models.split(",") if m], Path(args.dir))
        return
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    result = run(args)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
