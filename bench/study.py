"""Benchmark: how fast the premise-ablation study runs here, and how long the paper-scale one takes.

    python bench/study.py [--models smollm2-135m,gemma3-270m] [--prompts-all 2]
                          [--prompts-k 16] [--k 20] [--threads 1] [--device cpu] [--dtype float32]
                          [--source ONTOLOGY] [--matmul-size 1024]

For each preset it scores a seeded sample of the study's own prompts (reasoning items of the
bundled ontology, both premises written, one pseudoword pair) and prints ONE JSON line with,
per model:

* ``all``: prompts/s and positions/s against every candidate of the item's kind
  (``--candidates all``), with prompts batched through the token trie (``after``) and one at
  a time (``before``: the scorer before cross-prompt batching), and each one's fraction of
  the measured matmul FLOP/s (FLOPs counted as in ``bench/scoring.py``:
  ``2·P_body·positions + 2·hidden·vocab·logit_positions``);
* ``k``: the same against the gold and K − 1 seeded distractors (``--candidates 20``), each
  sampled item with ``--pairs`` pseudoword pairs (which share its candidates, as in the study);
* ``cache``: the hit rate and the seconds of a rerun of the ``all`` sample through the score
  cache (in a temporary directory);
* ``paper_scale``: the prompts of the paper-scale study (every reasoning item, 10 pairs, every
  manual template, the 4 cells each item × pair falls in, plus the premise-classification
  probes) and its projected hours here under both protocols (prompts / prompts/s; the sample
  is uniform over items, so the mix of rules and candidate kinds matches the study's).

Only scoring is timed (not model loading). Use ``--threads 1`` on a shared CPU. ``--source``
takes the items from another ontology (a file or folder `kgprobe kg load` reads; the paper
scale then counts its items), and a model may be a saved model's folder: the test suite runs
the script that way at a tiny size (tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scoring import body_params, matmul_flops  # noqa: E402 (the same measures as bench/scoring.py)


def log(msg: str) -> None:
    print(f"[bench/study] {msg}", file=sys.stderr, flush=True)


def study_prompts(path: str | None = None):
    """Every reasoning item of the bundled ontology (or the one at `path`), its candidate pool,
    the paper-scale count."""
    from kgprobe.ontology.loaders import bundled_source, load_source
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.items import item_closure, reasoning_items
    from kgprobe.reasoning.memorizing import candidate_sets

    source = load_source(path) if path else bundled_source()
    templates = load_templates()
    items = [i for rule_items in reasoning_items(source.ontology, item_closure(source.ontology, source.triples),
                                                 templates).values() for i in rule_items]
    pools = candidate_sets(source.ontology)
    pairs = 10
    # Each item × pair lands in 4 of the 9 cells; every manual template of its hypothesis.
    reasoning = sum(4 * pairs * max(1, len(i.hypotheses)) for i in items)
    # Premise probes: P1 once per item, P2 once per item and pair (upper bound: no sharing).
    probes = sum(1 + pairs for _ in items)
    return items, pools, templates.conjunction, {"items": len(items), "pairs": pairs,
                                                 "reasoning_prompts": reasoning,
                                                 "premise_probes": probes}


def prompt_of(item, conjunction: str) -> str:
    from kgprobe.ontology.verbalize import reasoning_text

    return reasoning_text([p.text for p in item.premises], conjunction, item.conclusion["text"])


#: Every matmul rate measured during the run; the best is the machine's limit (other jobs on
#: shared cores only ever lower a measurement).
PEAKS: list[float] = []
#: The side of the measuring matmuls (``--matmul-size``).
MATMUL_SIZE = [1024]


def run_scoring(scorer, requests, batch_size: int) -> dict:
    """Score (prompt, candidates, vectors) requests grouped by candidates; time and count."""
    from kgprobe.studies.probes import Request, score_requests

    PEAKS.append(matmul_flops(MATMUL_SIZE[0]))
    before = dict(getattr(scorer, "stats", {}) or {})
    t = time.perf_counter()
    score_requests(scorer, [Request(p, tuple(c), v) for p, c, v in requests],
                   batch_size=batch_size, desc="scoring", progress=False)
    seconds = time.perf_counter() - t
    stats = getattr(scorer, "stats", {}) or {}
    return {"seconds": seconds, "positions": stats.get("positions", 0) - before.get("positions", 0),
            "logit_positions": stats.get("logit_positions", 0) - before.get("logit_positions", 0),
            "prompts": len(requests)}


def rates(run: dict, body: int, hidden: int, vocab: int, peak: float) -> dict:
    flops = 2 * body * run["positions"] + 2 * hidden * vocab * run["logit_positions"]
    return {"flops": flops,"prompts_per_s": round(run["prompts"] / run["seconds"], 4),
            "positions_per_s": round(run["positions"] / run["seconds"], 1),
            "flop_per_s": flops / run["seconds"],
            "seconds": round(run["seconds"], 2), "prompts": run["prompts"]}


def bench_model(name: str, args, items, pools, conjunction, scale, peak) -> dict:
    from kgprobe.models.loading import load_model
    from kgprobe.models.score_cache import CachedScorer, ScoreCache
    from kgprobe.pseudowords.sampler import sample_pseudoword_sets
    from kgprobe.reasoning.distractors import Protocol

    loaded = load_model(name, device=args.device, dtype=args.dtype)
    body, hidden, vocab = body_params(loaded.model)
    pairs = sample_pseudoword_sets(loaded, args.pairs, seed=0)
    vectors = pairs[0]
    rng = random.Random(f"bench:{name}")
    sample = rng.sample(items, max(args.prompts_all, args.prompts_k))

    def requests(n: int, protocol: Protocol):
        return [(prompt_of(i, conjunction),
                 protocol.candidates(pools[i.candidates_key], i.answers, seed=f"0:{i.id}"), vectors)
                for i in sample[:n]]

    every = requests(args.prompts_all, Protocol(None))
    out = {"model": name, "dtype": args.dtype, "device": loaded.device}
    scorer = loaded.scorer()
    run_scoring(scorer, every[:1], args.batch_size)  # warm-up (tree check, first allocations)
    log(f"{name}: {len(every)} prompts x all candidates, batched")
    after = run_scoring(scorer, every, args.batch_size)
    single = loaded.scorer()
    if hasattr(single, "batch_prompts"):
        single.batch_prompts = False
        log(f"{name}: the same, one prompt at a time")
        before = run_scoring(single, every, args.batch_size)
        out["all_before"] = rates(before, body, hidden, vocab, peak)
    out["all"] = rates(after, body, hidden, vocab, peak)
    # Whether the trie's tree-attention pass was used (its one-time check passed) or the
    # scorer fell back to one forward per prompt: a fallback explains a slow dtype.
    out["tree_batched"] = getattr(scorer, "_tree_ok", None)
    # As in the study: an item's pseudoword pairs (and settings) share its K candidates.
    per_item = requests(max(1, args.prompts_k // args.pairs), Protocol(args.k))
    with_pairs = [(p, c, v) for p, c, _ in per_item for v in pairs]
    log(f"{name}: {len(with_pairs)} prompts x K={args.k} ({args.pairs} pairs per item)")
    out["k"] = rates(run_scoring(scorer, with_pairs, args.batch_size), body, hidden, vocab, peak)
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedScorer(loaded.scorer(), loaded, ScoreCache(tmp))
        small = every[: max(1, len(every) // 2)]
        run_scoring(cached, small, args.batch_size)
        hits = cached.hits
        rerun = run_scoring(cached, small, args.batch_size)
        out["cache"] = {"rerun_hit_rate": (cached.hits - hits) / len(small),
                        "rerun_seconds": round(rerun["seconds"], 3),
                        "first_run_seconds_per_prompt": round(after["seconds"] / after["prompts"], 2)}
    total = scale["reasoning_prompts"] + scale["premise_probes"]
    out["paper_scale_hours"] = {
        "all": round(total / out["all"]["prompts_per_s"] / 3600, 1),
        f"K={args.k}": round(total / out["k"]["prompts_per_s"] / 3600, 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--prompts-all", type=int, default=2)
    parser.add_argument("--prompts-k", type=int, default=16)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=4, help="pseudoword pairs per item in the K sample")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--source", help="ontology to take the items from (default: the bundled one)")
    parser.add_argument("--matmul-size", type=int, default=1024, help="side of the measuring matmuls")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    MATMUL_SIZE[0] = args.matmul_size
    t0 = time.perf_counter()
    items, pools, conjunction, scale = study_prompts(args.source)
    if not items:
        raise SystemExit(f"bench/study: {args.source or 'the bundled ontology'} has no reasoning items")
    peak = max(matmul_flops(args.matmul_size) for _ in range(3))
    PEAKS.append(peak)
    results = [bench_model(m.strip(), args, items, pools, conjunction, scale, peak)
               for m in args.models.split(",") if m.strip()]
    peak = max(PEAKS)
    for result in results:
        for part in ("all_before", "all", "k"):
            if part in result:
                r = result[part]
                r["fraction_of_matmul"] = round(r.pop("flop_per_s") / peak, 3)
                r.pop("flops")
    print(json.dumps({"bench": "study", "source": args.source or "bundled", "threads": args.threads, "cpu_count": os.cpu_count(),
                      "matmul_flops": round(peak / 1e9, 2), "matmul_unit": "GFLOP/s",
                      "paper_scale": {**scale, "prompts": scale["reasoning_prompts"] + scale["premise_probes"]},
                      "models": results, "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
