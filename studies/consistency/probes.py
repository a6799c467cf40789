"""The memorization probes of a consistency run: prompts, candidate lists and ranks.

A statement is asked as the memorization study asks it: its relation's manual template, the
relation's candidate pool (on the bundled ontology the pool of the memorization study's own
sets, so a prompt ranked against every candidate is the same prompt and list in both studies,
and the score cache scores it once for both), and the candidate protocol
(`reasoning.distractors`). Under ``--candidates K`` a question's list holds every answer true
of it and K − 1 seeded distractors that are not, so each gold competes with K − 1 false
candidates however many true answers its subject has; the list depends on the question, not
on the template, so every template ranks the same candidates.

Filtered ranking leaves a gold's other true answers out of its rank (Messi is both a soccer
player and an athlete: neither counts against the other); raw ranking counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from kgprobe.ontology.verbalize import TemplateSet, capitalize
from kgprobe.reasoning.distractors import Protocol
from kgprobe.reasoning.items import Verbalizer
from kgprobe.studies.metrics import gold_indices, ranks_of

from .statements import Statement

#: Answers shown per statement in predictions and the report's examples.
TOP = 5


def template_of(templates: TemplateSet, relation: str, template: int):
    """Manual template `template` of the relation; relations with fewer templates (SPO, DM,
    RG and facts have one) use their first, so ``--template 2`` still asks every statement."""
    manual = templates[relation].manual
    return manual[template] if template < len(manual) else manual[0]


def prompt_of(statement: Statement, templates: TemplateSet, verb: Verbalizer,
              template: int) -> str:
    meta = verb.property_meta(statement.prop) if statement.relation in ("domain", "range") else None
    return capitalize(template_of(templates, statement.relation, template).render(
        text_a=statement.subject, text_b=statement.other, meta=meta))


@dataclass
class Candidates:
    """Every question's candidate list, built from the pools and the true answers."""

    pools: dict[str, list[str]]  # relation → its candidate pool
    truth: dict[tuple[str, str, str], set[str]]  # question → its true answers
    protocol: Protocol
    seed: int

    def true_of(self, statement: Statement) -> frozenset[str]:
        return frozenset(self.truth.get(statement.question, set()) | {statement.answer})

    def of(self, statement: Statement) -> tuple[str, ...]:
        pool = self.pools[statement.relation]
        true = sorted(self.true_of(statement))
        if self.protocol.k is None:
            known = set(pool)
            return tuple(pool) + tuple(a for a in true if a not in known)
        wide = Protocol(self.protocol.k - 1 + len(true))
        seed = f"{self.seed}:{'|'.join(statement.question)}"
        return tuple(wide.candidates(pool, true, seed=seed))


@dataclass
class Probe:
    """A statement under one template: its prompt, candidates and true answers."""

    statement: Statement
    prompt: str
    candidates: tuple[str, ...]
    true: frozenset[str]


def rank_statement(probe: Probe, row: np.ndarray, ranking: str) -> dict:
    """The statement's prediction: the gold's rank (filtered or raw), its reciprocal, and the
    model's top answers (each marked true or not)."""
    gold = gold_indices(probe.candidates, [probe.statement.answer])
    also = gold_indices(probe.candidates, probe.true - {probe.statement.answer})
    rank = int(ranks_of(row, gold, filtered=ranking == "filtered", also_true=also).min())
    order = np.argsort(-row, kind="stable")[:TOP]
    top = [[probe.candidates[i], round(float(row[i]), 4), probe.candidates[i] in probe.true]
           for i in order]
    s = probe.statement
    return {"statement": s.key, "relation": s.relation, "subject": s.subject, "other": s.other,
            "answer": s.answer, "prompt": probe.prompt, "n_candidates": len(probe.candidates),
            "rank": rank, "rr": 1.0 / rank, "top": top}


def distinct_requests(probes: Sequence[Probe]) -> list[tuple[str, tuple[str, ...]]]:
    """The (prompt, candidates) pairs to score, each once, in first-seen order: statements of
    one question under filtered ranking with every candidate share one scoring."""
    return list(asked_golds(probes))


def asked_golds(probes: Sequence[Probe]) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """Each distinct (prompt, candidates) pair a unit scores, in the order it scores them,
    with the answers of the statements that share it: the run scores these keys
    (`distinct_requests`), the dry run writes one line per key with its answers as golds."""
    asked: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for p in probes:
        asked.setdefault((p.prompt, p.candidates), []).append(p.statement.answer)
    return asked
