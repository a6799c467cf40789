"""`kgprobe export lm-eval --protocol paper`: the paper protocol's probes as lm-eval documents.

The memorizing prompts and reasoning items are `reasoning.paper_items`' (the official code's
wording, test slices and gold lists); reasoning items are written with both premises, and every
pseudoword slot, and the literal [X]/[Y] the official code leaves in some rules, as the
letters X and Y (a text engine takes no vectors; the paper's §5 writes X and Y for ChatGPT).
"""

from __future__ import annotations

from kgprobe.errors import KgprobeError
from kgprobe.prompts.lm_eval_tasks import ClozeDoc, choose_candidates, split_at_mask
from kgprobe.reasoning.distractors import parse_protocol
from kgprobe.reasoning.paper_items import (
    RELATIONS,
    RULES,
    candidates_for,
    memorizing_prompts,
    n_templates,
    paper_items,
)

LETTERS = {"[X0]": "X", "[Y0]": "Y", "[X]": "X", "[Y]": "Y"}


def letters(text: str) -> str:
    for slot, letter in LETTERS.items():
        text = text.replace(slot, letter)
    return text


def _doc(doc_id: str, study: str, task: str, template: str, prompt: str, answers, pool, k,
         seed: int) -> ClozeDoc | None:
    text, suffix = split_at_mask(prompt)
    choices, gold = choose_candidates(pool, list(dict.fromkeys(answers)), k, f"{seed}:paper:{doc_id}")
    if not gold:
        return None
    return ClozeDoc(doc_id, study, task, template, text, suffix, choices, gold,
                    list(dict.fromkeys(answers)), "", "test", parse_protocol(k).name)


def paper_memorizing(settings, name) -> dict[str, list[ClozeDoc]]:
    """task name → documents, one task per relation × paper template."""
    if settings.probes or settings.split != "test":
        raise KgprobeError("--protocol paper: the paper's test records; drop --probes and --split")
    out = {}
    for relation in settings.relations or RELATIONS:
        n = n_templates(relation)
        chosen = range(n) if settings.templates == "all" else [int(settings.templates)]
        for t in chosen:
            if not 0 <= t < n:
                raise KgprobeError(f"--template {t}: task {relation} has paper templates 0–{n - 1}")
            prompts = memorizing_prompts(relation, t)
            prompts = prompts[:settings.limit] if settings.limit is not None else prompts
            pool = candidates_for(prompts[0].candidates, [g for p in prompts for g in p.golds])
            docs = [_doc(f"{relation}-paper-{p.record:05d}-t{t}", "memorizing", relation, str(t),
                         p.text, p.golds, pool, settings.candidates, settings.seed)
                    for p in prompts]
            out[name("memorizing", relation, f"{t}")] = [d for d in docs if d is not None]
    return out


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
