"""The premise-ablation study built once per run: its items, candidates, templates, model.

`build_data` reads the ontology, samples the evaluated items and checks the candidate protocol
against the pools: everything a prompt is built from, no model (the dry run needs no more).
`ablation_model` adds the model part (`AblationModel`: the model, its scorer behind the score
cache, the pseudowords, the memorizing sets soft templates train on); the rest of the study
(classifying premises, training soft prompts, scoring cells) reads this one `AblationSetup`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from kgprobe.reasoning.rdfs import RULES, Closure

from .config import NAME, AblationConfig

if TYPE_CHECKING:
    from kgprobe.models.language_model import LanguageModel, Scorer
    from kgprobe.reasoning.memorizing_sets import MemorizingSet


@dataclass
class AblationData:
    """What every prompt and candidate list of a run is built from, without a model: the
    items, the candidate pools and protocol, the templates, what counts as true."""

    config: AblationConfig
    items: dict[str, list[ReasoningItem]]  # the evaluated sample
    all_items: dict[str, list[ReasoningItem]]  # every item (soft conjunctions train on the rest)
    #: every item of every rule: the population premises are classified over
    population: dict[str, list[ReasoningItem]]
    candidates: dict[str, list[str]]
    templates: TemplateSet
    verbalizer: Verbalizer
    protocol: Protocol
    #: what an item's or premise's premises make true (`reasoning.filtering`); None: raw ranking
    truth: TrueAnswers | None
    closure: Closure  # the RDFS closure the items come from (chained items: depth.py)
    #: rule → item id → counterfactual twin, drawn on first use (`counterfactual.py`)
    twins: dict | None = None
    #: each item's candidate list, drawn on first use (`candidates.item_candidates`)
    drawn: dict = field(default_factory=dict, repr=False, compare=False)
    #: the chained items and distractor pool, built on first use (`depth.chained_items`)
    chained: Any = field(default=None, repr=False, compare=False)

    def blank_pseudowords(self) -> list[dict]:
        """One empty vector mapping a pseudoword pair: the dry run's requests, which carry
        texts and candidates but no vectors."""
        return [{}] * self.config.pairs


@dataclass
class AblationModel:
    """The model part of a run: the model, its scorer, the pseudoword pairs sampled from its
    embeddings, and the memorizing sets its soft templates train on."""

    loaded: LanguageModel
    scorer: Scorer  # the model's, behind the score cache (`models.score_cache`)
    pseudowords: list[dict]  # one slot → vector mapping a pair (`--pairs` of them)
    memorizing: dict[str, MemorizingSet]  # relation → its set, for training soft templates


@dataclass
class AblationSetup:
    """Everything a run needs, built once: the model-free data and the model part."""

    data: AblationData
    model: AblationModel

    @property
    def config(self) -> AblationConfig:
        return self.data.config


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


def build_data(config: AblationConfig, source: Source | None = None) -> AblationData:
    """Items from an ontology source (the bundled one by default; `AblationConfig.load_source`
    reads the one the options name), their candidates and templates: every prompt and
    candidate list the run would score (``--dry-run`` writes them). A K above every pool the
    items rank fails here, before any model loads."""
    source = source or bundled_source(word=True)
    onto = source.ontology
    templates = load_templates(lang=config.source.language())  # --lang: its templates
    closure = item_closure(onto, source.triples)
    # every rule whose premises share a kind with this run's: the premises' population
    population = reasoning_items(onto, closure, templates, rules=population_rules(config.rules))
    all_items = {rule: population[rule] for rule in config.rules}
    items = select_items(all_items, config.limit, config.seed)
    protocol = config.candidates
    pools = candidate_sets(onto)
    protocol.check_pools(pools[key] for key in {i.candidates_key for rule_items in items.values()
                                                for i in rule_items})
    verbalizer = Verbalizer(onto, templates)
    truth = TrueAnswers.of(verbalizer, closure) if parse_ranking(config.ranking) == "filtered" else None
    return AblationData(config, items, all_items, population, pools, templates, verbalizer,
                        protocol, truth, closure)


def ablation_model(config: AblationConfig, loaded: LanguageModel,
                   source: Source | None = None) -> AblationModel:
    """The model part of a run of `loaded` (the run's model, loaded by the study's lifecycle,
    `contract.Study.load`): its scorer behind the score cache (``--no-cache``:
    `ModelSettings.cache`), its pseudowords. On the bundled ontology (`source` None) soft
    templates train on the paper's memorizing sets (in its worded labels, as `build_data`
    reads it); on any other, on memorizing sets generated from it (seeded split)."""
    from kgprobe.models.score_cache import cached_scorer
    from kgprobe.pseudowords.sampler import sample_pseudoword_sets
    from kgprobe.reasoning.memorizing_sets import (
        generated_memorizing_sets,
        worded_reference_sets,
    )

    # the paper's sets renamed to the worded labels `build_data` reads the bundled ontology in
    memorizing = (worded_reference_sets() if source is None else generated_memorizing_sets(
        source.ontology, seed=config.seed, lang=config.source.language()))
    # pooling: the model's default_pooling; scores persist across studies and runs (--no-cache)
    trained = loaded.trained_on(training_answers(memorizing))
    scorer = cached_scorer(trained.scorer(masks="multi"), loaded, enabled=config.settings.cache)
    pseudowords = sample_pseudoword_sets(loaded, config.pairs, seed=config.seed)
    return AblationModel(loaded, scorer, pseudowords, memorizing)


def build_setup(config: AblationConfig) -> AblationSetup:
    """A run's whole setup outside a run (a test, a notebook): `build_data` on the config's
    ontology (`AblationConfig.load_source`) and the model loaded as a run loads it
    (`contract.Study.load`)."""
    from kgprobe.studies.registry import get_study

    source = config.load_source()
    loaded = get_study(NAME).load(config)
    return AblationSetup(build_data(config, source), ablation_model(config, loaded, source))
