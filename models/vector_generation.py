"""Open answers to prompts that hold pseudoword slots: greedy generation from input embeddings.

A reasoning prompt names its entities by pseudowords (``[X] is a person . … Therefore , [X]
is a``): meaningless vectors near the model's embeddings, so the answer cannot come from what
the model knows about a real entity. Free generation can keep them: the prompt is encoded as
the causal scorer encodes it (`encoding.PromptEncoder`: each slot one position, its embedding
replaced by the vector), the rows are left-padded, and ``model.generate`` runs from
``inputs_embeds`` — it then returns the new tokens only, the positions after the prompt being
ordinary tokens. Writing the entity's real label instead would let the model answer from
memory, which is what the premise-ablation study takes away; so the vectors are placed, not
replaced.

A prompt without slots takes the same path with plain token embeddings, and its answer is the
one `generation.greedy_generate` gives (tested); a slot given no vector stays literal text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgprobe.errors import ModelError

__all__ = ["greedy_generate_vectors"]


def _encode(encoder, prompt: str, vectors: Mapping[str, Any], start: int | None):
    """(ids with the tokenizer's front specials, slot positions) of one prompt."""
    from kgprobe.models.encoding import split_slots

    encoded, _, _ = encoder.encode_pieces(split_slots(prompt, list(vectors)), at_start=True,
                                          space_before=False)
    ids = encoder.front + encoded.ids
    if not ids and start is not None:
        ids = [start]
    return ids, encoded.shifted(len(encoder.front))


def greedy_generate_vectors(loaded: Any, prompts: Sequence[str],
                            pseudowords: Mapping[str, Any] | Sequence[Mapping[str, Any]], *,
                            max_new_tokens: int, stop: Sequence[str],
                            batch_size: int = 16) -> list[str]:
    """Greedy continuations of `prompts` with each prompt's pseudoword vectors (one mapping
    shared, or one per prompt) at its slots, cut at `stop`."""
    import torch

    from kgprobe.models.encoding import PromptEncoder, inject, normalize_pseudowords
    from kgprobe.models.generation import cut

    if max_new_tokens < 1:
        raise ModelError(f"--max-new-tokens {max_new_tokens}: give at least 1")
    model, tok = loaded.model, loaded.tokenizer
    embedding = model.get_input_embeddings()
    per_prompt = normalize_pseudowords(pseudowords, len(prompts), embedding.weight.shape[1])
    encoder = PromptEncoder(tok)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    device = embedding.weight.device
    out: list[str] = []
    for first in range(0, len(prompts), max(1, batch_size)):
        rows = [_encode(encoder, p, v, start)
                for p, v in zip(prompts[first:first + batch_size], per_prompt[first:first + batch_size])]
        width = max(len(ids) for ids, _ in rows)
        ids = torch.full((len(rows), width), int(pad if pad is not None else 0), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for b, (row, _) in enumerate(rows):
            ids[b, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[b, width - len(row):] = 1
        with torch.no_grad():
            embeds = embedding(ids.to(device))
            for b, (row, slots) in enumerate(rows):
                inject(embeds, b, [(p + width - len(row), n) for p, n in slots],
                       per_prompt[first + b])
            new = model.generate(inputs_embeds=embeds, attention_mask=mask.to(device),
                                 do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=pad,
                                 num_beams=1, top_p=None, top_k=None, temperature=None)
        out += [cut(text, stop) for text in tok.batch_decode(new, skip_special_tokens=True)]
    return out
