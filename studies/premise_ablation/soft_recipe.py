"""Appendix A's soft-prompt recipe, as the official code's `probing.soft_prompt_probing` runs it.

100 epochs over the train examples in order (no shuffle), batches of 8; AdamW (torch's
defaults besides lr 0.5, so weight decay 0.01) on the soft vectors only, the model frozen; the
learning rate decays linearly to 0 over every step with no warmup
(`get_linear_schedule_with_warmup(optimizer, 0, total)`); the loss is BCEWithLogits over
**every** candidate of the example (1 for its golds, 0 for the rest; the model's candidate
scores as logits); after each epoch the dev examples are ranked and the vectors of the epoch
with the best dev MRRa are kept (strictly better than the best so far, starting from 0: a run
whose dev MRRa never rises above 0 keeps the initial vectors, as the official code does).

The default protocol's recipe (`soft._train`, a sampled softmax) stays what it was: it fits a
CPU; this one scores every candidate each step and is meant for a GPU (`--soft-recipe paper`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from tqdm import tqdm

EPOCHS, LR, BATCH = 100, 0.5, 8


def bce_over_candidates(scores: torch.Tensor, golds: Sequence[int]) -> torch.Tensor:
    """BCEWithLogits (pos_weight 1) of one example's candidate scores against its multi-hot
    gold vector, averaged over every candidate, as the official loss over a batch row."""
    target = torch.zeros_like(scores)
    target[list(golds)] = 1.0
    return torch.nn.functional.binary_cross_entropy_with_logits(scores, target)


def linear_decay(total_steps: int) -> Callable[[int], float]:
    """The LambdaLR factor of `get_linear_schedule_with_warmup(opt, 0, total_steps)`."""
    return lambda step: max(0.0, (total_steps - step) / max(1, total_steps))


def mrra(rows: Sequence[Sequence[float]], golds: Sequence[Sequence[int]]) -> float:
    """Mean over examples of 1 / (mean gold rank), ranks as the paper's metric.py (ties in
    candidate order)."""
    from kgprobe.studies.paper_metrics import paper_ranks

    values = [1.0 / float(paper_ranks(row, list(g)).mean()) for row, g in zip(rows, golds) if g]
    return float(sum(values) / len(values)) if values else 0.0


#: score(example, params) → (1-D tensor of the example's candidate scores, its gold indices)
ScoreFn = Callable[[object, dict], tuple[torch.Tensor, list[int]]]


def train_recipe(score: ScoreFn, params: dict[str, torch.Tensor], train: list, dev: list, *,
                 epochs: int = EPOCHS, lr: float = LR, batch: int = BATCH, label: str = "soft",
                 progress: bool = False) -> dict:
    """Train `params` in place by the recipe; returns the log (per-epoch train loss and dev
    MRRa, every step's learning rate, the epoch kept)."""
    if not train:
        return {"recipe": "paper", "epochs": 0, "note": "no training examples"}
    opt = torch.optim.AdamW(list(params.values()), lr=lr)
    steps = math.ceil(len(train) / batch) * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_decay(steps))
    best_score, best_epoch = 0.0, None
    best = {k: v.detach().clone() for k, v in params.items()}
    losses, dev_mrra, lrs = [], [], []
    for epoch in tqdm(range(epochs), desc=f"soft {label}", disable=not progress, leave=False):
        total = 0.0
        for start in range(0, len(train), batch):
            chunk = train[start:start + batch]
            lrs.append(opt.param_groups[0]["lr"])
            loss = torch.stack([bce_over_candidates(*score(ex, params)) for ex in chunk]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        with torch.no_grad():
            scored = [score(ex, params) for ex in (dev or train)]
        value = mrra([s.detach().cpu().tolist() for s, _ in scored], [g for _, g in scored])
        losses.append(round(total / math.ceil(len(train) / batch), 6))
        dev_mrra.append(round(value, 6))
        if value > best_score:
            best_score, best_epoch = value, epoch
            best = {k: v.detach().clone() for k, v in params.items()}
    with torch.no_grad():
        for k, v in best.items():
            params[k].copy_(v)
    return {"recipe": "paper", "epochs": epochs, "best_epoch": best_epoch,
            "best_dev_mrra": round(best_score, 6), "train_loss": losses, "dev_mrra": dev_mrra,
            "lr": [round(x, 8) for x in lrs]}
