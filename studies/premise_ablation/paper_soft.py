"""Soft templates and soft conjunctions under `--protocol paper` (OntoProbe §3.1.1, §3.2.1,
Appendix A), trained as the official code's `--mode fs --trained_soft load` runs train them.

Phase 1, per memorizing relation a rule's soft form uses: three soft tokens between the
subject and [MASK] (`soft` in reasoning/paper_protocol.toml), started from the official words
(`soft_init`: "is a particular", "implies the property", "'s domain is", "'s range is"),
trained on the relation's train records (0–9) and kept at the epoch with the best MRRa on its
dev records (10–19).

Phase 2, per rule, per way of writing the premises (both, P1 only, P2 only, neither) and per
pseudoword pair where the soft prompt has a pseudoword slot: the conjunction tokens (started
from the input embeddings' spread) and a copy of each position's phase-1 tokens (P1's, P2's,
the hypothesis's: `relations` in the toml), all trained together on the rule's first 10 test
items (records 20–29) written that way, kept at the best MRRa on the next 10 (records 30–39).
So the official code does: in its fs mode `select_premise` puts the first 20 *test* records
before the cell's selection and `load_data` trains on 10 and selects on the next 10 of them,
which are scored again in any cell whose split keeps them. It fine-tunes its whole soft
embedding, the loaded templates with the conjunctions. The cells that write their premises
alike share one training, as the official runs of those cells train on the same prompts.

Both phases run `soft_recipe.train_recipe` (Appendix A: 100 epochs, AdamW lr 0.5 decaying
linearly, batches of 8, BCE over every candidate, best dev MRRa). Every training is saved to
OUT/soft/paper.pt as it ends, so an interrupted run resumes with the next one.

This module builds no request itself: `paper.py` passes its request builders (the run, the
dry run and this training ask the same requests), and imports this module, not the reverse.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kgprobe.reasoning.paper_items import (
    CONJ,
    PaperItem,
    load_records,
    soft_init_words,
    soft_memorizing_prompt,
    soft_relations,
    soft_slots,
)

#: (P1 written, P2 written): the four soft forms of a rule's prompt
SHAPES = ((True, True), (True, False), (False, True), (False, False))
SPLITS = ("train", "dev")
TRAIN = 10  # data.py's FEWSHOT_TRAIN_NUM (= FEWSHOT_VAL_NUM)


def soft_key(rule: str, p1: bool, p2: bool, pair: int | None) -> str:
    """The key of one phase-2 training (`pair` None: the form has no pseudoword slot, so
    every pair shares it)."""
    shape = ("P1" if p1 else "-") + ("P2" if p2 else "-")
    return f"{rule}:{shape}" + ("" if pair is None else f":pair{pair}")


def relations_needed(rules) -> list[str]:
    return sorted({rel for rule in rules for rel in soft_relations(rule).values()})


def memorizing_probes(relation: str, split: str):
    """A relation's train or dev records under its soft template (phase 1's examples)."""
    return [soft_memorizing_prompt(r) for r in load_records(relation) if r.split == split]


def training_items(items: list[PaperItem], split: str) -> list[PaperItem]:
    """A rule's phase-2 train or dev items: its first 10 test items, or the next 10."""
    return items[:TRAIN] if split == "train" else items[TRAIN:2 * TRAIN]


def phase_two(items: dict[str, list[PaperItem]], pairs: int, has_slot: Callable[[str], bool]):
    """Every phase-2 training: (key, rule, p1, p2, pair); `pair` None where the rule's soft
    form (judged on its first item) has no pseudoword slot."""
    out = []
    for rule, rule_items in items.items():
        sample = rule_items[0]
        for p1, p2 in SHAPES:
            per_pair = has_slot(sample.soft_text(p1, p2))
            for pair in (range(pairs) if per_pair else [None]):
                out.append((soft_key(rule, p1, p2, pair), rule, p1, p2, pair))
    return out


def _word_vectors(loaded, relation: str, seed: int) -> dict:
    """Phase 1's start: each soft token at its official word's input embedding (the mean of
    its subtokens); a model with no tokenizer (a baseline) gets seeded vectors, and its first
    training step says it has no gradients."""
    import torch

    from .soft import init_vectors

    names = soft_slots(relation)
    tokenizer = getattr(loaded, "tokenizer", None)
    if tokenizer is None:
        return init_vectors(loaded, names, seed)
    matrix = loaded.input_embeddings().detach().float().cpu()
    out = {}
    for name, word in zip(names, soft_init_words(relation)):
        ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        out[name] = matrix[torch.tensor(ids)].mean(0).clone().requires_grad_(True)
    return out


def _scorer_fn(scorer, batch_size: int):
    """train_recipe's score: a request's scores over its whole candidate list, the trained
    vectors over its fixed ones (pseudowords)."""

    def score(req, params: dict):
        vectors = {**(req.vectors or {}), **{k: v for k, v in params.items() if k in req.prompt}}
        row = scorer.score_tensor([req.prompt], list(req.candidates), pseudowords=vectors,
                                  batch_size=batch_size)[0]
        return row, list(req.golds)

    return score


def _position_vectors(relations: dict[str, dict], rule: str, text: str) -> dict:
    """Phase 2's start for one form: each soft position's copy of its relation's phase-1
    tokens (only the positions the form writes)."""
    out = {}
    for position, relation in soft_relations(rule).items():
        for name, source in zip(soft_slots(position), soft_slots(relation)):
            if name in text:
                out[name] = relations[relation][source].detach().clone().requires_grad_(True)
    return out


def _check_gradients(study, score: Callable, probe_requests: Callable) -> None:
    """Score one phase-1 example before any training starts: a model with no gradients (a
    baseline) says so in one line, before a progress bar or a file."""
    import torch

    relation = relations_needed(study.config.rules)[0]
    first = probe_requests(study, memorizing_probes(relation, "train")[:1], None, "check")[0]
    with torch.no_grad():
        score(first, _word_vectors(study.loaded, relation, 0))


def train_paper_soft(study, out: Path, *, probe_requests: Callable, item_request: Callable,
                     has_slot: Callable[[str], bool], progress: bool = False) -> dict:
    """Train (or reload) every soft vector the run's rules need; returns phase-2 key →
    {slot: vector}. `probe_requests(study, probes, None, desc)` and `item_request(study, rule,
    item, p1, p2, pair, "soft")` are paper.py's builders."""
    import torch

    from kgprobe.atomic import atomic_path, write_json
    from kgprobe.models.score_cache import uncached

    from .soft import init_vectors
    from .soft_recipe import train_recipe

    folder = Path(out) / "soft"
    folder.mkdir(parents=True, exist_ok=True)
    path, log_path = folder / "paper.pt", folder / "paper_training.json"
    store = torch.load(path) if path.exists() else {"relations": {}, "shapes": {}}
    log = json.loads(log_path.read_text(encoding="utf-8")) if log_path.exists() else {}
    cfg = study.config
    score = _scorer_fn(uncached(study.scorer), cfg.settings.batch_size)

    def fit(label: str, params: dict, train: list, dev: list) -> dict:
        log[label] = train_recipe(score, params, train, dev, epochs=cfg.soft_epochs,
                                  label=label, progress=progress)
        return {k: v.detach().clone() for k, v in params.items()}

    def save() -> None:
        with atomic_path(path) as tmp:
            torch.save(store, tmp)
        write_json(log_path, log)

    _check_gradients(study, score, probe_requests)
    builders = {"probe_requests": probe_requests, "item_request": item_request,
                "has_slot": has_slot}
    for n, (label, rule, examples) in enumerate(trainings(study, **builders)):
        if label in store["relations"] or label in store["shapes"]:
            continue
        if rule is None:  # phase 1: a relation's soft template
            params = _word_vectors(study.loaded, label, cfg.seed * 1000 + n)
            store["relations"][label] = fit(label, params, examples["train"], examples["dev"])
        else:  # phase 2: a rule's form, the conjunctions with copies of the templates
            text = examples["train"][0].prompt
            params = _position_vectors(store["relations"], rule, text)
            params.update(init_vectors(study.loaded, [c for c in CONJ if c in text],
                                       cfg.seed * 1000 + 999))
            store["shapes"][label] = fit(label, params, examples["train"], examples["dev"])
        save()
    return store["shapes"]


def trainings(study, *, probe_requests: Callable, item_request: Callable,
              has_slot: Callable[[str], bool]):
    """Every training the run's rules need, phase 1's first: (label, rule — None for a
    relation's template —, {"train": requests, "dev": requests})."""
    for relation in relations_needed(study.config.rules):
        yield relation, None, {s: probe_requests(study, memorizing_probes(relation, s), None,
                                                 f"{relation} soft {s}") for s in SPLITS}
    for key, rule, p1, p2, pair in phase_two(study.items, len(study.pseudowords), has_slot):
        yield key, rule, {s: [item_request(study, rule, i, p1, p2, pair or 0, "soft")
                              for i in training_items(study.items[rule], s)] for s in SPLITS}


def training_requests(study, **builders):
    """Every request the trainings score, as (label, split, request): the dry run's."""
    for label, _, examples in trainings(study, **builders):
        for split in SPLITS:
            for req in examples[split]:
                yield label, split, req
