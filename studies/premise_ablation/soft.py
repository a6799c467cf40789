"""Soft templates and soft conjunctions for the premise-ablation study (OntoProbe §3.1.1, §3.2.1).

Phase 1 trains, per relation, the vectors at the `{"soft"}` slots of its soft template on the
paper's memorizing train split (language model frozen), early-stopping on the dev split.
Phase 2 loads them and trains two conjunction vectors — one between written premises, one
before the hypothesis: "P1 <c0> P2 <c1> H" — together with the templates, on reasoning items
held out from the evaluated ones (both premises written).

The objective is a sampled softmax: each gold against `negatives` candidates drawn afresh
every epoch (seeded), since scoring the whole candidate set per step is too slow on CPU;
dev loss uses one fixed draw. The paper trains 100 epochs with lr 0.5; these vectors start
from the embedding distribution's mean and spread, so a smaller lr (default 0.05) is stable.
``--soft-recipe paper`` trains both phases by Appendix A's recipe instead (`soft_recipe.py`:
BCE over every candidate, AdamW lr 0.5 with linear decay, batches of 8, the epoch with the best
dev MRRa kept): a GPU's work. Vectors are saved to OUT/soft/vectors.pt and reused by a rerun.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch
from kgprobe.atomic import atomic_path, write_json
from kgprobe.models.score_cache import uncached
from kgprobe.reasoning.items import RULE_RELATIONS, ReasoningItem
from kgprobe.reasoning.memorizing import RELATIONS
from tqdm import tqdm

from .build import AblationData, AblationSetup


CONJ = ("[conj~0]", "[conj~1]")


def soft_names(relation: str, n: int) -> list[str]:
    return [f"[{relation}~{i}]" for i in range(n)]


@dataclass
class Example:
    prompt: str
    golds: list[str]
    candidates_key: str
    fixed: dict  # pseudoword vectors (not trained)


def _render_soft(data: AblationData, relation: str, subject: str, answer: str | None = None,
                 text_b: str = "", meta: dict | None = None) -> str:
    tmpl = data.templates[relation].soft[0]
    names = soft_names(relation, tmpl.n_soft)
    if answer is None:
        from kgprobe.ontology.verbalize import capitalize

        return capitalize(tmpl.render(text_a=subject, text_b=text_b, meta=meta, soft=names))
    return tmpl.fill(answer, text_a=subject, text_b=text_b, meta=meta, soft=names)


def soft_reasoning_prompt(data: AblationData, item: ReasoningItem, p1: str, p2: str, soft: dict | None) -> str:
    parts = []
    for premise, setting in zip(item.premises, (p1, p2)):
        if setting != "explicit":
            continue
        if premise.relation == "property":  # a fact: its pattern, as with manual templates
            parts.append(premise.text)
        else:
            parts.append(_render_soft(data, premise.relation, premise.subject, premise.answer))
    text = f" {CONJ[0]} ".join(parts)
    subject = "[Y]" if item.rule == "rdfs3" else "[X]"
    hyp = _render_soft(data, item.relation, subject, text_b="[Y]" if item.relation == "property" else "")
    return f"{text} {CONJ[1]} {hyp}".strip()


def init_vectors(loaded, names: list[str], seed: int) -> dict[str, torch.Tensor]:
    """Trainable vectors drawn (seeded) from the input embeddings' per-dimension mean and
    spread, so they start at the scale the model's first layer expects. On the CPU, as the
    seeded draw is: the scorer moves them to the model's device when it places them."""
    matrix = loaded.input_embeddings().detach().float().cpu()
    mean, std = matrix.mean(0), matrix.std(0)
    gen = torch.Generator().manual_seed(seed)
    return {n: (mean + std * torch.randn(matrix.shape[1], generator=gen)).requires_grad_(True)
            for n in names}


def _loss(setup: AblationSetup, examples: list[Example], params: dict, rng: random.Random,
          negatives: int) -> torch.Tensor:
    """Sampled softmax: every gold against negatives drawn from its candidate set."""
    total = torch.zeros(())
    count = 0
    for ex in examples:
        pool = setup.data.candidates[ex.candidates_key]
        in_pool, gold_set = set(pool), set(ex.golds)
        golds = [g for g in ex.golds if g in in_pool]
        if not golds:
            continue
        others = [c for c in pool if c not in gold_set]
        negs = rng.sample(others, min(negatives, len(others)))
        cands = golds + negs
        vectors = {**ex.fixed, **params}
        scores = uncached(setup.model.scorer).score_tensor([ex.prompt], cands, pseudowords=vectors,
                                                 batch_size=setup.config.settings.batch_size)[0]
        neg = scores[len(golds):]
        for g in range(len(golds)):
            total = total - (scores[g] - torch.logsumexp(torch.cat([scores[g:g + 1], neg]), 0))
            count += 1
    return total / max(count, 1)


def _train(setup: AblationSetup, params: dict, train: list[Example], dev: list[Example], *,
           epochs: int, lr: float, seed: int, negatives: int, label: str, progress: bool) -> dict:
    """Adam with linear warmup over the first tenth; keep the vectors with the best dev loss."""
    if not train:
        return {"epochs": 0, "note": "no training examples"}
    opt = torch.optim.AdamW(list(params.values()), lr=lr, weight_decay=0.0)
    warm = max(1, epochs // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: min(1.0, (e + 1) / warm))
    best, best_loss, patience, history = None, float("inf"), 0, []
    for epoch in tqdm(range(epochs), desc=f"soft {label}", disable=not progress, leave=False):
        opt.zero_grad()
        loss = _loss(setup, train, params, random.Random(f"{seed}:{label}:{epoch}"), negatives)
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():
            dev_loss = float(_loss(setup, dev or train, params, random.Random(f"{seed}:{label}:dev"),
                                   negatives))
        history.append([round(loss.item(), 4), round(dev_loss, 4)])
        if dev_loss < best_loss - 1e-4:
            best_loss, patience = dev_loss, 0
            best = {k: v.detach().clone() for k, v in params.items()}
        else:
            patience += 1
            if patience >= 5:
                break
    with torch.no_grad():
        for k, v in (best or {}).items():
            params[k].copy_(v)
    return {"epochs": len(history), "best_dev_loss": round(best_loss, 4), "history": history}


def _recipe_score(setup: AblationSetup):
    """The paper recipe's scorer: an example's scores over every candidate of its set."""
    scorer = uncached(setup.model.scorer)

    def score(ex: Example, params: dict) -> tuple[torch.Tensor, list[int]]:
        pool = list(setup.data.candidates[ex.candidates_key])
        golds = [pool.index(g) for g in dict.fromkeys(ex.golds) if g in pool]
        row = scorer.score_tensor([ex.prompt], pool, pseudowords={**ex.fixed, **params},
                                  batch_size=setup.config.settings.batch_size)[0]
        return row, golds

    return score


def _fit(setup: AblationSetup, params: dict, train: list[Example], dev: list[Example], *,
         lr: float, negatives: int, label: str, progress: bool) -> dict:
    """One training phase by the run's recipe: the default (sampled softmax, dev loss) or
    the paper's (`--soft-recipe paper`, soft_recipe.py)."""
    cfg = setup.config
    if getattr(cfg, "soft_recipe", "default") == "paper":
        from .soft_recipe import train_recipe

        return train_recipe(_recipe_score(setup), params, train, dev, epochs=cfg.soft_epochs,
                            label=label, progress=progress)
    return _train(setup, params, train, dev, epochs=cfg.soft_epochs, lr=lr, seed=cfg.seed,
                  negatives=negatives, label=label, progress=progress)


def _memorizing_examples(setup: AblationSetup, relation: str, split: str) -> list[Example]:
    mset = setup.model.memorizing.get(relation)
    if mset is None:
        return []
    key = setup.data.templates[relation].candidates
    return [Example(_render_soft(setup.data, relation, r.subject, meta=mset.metas.get(r.id)),
                    r.answers, key, {}) for r in mset.records if r.split == split]


def _reasoning_examples(setup: AblationSetup, items: list[ReasoningItem]) -> list[Example]:
    vectors = setup.model.pseudowords[0]
    return [Example(soft_reasoning_prompt(setup.data, i, "explicit", "explicit", None), i.answers,
                    i.candidates_key, dict(vectors)) for i in items]


def held_out_items(data: AblationData, per_rule: int = 8) -> tuple[list, list]:
    """Reasoning items not evaluated, split into train and dev (seeded)."""
    train, dev = [], []
    for rule, items in data.all_items.items():
        used = {i.id for i in data.items.get(rule, [])}
        rest = [i for i in items if i.id not in used]
        random.Random(f"{data.config.seed}:held-out:{rule}").shuffle(rest)
        train += rest[:per_rule]
        dev += rest[per_rule:per_rule + per_rule // 2]
    return train, dev


def train_soft_prompts(setup: AblationSetup, out: Path, *, lr: float = 0.05, negatives: int = 15,
                       progress: bool = True) -> dict:
    """Train (or reload) every soft vector the study needs; returns {"vectors": {...}}."""
    folder = out / "soft"
    path = folder / "vectors.pt"
    if path.exists():
        return {"vectors": torch.load(path)}
    folder.mkdir(parents=True, exist_ok=True)
    cfg = setup.config
    torch.manual_seed(cfg.seed)
    needed = {rel for rule in cfg.rules for rel in RULE_RELATIONS[rule]}
    params: dict[str, torch.Tensor] = {}
    log: dict[str, dict] = {}
    for i, relation in enumerate(sorted(needed)):
        names = soft_names(relation, setup.data.templates[relation].soft[0].n_soft)
        rel_params = init_vectors(setup.model.loaded, names, cfg.seed * 1000 + i)
        if relation in RELATIONS:
            log[relation] = _fit(setup, rel_params, _memorizing_examples(setup, relation, "train"),
                                 _memorizing_examples(setup, relation, "dev"), lr=lr,
                                 negatives=negatives, label=relation, progress=progress)
        params.update(rel_params)
    params.update(init_vectors(setup.model.loaded, list(CONJ), cfg.seed * 1000 + 999))
    train, dev = held_out_items(setup.data)
    log["conjunction"] = _fit(setup, params, _reasoning_examples(setup, train),
                              _reasoning_examples(setup, dev), lr=lr, negatives=negatives,
                              label="conjunction", progress=progress)
    vectors = {k: v.detach().clone() for k, v in params.items()}
    with atomic_path(path) as tmp:
        torch.save(vectors, tmp)
    write_json(folder / "training.json", log)
    return {"vectors": vectors}

