"""`kgprobe export lm-eval --protocol paper`: the paper protocol's reasoning items as lm-eval
documents (its memorizing prompts are the memorization study's own requests, `export._memorizing`).

The reasoning items are `reasoning.paper_items`' (the official code's wording, test slices and
gold lists); they are written with both premises, and every
pseudoword slot, and the literal [X]/[Y] the official code leaves in some rules, as the
letters X and Y (a text engine takes no vectors; the paper's §5 writes X and Y for ChatGPT).
"""

from __future__ import annotations

from kgprobe.prompts.lm_eval_tasks import ClozeDoc, choose_candidates, split_at_mask
from kgprobe.reasoning.distractors import Protocol
from kgprobe.reasoning.paper_items import RULES, candidates_for, paper_items
from kgprobe.seeds import seed_key

LETTERS = {"[X0]": "X", "[Y0]": "Y", "[X]": "X", "[Y]": "Y"}


def letters(text: str) -> str:
    for slot, letter in LETTERS.items():
        text = text.replace(slot, letter)
    return text


def _doc(doc_id: str, study: str, task: str, template: str, prompt: str, answers, pool,
         protocol: Protocol, seed: int) -> ClozeDoc | None:
    text, suffix = split_at_mask(prompt)
    choices, gold = choose_candidates(pool, list(dict.fromkeys(answers)), protocol,
                                      seed_key(seed, "paper", doc_id))
    if not gold:
        return None
    return ClozeDoc(doc_id, study, task, template, text, suffix, choices, gold,
                    list(dict.fromkeys(answers)), "", "test", protocol.name)


def paper_reasoning(settings, name) -> dict[str, list[ClozeDoc]]:
    """task name → documents, one task per rule, both premises written."""
    out = {}
    for rule, items in paper_items(settings.rules or RULES).items():
        pool = candidates_for(items[0].candidates, [g for i in items for g in i.golds])
        chosen = items[:settings.limit] if settings.limit is not None else items
        docs = [_doc(i.id, "reasoning", rule, "manual", letters(i.text()), i.golds, pool,
                     settings.candidates, settings.seed) for i in chosen]
        out[name("reasoning", rule, "manual")] = [d for d in docs if d is not None]
    return out
