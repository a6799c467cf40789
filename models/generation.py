"""Open answers: greedy generation for `LanguageModel.generate` and the baselines' analogues.

A model asked for its own answer continues a prompt greedily (no sampling: the same prompt
gives the same answer, as a ranking run gives the same scores) for at most `max_new_tokens`
tokens, and the answer is cut at the first stop text (a sentence end, a new line). Batched
with *left* padding, so every row's new tokens start at the same position and the padded
positions are masked out of attention.

The baselines answer without a network (`models.baselines.baseline_answers`): ``frequency`` the relation's
most frequent training answer, ``copy`` the first candidate the prompt names (else the most
frequent), ``random`` a seeded candidate — the generative analogues of their rankings, so
generation reports carry the same controls as ranking reports.
"""

from __future__ import annotations

from typing import Any, Sequence

from kgprobe.errors import ModelError

__all__ = ["STOP", "cut", "greedy_generate"]

#: Where an answer ends unless told otherwise: the sentence's end or a new line.
STOP = ("\n", ".")


def cut(text: str, stop: Sequence[str]) -> str:
    """`text` up to its first stop text, without surrounding white space."""
    end = len(text)
    for s in stop:
        if s and (at := text.find(s)) >= 0:
            end = min(end, at)
    return text[:end].strip()


def greedy_generate(loaded: Any, prompts: Sequence[str], *, max_new_tokens: int,
                    stop: Sequence[str], batch_size: int = 16) -> list[str]:
    """Greedy continuations of `prompts` by an in-process causal LM, cut at `stop`."""
    import torch

    if max_new_tokens < 1:
        raise ModelError(f"--max-new-tokens {max_new_tokens}: give at least 1")
    tok = loaded.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    side = tok.padding_side
    out: list[str] = []
    try:
        tok.padding_side = "left"
        for start in range(0, len(prompts), max(1, batch_size)):
            batch = list(prompts[start:start + batch_size])
            enc = tok(batch, return_tensors="pt", padding=True).to(loaded.device)
            with torch.no_grad():
                ids = loaded.model.generate(**enc, do_sample=False, max_new_tokens=max_new_tokens,
                                            pad_token_id=pad, num_beams=1, top_p=None,
                                            top_k=None, temperature=None)
            new = ids[:, enc["input_ids"].shape[1]:]
            out += [cut(text, stop) for text in tok.batch_decode(new, skip_special_tokens=True)]
    finally:
        tok.padding_side = side
    return out
