"""The reference every causal scoring path is tested against: one full forward per candidate
over the ids the scorer itself encodes (prefix + candidate, + suffix when it is read), with a
float64 log-softmax. Shared by the scoring tests so there is one independent implementation."""

from __future__ import annotations

import numpy as np
import torch


def _pool(values, pooling):
    return {"sum": sum(values), "mean": float(np.mean(values)), "first": values[0], "max": max(values)}[pooling]


def naive_scores(loaded, scorer, prompt, candidates, *, pooling, include_suffix, vectors=None, model=None):
    """One full forward per candidate over the SAME ids the scorer uses (scorer.encode)."""
    model = model or loaded.model
    prefix, cands, suffix = scorer.encode(prompt, candidates, vectors)
    out = []
    for cand in cands:
        ids = prefix.ids + cand + (suffix.ids if include_suffix else [])
        slots = prefix.slots + ([(len(prefix.ids) + len(cand) + p, n) for p, n in suffix.slots] if include_suffix else [])
        with torch.no_grad():
            embeds = model.get_input_embeddings()(torch.tensor([ids]))
            for pos, name in slots:
                embeds[0, pos] = vectors[name]
            lp = torch.log_softmax(model(inputs_embeds=embeds).logits[0].double(), dim=-1)
        p = len(prefix.ids)
        values = [float(lp[p - 1 + t, cand[t]]) for t in range(len(cand))]
        score = _pool(values, pooling)
        if include_suffix:
            skip = {pos for pos, _ in suffix.slots}
            base = p + len(cand)
            score += sum(float(lp[base - 1 + s, suffix.ids[s]]) for s in range(len(suffix.ids)) if s not in skip)
        out.append(score)
    return np.array(out)
