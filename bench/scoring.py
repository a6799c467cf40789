"""Benchmark: candidate scoring by kgprobe against a naive loop and lm-evaluation-harness.

    python bench/scoring.py [--model smollm2-135m] [--prompts 4] [--template 0]
                            [--batch-size 256] [--naive-requests 400] [--threads N]
                            [--lm-eval-softmax-dtype float64|float32] [--skip-lm-eval]
                            [--suffix-prompts 2] [--suffix-naive-requests 100]

The requests are the TP (rdf:type) task's: the first ``--prompts`` test prompts of the
paper's reference set (manual template ``--template``) against the task's full candidate
set (~790 class labels), i.e. prompts x candidates (prompt, candidate) pairs; a request's
score is log P(candidate tokens | text before [MASK]) (sum pooling; the TP slot is followed
only by a full stop, which the suffix rule does not score). Three contenders:

* kgprobe: `make_scorer(load_model(model)).score([prompt], candidates, batch_size=B)`,
  one call per prompt (token trie per chunk of B candidates, see `prompts/causal.py`).
* naive: one full-sequence forward per request (prefix + candidate ids, batch 1, no
  cache, float64 log-softmax): the reference loop of `tests/test_scoring_causal.py`. It
  is slow, so it runs on ``--naive-requests`` requests spread evenly over every prompt's
  candidates (0: all); its requests/s are measured on those.
* lm_eval: lm-evaluation-harness's `HFLM(pretrained=<converted model dir>,
  backend="causal", dtype="float32", batch_size=B).loglikelihood` on `Instance`s with
  context = the prompt's text before [MASK] (without its trailing space) and continuation
  = " " + candidate. HFLM loads its own copy of the same weights, tokenizes context +
  continuation jointly and splits (`_encode_pair`); the split is checked against
  kgprobe's ids (`CausalScorer.encode`) request by request, and scores are compared on
  the requests whose ids agree (``token_mismatches`` counts the others). Its default
  logits cache stays on (requests with identical inputs, e.g. all one-token
  continuations of a prompt, share one row). ``softmax_dtype`` is float64 by default:
  with lm-eval's own default (float32 log-softmax and float32 sums;
  ``--lm-eval-softmax-dtype float32``, ~10-20 % faster) its scores of long candidates
  (5-13 tokens, log-probabilities down to -80) drift up to ~2e-4 from a float64
  reference, while kgprobe's and the naive loop's stay within ~4e-5; with float64 all
  three agree within 1e-4, which is what "equal scores" asks for.
* float64 reference (untimed): for the requests where the contenders disagree most
  (``--reference-requests``), a float64 copy of the model scores them with the naive
  loop; ``float64_reference`` gives each contender's largest error there.

Timing: one warm-up call per contender, then per prompt each contender runs once, in an
order that rotates from prompt to prompt, so load from other processes hits all of them
alike; requests/s = requests / summed seconds. Only the scoring calls are timed (for
lm-eval the `loglikelihood` call, which includes its tokenization; kgprobe's includes its
own). ``max_abs_diff`` compares scores pairwise (kgprobe vs lm_eval on all matched
requests; either vs naive on the naive sample).

FLOP/s: the machine's matmul FLOP/s is measured with torch (float32 n x n matmuls,
``--matmul-size``, best of 3) before every prompt's round, with the same thread count;
its best value is the physical limit. kgprobe's scoring loop does, by the usual
approximation, ``2 * P_body * positions + 2 * hidden * vocab * logit_positions`` FLOPs,
where P_body counts the parameters outside the input embedding (and outside an untied LM
head), positions are the token positions its forward passes ran (prefix included, once
per chunk) and logit_positions those that went through the LM head (the scorer's
``stats``). Attention score/value products are not counted (computed densely under the
tree mask they add about N/3900 of the counted work for a forward of N positions with
SmolLM2: ~4 % at the ~150 positions of a 256-candidate chunk), nor are norms,
activations and the log-softmax. ``fraction_of_matmul`` = achieved / limit.

Threads: on a CPU shared with other jobs, use ``--threads 1``. With 2 threads on 2
busy cores every op waits for the descheduled thread at its barrier: small element-wise
ops become 20-25x slower, the naive loop ~9x, and all rates turn to noise.

Suffix case (``suffix_case`` in the JSON line; ``--suffix-prompts 0`` skips it): DM prompts,
whose slot is followed by a clause, against every class, where a request's score is
log P(candidate + the text after the slot | the text before it); kgprobe, kgprobe reading the
prefix only, lm-eval (continuation = candidate + suffix) and a naive sample, timed in the same
run (`bench/scoring_suffix.py`).

Prints one JSON line on stdout (progress on stderr). Targets: kgprobe >= 5x lm_eval at
equal scores (|diff| <= 1e-4) and >= 30 % of the measured matmul FLOP/s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from importlib.metadata import PackageNotFoundError, version


def log(msg: str) -> None:
    print(f"[bench/scoring] {msg}", file=sys.stderr, flush=True)


def matmul_flops(n: int, repeats: int = 3) -> float:
    """Best float32 n x n matmul rate (FLOP/s) of `repeats` runs after a warm-up."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def body_params(model) -> tuple[int, int, int]:
    """(parameters outside the input embedding and an untied LM head, hidden, vocab)."""
    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings()
    total = sum(p.numel() for p in model.parameters())
    body = total - emb.numel()
    if out is not None and out.weight.data_ptr() != emb.data_ptr():
        body -= out.weight.numel()
    vocab, hidden = emb.shape
    return body, hidden, vocab


def lm_eval_pair(prompt: str, candidate: str) -> tuple[str, str]:
    """(context, continuation) for lm-eval: the slot's preceding space goes to the continuation,
    and the text after the slot follows the candidate where kgprobe scores it (`models.cloze`)."""
    from kgprobe.models.cloze import scores_suffix

    before, after = prompt.split("[MASK]")
    context = before.rstrip()
    cand = " ".join(candidate.split())
    return context, (" " if before != context else "") + cand + (after if scores_suffix(after) else "")


def naive_score(model, prefix_ids: list[int], cand: list[int]) -> float:
    import torch

    ids = torch.tensor([prefix_ids + cand])
    lp = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
    p = len(prefix_ids)
    return float(sum(lp[p - 1 + t, cand[t]] for t in range(len(cand))))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=4, help="TP test prompts (default 4)")
    ap.add_argument("--template", type=int, default=0, help="manual TP template index")
    ap.add_argument("--batch-size", type=int, default=256, help="kgprobe and lm-eval batch size")
    ap.add_argument("--naive-requests", type=int, default=400, help="requests for the naive loop (0: all)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--matmul-size", type=int, default=2048)
    ap.add_argument("--skip-lm-eval", action="store_true")
    ap.add_argument("--lm-eval-softmax-dtype", choices=("float64", "float32"), default="float64",
                    help="HFLM softmax_dtype (float32 = lm-eval's default behaviour)")
    ap.add_argument("--reference-requests", type=int, default=8,
                    help="most-disagreeing requests re-scored by a float64 model (0: none)")
    ap.add_argument("--suffix-prompts", type=int, default=2,
                    help="DM test prompts of the suffix case (0: skip it)")
    ap.add_argument("--suffix-naive-requests", type=int, default=100,
                    help="requests of the suffix case's naive loop")
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()

    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.models.loading import load_model
    from kgprobe.models.scoring import make_scorer
    from kgprobe.studies.memorization.study import prompts_for, reference_sets, select

    load_before = os.getloadavg()[0]
    loaded = load_model(args.model, device="cpu")
    model = loaded.model
    scorer = make_scorer(loaded)
    mset = reference_sets(["type"])["type"]
    records = select(mset.records, "test", args.prompts)
    prompts = prompts_for(mset, records, load_templates(), args.template)
    candidates = list(mset.candidates)
    n_p, n_c = len(prompts), len(candidates)
    encoded = [scorer.encode(p, candidates) for p in prompts]
    log(f"{n_p} prompts x {n_c} candidates = {n_p * n_c} requests; threads {torch.get_num_threads()}")

    # naive sample: evenly spread over each prompt's candidates
    per_prompt = n_c if args.naive_requests <= 0 else max(1, math.ceil(args.naive_requests / max(n_p, 1)))
    naive_idx = sorted(set(np.linspace(0, n_c - 1, min(per_prompt, n_c)).round().astype(int).tolist()))

    # lm-eval
    lm, lm_reason, lm_version, instances, matched = None, None, None, None, None
    if args.skip_lm_eval:
        lm_reason = "skipped (--skip-lm-eval)"
    else:
        try:
            from lm_eval.api.instance import Instance
            from lm_eval.models.huggingface import HFLM

            lm_version = version("lm_eval")
            lm = HFLM(pretrained=loaded.source, backend="causal", device="cpu", dtype="float32",
                      batch_size=args.batch_size, softmax_dtype=args.lm_eval_softmax_dtype)
        except (ImportError, PackageNotFoundError) as err:
            lm_reason = f"lm-eval not importable: {err}"
        if lm is not None:
            instances, matched = [], np.zeros((n_p, n_c), dtype=bool)
            for i, (prompt, (prefix, cands, _)) in enumerate(zip(prompts, encoded)):
                row = []
                for j, cand in enumerate(candidates):
                    ctx, cont = lm_eval_pair(prompt, cand)
                    ctx_ids, cont_ids = lm._encode_pair(ctx, cont)
                    matched[i, j] = list(ctx_ids) == prefix.ids and list(cont_ids) == cands[j]
                    row.append(Instance(request_type="loglikelihood", doc={}, arguments=(ctx, cont), idx=j))
                instances.append(row)
            log(f"lm-eval {lm_version}: {int((~matched).sum())} requests with other token ids than kgprobe's")

    # contenders: each takes a prompt index, returns its scores
    kg_scores = np.full((n_p, n_c), np.nan)
    lm_scores = np.full((n_p, n_c), np.nan)
    nv_scores = np.full((n_p, len(naive_idx)), np.nan)

    def run_kgprobe(i: int) -> None:
        kg_scores[i] = scorer.score([prompts[i]], candidates, batch_size=args.batch_size)[0]

    def run_lm_eval(i: int) -> None:
        lm_scores[i] = [ll for ll, _greedy in lm.loglikelihood(instances[i], disable_tqdm=True)]

    def run_naive(i: int) -> None:
        prefix, cands, _ = encoded[i]
        with torch.no_grad():
            nv_scores[i] = [naive_score(model, prefix.ids, cands[j]) for j in naive_idx]

    contenders = {"kgprobe": run_kgprobe, "naive": run_naive}
    if lm is not None:
        contenders["lm_eval"] = run_lm_eval

    # warm-up (first forwards, kgprobe's one-time tree check), not timed
    scorer.score([prompts[0]], candidates[:8], batch_size=args.batch_size)
    with torch.no_grad():
        naive_score(model, encoded[0][0].ids, encoded[0][1][0])
    if lm is not None:
        lm.loglikelihood(instances[0][:8], disable_tqdm=True)
    scorer.stats = {k: 0 for k in scorer.stats}

    seconds = {name: 0.0 for name in contenders}
    matmul = []
    names = list(contenders)
    for i in range(n_p):
        matmul.append(matmul_flops(args.matmul_size))
        order = names[i % len(names):] + names[: i % len(names)]
        for name in order:
            t = time.perf_counter()
            contenders[name](i)
            seconds[name] += time.perf_counter() - t
        log(f"prompt {i + 1}/{n_p}: " + ", ".join(f"{k} {v:.1f}s" for k, v in seconds.items())
            + f"; matmul {matmul[-1] / 1e9:.1f} GFLOP/s")
    matmul.append(matmul_flops(args.matmul_size))

    n_req = n_p * n_c
    n_naive = n_p * len(naive_idx)
    rates = {"kgprobe": n_req / seconds["kgprobe"], "naive": n_naive / seconds["naive"]}
    if lm is not None:
        rates["lm_eval"] = n_req / seconds["lm_eval"]

    def maxdiff(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float | None:
        d = np.abs(a - b)
        if mask is not None:
            d = d[mask]
        return float(d.max()) if d.size else None

    kg_at_naive = kg_scores[:, naive_idx]
    diffs = {"kgprobe_vs_naive": maxdiff(kg_at_naive, nv_scores)}
    if lm is not None:
        diffs["kgprobe_vs_lm_eval"] = maxdiff(kg_scores, lm_scores, matched)
        diffs["lm_eval_vs_naive"] = maxdiff(lm_scores[:, naive_idx], nv_scores, matched[:, naive_idx])

    # float64 reference on the most-disagreeing requests (untimed)
    reference = None
    if args.reference_requests > 0:
        import copy

        worst: dict[tuple[int, int], float] = {}
        def consider(d: np.ndarray, cols: list[int], mask: np.ndarray | None) -> None:
            d = np.where(mask, d, -1.0) if mask is not None else d
            for flat in np.argsort(-d, axis=None)[: args.reference_requests]:
                i, c = np.unravel_index(flat, d.shape)
                worst[(int(i), int(cols[c]))] = max(worst.get((int(i), int(cols[c])), 0.0), float(d[i, c]))
        consider(np.abs(kg_at_naive - nv_scores), naive_idx, None)
        if lm is not None:
            consider(np.abs(kg_scores - lm_scores), list(range(n_c)), matched)
        picked = sorted(worst, key=worst.get, reverse=True)[: args.reference_requests]
        m64 = copy.deepcopy(model).double()
        errs = {"kgprobe": 0.0}
        if lm is not None:
            errs["lm_eval"] = 0.0
        with torch.no_grad():
            for i, j in picked:
                prefix, cands, _ = encoded[i]
                ref = naive_score(m64, prefix.ids, cands[j])
                errs["kgprobe"] = max(errs["kgprobe"], abs(kg_scores[i, j] - ref))
                if lm is not None and matched[i, j]:
                    errs["lm_eval"] = max(errs["lm_eval"], abs(lm_scores[i, j] - ref))
                if j in naive_idx:
                    errs["naive"] = max(errs.get("naive", 0.0), abs(nv_scores[i, naive_idx.index(j)] - ref))
        del m64
        reference = {"requests": len(picked), "max_abs_err": {k: float(f"{v:.3g}") for k, v in errs.items()}}

    body, hidden, vocab = body_params(model)
    stats = dict(scorer.stats)
    flops = 2 * body * stats["positions"] + 2 * hidden * vocab * stats["logit_positions"]
    achieved = flops / seconds["kgprobe"]
    limit = max(matmul)

    ratios = {"kgprobe_vs_naive": rates["kgprobe"] / rates["naive"]}
    if lm is not None:
        ratios["kgprobe_vs_lm_eval"] = rates["kgprobe"] / rates["lm_eval"]
        ratios["lm_eval_vs_naive"] = rates["lm_eval"] / rates["naive"]

    def r(x, nd=4):
        return None if x is None else round(x, nd)

    result = {
        "bench": "scoring",
        "model": args.model,
        "task": "TP",
        "template": args.template,
        "prompts": n_p,
        "candidates": n_c,
        "requests": n_req,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "kgprobe": {"requests_per_s": r(rates["kgprobe"], 2), "seconds": r(seconds["kgprobe"], 2)},
        "naive": {"requests_per_s": r(rates["naive"], 2), "seconds": r(seconds["naive"], 2), "requests": n_naive},
        "lm_eval": None if lm is None else {
            "requests_per_s": r(rates["lm_eval"], 2), "seconds": r(seconds["lm_eval"], 2),
            "version": lm_version, "token_mismatches": int((~matched).sum()),
            "softmax_dtype": args.lm_eval_softmax_dtype,
        },
        "ratios": {k: r(v, 2) for k, v in ratios.items()},
        "max_abs_diff": {k: (None if v is None else float(f"{v:.3g}")) for k, v in diffs.items()},
        "float64_reference": reference,
        "flops": {
            "matmul_flops_per_s": limit,
            "matmul_gflops_all": [round(m / 1e9, 1) for m in matmul],
            "matmul_size": args.matmul_size,
            "scoring_flops": flops,
            "scoring_flops_per_s": achieved,
            "fraction_of_matmul": r(achieved / limit, 3),
            "positions": stats["positions"],
            "logit_positions": stats["logit_positions"],
            "forwards": stats["forwards"],
            "body_params": body,
        },
        "targets": {
            "speedup_vs_lm_eval_ge_5": None if lm is None else bool(ratios["kgprobe_vs_lm_eval"] >= 5),
            "abs_diff_le_1e-4": bool(all(v is not None and v <= 1e-4 for v in diffs.values())),
            "fraction_of_matmul_ge_0.3": bool(achieved / limit >= 0.3),
        },
        "env": {
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "loadavg_before": round(load_before, 2),
            "loadavg_after": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
    }
    if lm is None:
        result["lm_eval_reason"] = lm_reason
    if args.suffix_prompts > 0:
        from scoring_suffix import suffix_case  # bench/ is the script's folder

        result["suffix_case"] = suffix_case(args, loaded, lm)
    result["env"]["loadavg_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
