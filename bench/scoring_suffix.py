"""The suffix case of `bench/scoring.py`: a cloze whose slot is followed by a clause.

DM prompts ("One has to be a particular [MASK] if one's composer is a person .") against every
class (785 candidates): a causal LM's score is log P(candidate + suffix | prefix)
(`models/cloze.py`). Three contenders and a naive sample, timed in one interleaved loop:

* kgprobe: `make_scorer(loaded)` (the suffix rule applies; token trie per chunk, each
  candidate with its own suffix positions);
* kgprobe_prefix_only: the same scorer with ``include_suffix=False``, what scoring cost before
  whole-sentence scoring (`ratios.prefix_only_vs_kgprobe` = its speed over kgprobe's);
* lm_eval: HFLM `loglikelihood` with context = text before the slot, continuation = " " +
  candidate + suffix (ids checked against kgprobe's, as in the TP case);
* naive: one full forward per request (prefix + candidate + suffix) on a sample.

`per_request` gives each kgprobe variant's positions run and positions through the LM head
per request: the difference is where the extra cost goes. Returns the dict that
`bench/scoring.py` prints under ``suffix_case``.
"""

from __future__ import annotations

import time

import numpy as np
import torch


def suffix_case(args, loaded, lm) -> dict:
    """DM prompts ("One has to be a particular [MASK] if one's composer is a person .") against
    every class: kgprobe's whole-sentence score (candidate + suffix), the same scorer reading
    the prefix only (the cost before whole-sentence scoring) and lm-eval with continuation =
    " " + candidate + suffix, timed in one interleaved loop as the TP case is."""
    from scoring import lm_eval_pair, log, naive_score  # bench/scoring.py, the caller

    from kgprobe.models.cloze import scores_suffix, suffix_of
    from kgprobe.models.scoring import make_scorer
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.studies.memorization.study import prompts_for, reference_sets, select

    mset = reference_sets(["domain"])["domain"]
    prompts = prompts_for(mset, select(mset.records, "test", args.suffix_prompts), load_templates(), 0)
    assert all(scores_suffix(suffix_of(p)) for p in prompts)
    candidates = list(mset.candidates)
    n_p, n_c = len(prompts), len(candidates)
    whole = make_scorer(loaded)
    prefix_only = make_scorer(loaded, include_suffix=False)
    encoded = [whole.encode(p, candidates) for p in prompts]
    log(f"suffix case: {n_p} DM prompts x {n_c} candidates")
    naive_idx = sorted(set(np.linspace(0, n_c - 1, min(n_c, max(1, args.suffix_naive_requests // max(n_p, 1))))
                           .round().astype(int).tolist()))
    kg, kg_prefix = np.full((n_p, n_c), np.nan), np.full((n_p, n_c), np.nan)
    lm_scores, nv = np.full((n_p, n_c), np.nan), np.full((n_p, len(naive_idx)), np.nan)
    instances, matched = [], np.zeros((n_p, n_c), dtype=bool)
    if lm is not None:
        from lm_eval.api.instance import Instance

        for i, (prompt, (prefix, cands, suffix)) in enumerate(zip(prompts, encoded)):
            row = []
            for j, cand in enumerate(candidates):
                ctx, cont = lm_eval_pair(prompt, cand)
                ctx_ids, cont_ids = lm._encode_pair(ctx, cont)
                matched[i, j] = list(ctx_ids) == prefix.ids and list(cont_ids) == cands[j] + suffix.ids
                row.append(Instance(request_type="loglikelihood", doc={}, arguments=(ctx, cont), idx=j))
            instances.append(row)

    def run_naive(i: int) -> None:
        prefix, cands, suffix = encoded[i]
        with torch.no_grad():
            nv[i] = [naive_score(loaded.model, prefix.ids, cands[j] + suffix.ids) for j in naive_idx]

    contenders = {
        "kgprobe": lambda i: kg.__setitem__(i, whole.score([prompts[i]], candidates, batch_size=args.batch_size)[0]),
        "kgprobe_prefix_only": lambda i: kg_prefix.__setitem__(
            i, prefix_only.score([prompts[i]], candidates, batch_size=args.batch_size)[0]),
        "naive": run_naive,
    }
    if lm is not None:
        contenders["lm_eval"] = lambda i: lm_scores.__setitem__(
            i, [ll for ll, _ in lm.loglikelihood(instances[i], disable_tqdm=True)])
    whole.score([prompts[0]], candidates[:8])  # warm-up, untimed
    prefix_only.score([prompts[0]], candidates[:8])
    whole.stats = {k: 0 for k in whole.stats}
    prefix_only.stats = {k: 0 for k in prefix_only.stats}
    seconds = {name: 0.0 for name in contenders}
    names = list(contenders)
    for i in range(n_p):
        for name in names[i % len(names):] + names[: i % len(names)]:
            t = time.perf_counter()
            contenders[name](i)
            seconds[name] += time.perf_counter() - t
        log(f"suffix prompt {i + 1}/{n_p}: " + ", ".join(f"{k} {v:.1f}s" for k, v in seconds.items()))
    rates = {k: (n_p * len(naive_idx) if k == "naive" else n_p * n_c) / v for k, v in seconds.items()}
    diffs = {"kgprobe_vs_naive": float(f"{np.abs(kg[:, naive_idx] - nv).max():.3g}")}
    ratios = {"kgprobe_vs_naive": round(rates["kgprobe"] / rates["naive"], 2),
              "prefix_only_vs_kgprobe": round(rates["kgprobe_prefix_only"] / rates["kgprobe"], 2)}
    if lm is not None:
        diffs["kgprobe_vs_lm_eval"] = float(f"{np.abs(kg - lm_scores)[matched].max():.3g}") if matched.any() else None
        ratios["kgprobe_vs_lm_eval"] = round(rates["kgprobe"] / rates["lm_eval"], 2)
    per_request = {name: {k: round(v / (n_p * n_c), 2) for k, v in sc.stats.items()}
                   for name, sc in (("kgprobe", whole), ("kgprobe_prefix_only", prefix_only))}
    return {
        "task": "DM", "template": 0, "prompts": n_p, "candidates": n_c, "requests": n_p * n_c,
        "suffix_tokens": [len(e[2].ids) for e in encoded],
        "requests_per_s": {k: round(v, 2) for k, v in rates.items()},
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "ratios": ratios, "max_abs_diff": diffs,
        "token_mismatches": None if lm is None else int((~matched).sum()),
        "per_request": per_request,
        "prompts_differ": bool(n_p < 2 or not np.allclose(kg[0], kg[1])),
        "prefix_only_prompts_differ": bool(n_p < 2 or not np.allclose(kg_prefix[0], kg_prefix[1])),
    }
