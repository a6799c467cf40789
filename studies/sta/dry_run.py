"""`kgprobe study sta --dry-run`: the retrieval and elicitation prompts, without a model.

A run keeps only candidates the model writes as one token, and only targets among them; with
no model loaded the dry run takes the word list as it is (``--vocab``'s LAMA list or the
norms' concepts), so it may list a few prompts whose target the model's vocabulary would
drop, and ``n_candidates`` is the list's size before that filter. Without ``--template`` the
retrieval prompts are the paper's statements, the masked-LM default (a causal model's run
asks them as questions instead: pass ``--template question`` to see those).
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.ontology.norms import load_norms
from kgprobe.studies.dry_run import PromptRecord, write_prompts

from .config import StaConfig
from .requests import elicitation_units, retrieval_units

STUDY = "sta"


def prompt_records(config: StaConfig) -> list[PromptRecord]:
    """Every prompt a run would score, unit by unit, in `study.run_sta`'s order: the run's own
    units (`requests`)."""
    from kgprobe.models.distributions import word_vocabulary

    from .study import lazy_words, parse_conditions, retrieval_targets, sample

    conditions = parse_conditions(config.conditions)
    norms = load_norms(config.norms, config.format)
    lama = lazy_words(config.lama_file)
    records: list[PromptRecord] = []
    if "retrieval" in config.tasks:
        template = config.retrieval_template(True)
        vocab_name = config.retrieval_vocab(True)
        vocabulary = word_vocabulary(lama() if vocab_name == "lama" else norms.words())
        targets, _ = retrieval_targets(norms, set(vocabulary.words), determiner=config.determiner,
                                       limit=config.limit, seed=config.seed)
        for cond, n, prompts in retrieval_units(config, targets, conditions, template):
            records += [PromptRecord(
                STUDY, p.prompt, (p.target,), len(vocabulary.words), task="retrieval",
                template=template,
                extra={"condition": cond.name, "n_properties": n, "concept": p.concept,
                       "sequence": p.sequence, "vocabulary": vocab_name}) for p in prompts]
    if "elicitation" in config.tasks:
        words = word_vocabulary(lama()).words
        concepts = sample(list(norms.concepts.values()), config.elicitation_concepts(),
                          config.seed, "concepts")
        for relation, context, prompts in elicitation_units(concepts):
            records += [PromptRecord(
                STUDY, p.prompt, tuple(p.gold), len(words), task="elicitation",
                template=context,
                extra={"relation": relation, "context": context, "concept": p.concept,
                       "production_frequency": p.gold, "vocabulary": "lama"}) for p in prompts]
    return records


def dry_run(config: StaConfig, out: str | Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    return write_prompts(out, prompt_records(config))
