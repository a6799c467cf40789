"""The premise-ablation study built once per run: its items, candidates, templates, model.

`build_study` reads the ontology, samples the evaluated items, checks the candidate protocol
against the pools and (unless ``load=False``, the dry run) loads the model, its scorer behind
the score cache and the pseudowords; the rest of the study (classifying premises, training
soft prompts, scoring cells) reads this one `Study`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgprobe.ontology.loaders import Source, bundled_source
from kgprobe.ontology.verbalize import TemplateSet, load_templates
from kgprobe.reasoning.distractors import Protocol
from kgprobe.reasoning.filtering import TrueAnswers, parse_ranking
from kgprobe.reasoning.items import (
    RULE_RELATIONS,
    ReasoningItem,
    Verbalizer,
    item_closure,
    reasoning_items,
    sample_items,
)
from kgprobe.reasoning.memorizing import candidate_sets
from kgprobe.reasoning.rdfs import RULES

from .config import AblationConfig

if TYPE_CHECKING:
    from kgprobe.models.language_model import LanguageModel, Scorer


@dataclass
class Study:
    """Everything a run needs, built once: items, candidates, templates, the model."""

    config: AblationConfig
    items: dict[str, list[ReasoningItem]]  # the evaluated sample
    all_items: dict[str, list[ReasoningItem]]  # every item (soft conjunctions train on the rest)
    candidates: dict[str, list[str]]
    templates: TemplateSet
    verbalizer: Verbalizer
    memorizing: dict  # relation → MemorizingSet, for training soft templates
    loaded: "LanguageModel"
    scorer: "Scorer"  # the model's, behind the score cache (`models.score_cache`)
    pseudowords: list[dict]
    protocol: Protocol = Protocol(None)
    #: what an item's or premise's premises make true (`reasoning.filtering`); None: raw ranking
    truth: TrueAnswers | None = None
    #: every item of every rule: the population premises are classified over
    population: dict[str, list[ReasoningItem]] | None = None
    closure: object = None  # the RDFS closure the items come from (chained items: depth.py)


def population_rules(rules: tuple[str, ...]) -> tuple[str, ...]:
    """The rules whose premises are of a kind (role, relation) one of `rules` has: their items
    hold the population a premise of that kind is classified in (rdfs9's P1 shares rdfs11's)."""
    kinds = {(role, RULE_RELATIONS[r][i]) for r in rules for i, role in enumerate(("P1", "P2"))}
    return tuple(r for r in RULES if {("P1", RULE_RELATIONS[r][0]), ("P2", RULE_RELATIONS[r][1])} & kinds)


def select_items(items: dict[str, list[ReasoningItem]], limit: int | None, seed: int) -> dict[str, list[ReasoningItem]]:
    """A seeded sample of `limit` items per rule, kept in item order."""
    return {rule: sample_items(rule_items, rule, limit, seed) for rule, rule_items in items.items()}


def training_answers(memorizing: dict):
    """Every memorizing set's training golds, handed to the model (`LanguageModel.trained_on`:
    the frequency baseline counts them, a pretrained model reads nothing). One scorer asks
    every relation here, so the counts pool the relations; a prompt's candidates come from one
    pool (classes or properties), so the frequency baseline ranks a pool's labels by how often
    they answer a relation of that kind in training."""
    for mset in memorizing.values():
        for record in mset.records:
            if record.split == "train":
                yield record.answers


def build_study(config: AblationConfig, source: Source | None = None, *, cache: bool = True,
                load: bool = True) -> Study:
    """Items from an ontology source (the bundled one by default; `AblationConfig.load_source`
    reads the one the options name), the model, its pseudowords.

    On the bundled ontology soft templates train on the paper's memorizing sets; on any
    other, on memorizing sets generated from it (seeded split). ``load=False`` (``--dry-run``)
    builds every prompt and candidate list the run would score, with no model, vectors or
    memorizing sets.
    """
    from kgprobe.models.loading import load_model
    from kgprobe.pseudowords.sampler import sample_pseudoword_sets
    from kgprobe.reasoning.memorizing_sets import (
        generated_memorizing_sets,
        reference_sets,
    )

    bundled = source is None
    source = source or bundled_source()
    onto = source.ontology
    templates = load_templates(lang=config.source.language())  # --lang: its templates
    closure = item_closure(onto, source.triples)
    # every rule whose premises share a kind with this run's: the premises' population
    population = reasoning_items(onto, closure, templates, rules=population_rules(config.rules))
    all_items = {rule: population[rule] for rule in config.rules}
    items = select_items(all_items, config.limit, config.seed)
    protocol = config.candidates
    pools = candidate_sets(onto)
    # a K above every pool the items rank fails before the model loads
    protocol.check_pools(pools[key] for key in {i.candidates_key for rule_items in items.values()
                                                for i in rule_items})
    memorizing, loaded, scorer, pseudowords = {}, None, None, [{}] * config.pairs
    if load:
        from kgprobe.models.score_cache import cached_scorer

        memorizing = (reference_sets() if bundled else generated_memorizing_sets(
            onto, seed=config.seed, lang=config.source.language()))
        loaded = load_model(config.model, device=config.device, dtype=config.dtype,
                            seed=config.seed)
        # pooling: the model's default_pooling; scores persist across studies and runs (--no-cache)
        trained = loaded.trained_on(training_answers(memorizing))
        scorer = cached_scorer(trained.scorer(masks="multi"), loaded, enabled=cache)
        pseudowords = sample_pseudoword_sets(loaded, config.pairs, seed=config.seed)
    verbalizer = Verbalizer(onto, templates)
    truth = TrueAnswers.of(verbalizer, closure) if parse_ranking(config.ranking) == "filtered" else None
    return Study(config, items, all_items, pools, templates, verbalizer, memorizing, loaded,
                 scorer, pseudowords, protocol, truth, population, closure)
