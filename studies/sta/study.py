"""The tacit-assumption study (Weir, Poliak & Van Durme, CogSci 2020) on feature norms.

``kgprobe study sta --norms PATH --model NAME --out DIR`` runs two tasks:

* **retrieval** (`sta_retrieval`): name the concept from 1–10 of its properties
  ("A [MASK] has fur, is big, and has claws ."), under the paper's selection/ordering
  conditions and per feature type: MRR and target probability per number of properties;
* **elicitation** (`sta_elicitation`): list properties of a concept ("Everyone knows that a
  bear has [MASK] ."): mAP over the vocabulary and the sensible set, Spearman ρ with PF,
  with and without "Everyone knows that".

The run is a list of resumable units (`runner`): one per (retrieval condition, number of
properties) and per (elicitation relation, context). Settings that change the numbers are
written to ``OUT/config.json``; a rerun with other settings into the same folder is refused.
``results.csv`` has one row per unit, ``predictions.jsonl`` one line per prompt,
``report.md`` the tables and the figures (``fig2_retrieval.png``, ``fig3_conditions.png``,
``fig4_elicitation.png``); ``summary.json`` the counts (concepts skipped, dropped, probed).

Scoring (`sta_scoring`). Masked LMs: the distribution at the mask (the paper's method).
Causal LMs: by default the retrieval prompt is asked as a question with the slot at the end
("What has fur, is big, and has claws? It is a [MASK] ."), so the next-token distribution
ranks the whole vocabulary in one forward pass, like a mask. ``--template statement`` keeps
the paper's sentence ("A [MASK] has fur …") and scores it by sentence log-likelihood with
each candidate in the slot — one pass over candidate + sentence per candidate, about 500×
the cost, so its candidates default to the norms' concepts. Elicitation prompts end in the
slot already, so causal LMs use the next-token distribution there.

Vocabularies (`--vocab`): ``lama`` — LAMA's common vocabulary ∩ the model's single-token
words (the paper's); ``concepts`` — the norms' concept words (the paper's restricted option;
single-token ones, except for sentence likelihoods, which score any string). Targets outside
the vocabulary are dropped and counted (``summary.json``, ``report.md``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Sequence

from kgprobe.ontology.norms import (
    GROUPS,
    Concept,
    Norms,
    load_word_list,
)
from kgprobe.studies.runner import Unit
from kgprobe.studies.sta import elicitation as eli
from kgprobe.studies.sta import retrieval as ret

from .config import CELL_COLUMNS, NAME, TASKS, VOCABS, StaConfig, StaError, default_vocab_file  # noqa: F401
from .requests import elicitation_units, retrieval_units

__all__ = ["StaConfig", "run_sta", "default_vocab_file", "COLUMNS"]

COLUMNS = [
    "task", "condition", "n_properties", "relation", "context", "n_prompts", "n_concepts",
    "MRR", "R@1", "R@10", "p_target", "median_rank",
    "mAP_vocab", "mAP_sens", "spearman", "spearman_prompts", "gold_in_vocab", "gold_dropped",
    "prompts_without_gold",
]



# --------------------------------------------------------------------------------------
# Concepts and vocabularies
# --------------------------------------------------------------------------------------


def seeded_order(concepts: Sequence[Concept], seed: int, salt: str) -> list[Concept]:
    """All concepts in a seeded random order (keys shuffled, so norms order does not matter)."""
    keys = sorted(c.key for c in concepts)
    random.Random(f"{seed}:{salt}").shuffle(keys)
    by_key = {c.key: c for c in concepts}
    return [by_key[k] for k in keys]


def sample(concepts: Sequence[Concept], limit: int | None, seed: int, salt: str,
           keep=lambda c: True) -> list[Concept]:
    """The first `limit` concepts that pass `keep`, in a seeded order of ALL concepts.

    The order does not depend on `keep`, so two models whose vocabularies admit different
    concepts still probe the same ones wherever both admit them, and a larger limit keeps
    every concept of a smaller one. Returned in norms order.
    """
    order = [c for c in seeded_order(concepts, seed, salt) if keep(c)]
    chosen = {c.key for c in (order if limit is None else order[:max(limit, 0)])}
    return [c for c in concepts if c.key in chosen]


def retrieval_targets(norms: Norms, vocabulary, *, determiner: str, limit: int | None,
                      seed: int) -> tuple[list[Concept], dict]:
    """Concepts that can be targets: consonant-initial (determiner "a"), in the vocabulary."""
    all_concepts = list(norms.concepts.values())
    vowel = [c for c in all_concepts if determiner == "a" and c.vowel_sound]
    kept = [c for c in all_concepts if not (determiner == "a" and c.vowel_sound)]
    outside = [c for c in kept if c.word not in vocabulary]
    eligible = [c for c in kept if c.word in vocabulary]
    ok = {c.key for c in eligible}
    chosen = sample(all_concepts, limit, seed, "concepts", keep=lambda c: c.key in ok)
    counts = {
        "concepts": len(all_concepts),
        "skipped_vowel_sound": len(vowel),
        "dropped_out_of_vocabulary": len(outside),
        "eligible": len(eligible),
        "targets": len(chosen),
        "out_of_vocabulary_examples": [c.word for c in outside[:15]],
    }
    return chosen, counts


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


def parse_conditions(names: Sequence[str] | None) -> list[ret.Condition]:
    every = ret.conditions(GROUPS)
    if not names:
        return every
    valid = {c.name: c for c in every}
    bad = [n for n in names if n not in valid]
    if bad:
        raise StaError(f"unknown retrieval condition(s) {', '.join(bad)}; use {', '.join(valid)}")
    return [valid[n] for n in names]


def lazy_words(path):
    """The LAMA word list, read on first use (only the tasks that need it pay for it, and
    only they need its file: `path` is a callable giving it)."""
    words: list[str] = []

    def get() -> list[str]:
        if not words:
            words.extend(load_word_list(path()))
        return words
    return get


def build_retrieval_units(config: StaConfig, loaded, norms: Norms, lama, conditions: list,
                     summary: dict) -> list[Unit]:
    """Concept retrieval: one unit per condition × number of properties."""
    from kgprobe.models.distributions import (
        SentenceLikelihood,
        single_token_vocabulary,
        word_vocabulary,
    )
    units: list[Unit] = []
    vocab_name = config.retrieval_vocab(loaded.fills_masks)
    template = config.retrieval_template(loaded.fills_masks)
    source = lama() if vocab_name == "lama" else norms.words()
    sentence = not loaded.fills_masks and template == "statement"
    if sentence and vocab_name == "concepts":
        vocabulary = word_vocabulary(source)  # multi-token concepts can be scored too
    else:
        vocabulary = single_token_vocabulary(source, loaded)
    if sentence:  # the slot is not last: one pass per candidate sentence
        scorer = SentenceLikelihood(loaded, vocabulary, batch_size=config.settings.batch_size)
    else:
        scorer = loaded.slot_distribution(vocabulary, batch_size=config.settings.batch_size)
    targets, counts = retrieval_targets(norms, vocabulary, determiner=config.determiner,
                                        limit=config.limit, seed=config.seed)
    if not targets:
        raise StaError(f"no retrieval target left: {counts['concepts']} concepts, "
                       f"{counts['skipped_vowel_sound']} vowel-initial, "
                       f"{counts['dropped_out_of_vocabulary']} outside the {vocab_name} vocabulary; "
                       "try --vocab concepts or --determiner the")
    summary["retrieval"] = {**counts, "vocabulary": vocab_name, "vocabulary_size": len(vocabulary),
                            "template": template,
                            "method": scorer.method, "targets_list": [c.word for c in targets]}

    def run_retrieval(cond: ret.Condition, n: int, prompts: list[ret.RetrievalPrompt]):
        scores = scorer.score([p.prompt for p in prompts])
        probs = scorer.probabilities(scores)
        target_idx = [vocabulary.index(p.target) for p in prompts]
        records = ret.score_prompts(prompts, scores, probs, target_idx, vocabulary.words)
        return ret.summarize(records), records

    for cond, n, prompts in retrieval_units(config, targets, conditions, template):
        units.append(Unit({"task": "retrieval", "condition": cond.name, "n_properties": n},
                          lambda c=cond, n=n, p=prompts: run_retrieval(c, n, p),
                          size=len(prompts)))

    return units


def build_elicitation_units(config: StaConfig, loaded, norms: Norms, lama, summary: dict) -> list[Unit]:
    """Property elicitation: one unit per relation × context."""
    from kgprobe.models.distributions import single_token_vocabulary
    units: list[Unit] = []
    vocabulary_e = single_token_vocabulary(lama(), loaded)
    scorer_e = loaded.slot_distribution(vocabulary_e, batch_size=config.settings.batch_size)
    concepts = sample(list(norms.concepts.values()), config.elicitation_concepts(), config.seed, "concepts")
    sensible = eli.sensible_sets(norms)
    summary["elicitation"] = {
        "concepts": len(concepts), "vocabulary": "lama", "vocabulary_size": len(vocabulary_e),
        "method": scorer_e.method,
        "sensible_set": {r: {"words": len(w), "in_vocabulary": sum(x in vocabulary_e for x in w)}
                         for r, w in sensible.items()},
    }

    def run_elicitation(relation: str, prompts: list[eli.ElicitationPrompt]):
        scores = scorer_e.score([p.prompt for p in prompts])
        probs = scorer_e.probabilities(scores)
        sens = [j for j in (vocabulary_e.index(w) for w in sensible[relation]) if j is not None]
        records = eli.score_prompts(prompts, scores, probs, vocabulary_e.words, vocabulary_e.index, sens)
        return eli.summarize(records), records

    for relation, context, prompts_e in elicitation_units(concepts):
        units.append(Unit({"task": "elicitation", "relation": relation, "context": context},
                          lambda r=relation, p=prompts_e: run_elicitation(r, p),
                          size=len(prompts_e)))

    return units


def run_sta(config: StaConfig, out: str | Path) -> list[dict]:
    """Run (or resume) the study into `out` through its lifecycle (`contract.Study.execute`);
    returns the result rows."""
    from kgprobe.studies.registry import get_study

    return get_study(NAME).run_rows(config, out, progress=config.progress)


def observations(out: str | Path) -> list[dict]:
    """Each scored prompt with its metrics (`Study.observations`): retrieval's target rank as
    ``MRR`` and ``R@k``; elicitation's average precisions where the gold is in the vocabulary."""
    from kgprobe.studies.metrics import rank_metrics
    from kgprobe.studies.stats import read_predictions

    rows = []
    for p in read_predictions(Path(out)):
        cell = {c: p.get(c) for c in CELL_COLUMNS}
        if p.get("task") == "retrieval" and p.get("rank"):
            item = f"{p['concept']}#{p.get('sequence', 0)}"
            rows.append({**cell, "item": item, **rank_metrics([p["rank"]])})
        elif p.get("task") == "elicitation" and p.get("ap_vocab") is not None:
            rows.append({**cell, "item": p["concept"], "mAP_vocab": p["ap_vocab"],
                         "mAP_sens": p.get("ap_sens")})
    return rows
