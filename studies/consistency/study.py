"""The consistency study: is a model's belief in a conclusion tied to its belief in the premises?

The ontology's RDFS closure gives derivations among real entities (`statements`); each
statement becomes the memorization probe that asks it (`probes`). Every distinct statement is
scored once per template, however many derivations share it, in resumable units of one
relation × template (`studies.runner`); the derivations' table (`beliefs`) is then built from
the units' ranks, so a killed run resumes to the same numbers and a rerun with another
``--believe-at`` rebuilds the table without scoring anything.

Files: ``units/`` (one per relation × template: each statement's rank and top answers),
``statements.csv`` (how often each relation's statements are believed), ``results.csv``
(a row per rule × template and an ``all`` row), ``predictions.jsonl`` (a line per derivation
and template: its three statements' prompts, ranks and top answers), ``derivations.json``
(how many derivations each rule had before sampling, and what was left out), ``report.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from kgprobe.atomic import write_json, write_jsonl, write_text
from kgprobe.errors import StudyError
from kgprobe.reasoning.distractors import Protocol
from kgprobe.studies.controls import control_model, is_control
from kgprobe.studies.runner import Unit, rows_to_csv

from .beliefs import COLUMNS, DerivationRanks, consistency_table
from .claims import claim_columns, confirm, entailment_rows
from .config import ConsistencyConfig
from .probes import Candidates, Probe, distinct_requests, prompt_of, rank_statement
from .statements import BeliefDerivation, Statement

UNIT_COLUMNS = ["relation", "template", "n", "R@1", "MRR", "protocol", "ranking"]
#: controls.csv: each control model's own table (no reference, nothing claimed).
CONTROL_COLUMNS = [c for c in COLUMNS if c not in {
    "reference", "reference_consistency", "consistency_minus_prior", "consistency_minus_prior_lo",
    "consistency_minus_prior_hi", "p_minus_prior", "p_minus_prior_holm"}]


@dataclass
class Setup:
    """What a run asks: the sampled derivations and every statement's probe per template."""

    config: ConsistencyConfig
    derivations: dict[str, list[BeliefDerivation]]
    probes: dict[tuple[str, int], list[Probe]]  # (relation, template) → its statements' probes
    protocol: Protocol
    found: dict[str, int] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    ontology: object = None  # the ontology asked (its memorizing sets: `training_answers`)
    triples: object = None  # its source's triples (the synonyms open answers are mapped by)

    @property
    def templates(self) -> list[int]:
        return sorted({t for _, t in self.probes})


def relation_pools(onto, templates, bundled: bool) -> dict[str, list[str]]:
    """relation → its candidate pool: the ontology's labels of the relation's kind; on the
    bundled ontology the memorization study's own pools (their few extra gold labels too), so
    a prompt against every candidate is the very prompt and list that study scores."""
    from kgprobe.reasoning.memorizing import RELATIONS, candidate_sets

    kinds = candidate_sets(onto)
    pools = {rel: kinds[templates[rel].candidates] for rel in (*RELATIONS, "property")}
    if bundled:
        from kgprobe.reasoning.memorizing_sets import reference_sets

        pools.update({rel: mset.candidates for rel, mset in reference_sets().items()})
    return pools


def build(config: ConsistencyConfig) -> Setup:
    """The derivations, statements and probes of `config` (no model needed)."""
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.items import Verbalizer, item_closure

    from .statements import Writer, study_derivations, true_answers

    from kgprobe.ontology.loaders import bundled_source

    # --store, --endpoint, --ontology; the bundled ontology with the paper's own labels, as the
    # memorization study asks them, so a statement is that study's prompt (one score cache)
    source = bundled_source(word=False) if config.source.bundled else config.source.load()
    onto, templates = source.ontology, load_templates(lang=config.source.language())
    closure = item_closure(onto, source.triples)
    verb = Verbalizer(onto, templates, pseudowords=False)
    writer = Writer(onto, verb)
    setup = Setup(config, {}, {}, config.candidates, ontology=onto, triples=source.triples)
    setup.derivations = study_derivations(writer, closure, config.rules, config.limit,
                                          config.seed, setup.skipped, setup.found)
    if not any(setup.derivations.values()):
        raise StudyError(f"{config.source.describe()}: no derivation among its "
                         "entities can be asked in words (rules "
                         f"{', '.join(config.rules or ['all'])}); give an ontology with "
                         "instances, facts or subclass chains, or other --rules")
    statements: dict[str, dict[str, Statement]] = {}
    for d in chain.from_iterable(setup.derivations.values()):
        for s in d.statements:
            statements.setdefault(s.relation, {}).setdefault(s.key, s)
    pools = relation_pools(onto, templates, config.source.bundled)
    setup.protocol.check_pools(pools[rel] for rel in statements)
    candidates = Candidates(pools, true_answers(writer, chain(closure.asserted, closure.inferred)),
                            setup.protocol, config.seed)
    most = max(len(templates[rel].manual) for rel in statements)
    for t in config.template_indices(most):
        if t >= most:
            raise StudyError(f"--template {t}: the relations asked have templates 0–{most - 1}; "
                             "give one of those, or all")
        for rel, found in statements.items():
            setup.probes[(rel, t)] = [
                Probe(s, prompt_of(s, templates, verb, t), candidates.of(s), candidates.true_of(s))
                for s in found.values()]
    return setup


def training_answers(setup: Setup, relation: str):
    """The gold answers of `relation`'s memorizing training records, which every model is
    handed (`LanguageModel.trained_on`: the frequency baseline counts them, a pretrained model
    reads nothing): the bundled sets on the bundled ontology, else the sets generated from the
    ontology with the run's seed, as the memorization study uses them. A relation with no
    memorizing set (a fact's object, ``property``) has none, and the frequency baseline ranks
    its candidates in its seeded order alone. A generator: nothing is read unless asked."""
    from kgprobe.reasoning.memorizing import RELATIONS
    from kgprobe.reasoning.memorizing_sets import generated_memorizing_sets, reference_sets

    if relation not in RELATIONS:
        return
    config = setup.config
    sets = (reference_sets((relation,)) if config.source.bundled else generated_memorizing_sets(
        setup.ontology, (relation,), seed=config.seed, lang=config.source.language()))
    mset = sets.get(relation)
    for record in mset.records if mset is not None else ():
        if record.split == "train":
            yield record.answers


def make_scorer(setup: Setup, relation: str, loaded):
    """The model's scorer, after seeing `relation`'s training answers, behind the shared score
    cache (the memorization study's masks and pooling, so its rows serve both)."""
    from kgprobe.models.score_cache import cached_scorer

    scorer = loaded.trained_on(training_answers(setup, relation)).scorer(masks="multi", pooling=None)
    return cached_scorer(scorer, loaded, enabled=setup.config.settings.cache)


def score_unit(setup: Setup, probes: list[Probe], scorer, *, desc: str,
               progress: bool) -> tuple[dict, list[dict]]:
    """Rank every statement of one relation × template; each (prompt, candidates) once."""
    from kgprobe.studies.metrics import rank_metrics
    from kgprobe.studies.probes import Request, score_requests

    asked = distinct_requests(probes)
    rows = score_requests(scorer, [Request(p, c) for p, c in asked],
                          batch_size=setup.config.settings.batch_size, desc=desc,
                          progress=progress)
    by_request = dict(zip(asked, rows))
    preds = [rank_statement(p, by_request[(p.prompt, p.candidates)], setup.config.ranking)
             for p in probes]
    n = len(preds)
    each = [rank_metrics([p["rank"]], ks=(1,)) for p in preds]  # the one definition of R@k, MRR
    metrics = {"n": n, "R@1": sum(m["R@1"] for m in each) / n if n else 0.0,
               "MRR": sum(m["MRR"] for m in each) / n if n else 0.0,
               "protocol": setup.protocol.name, "ranking": setup.config.ranking}
    return metrics, preds


def units_of(setup: Setup, loaded, progress: bool) -> list[Unit]:
    units = []
    for (relation, t), probes in setup.probes.items():
        def run(probes=probes, relation=relation, t=t):
            return score_unit(setup, probes, make_scorer(setup, relation, loaded),
                              desc=f"{relation} template {t}", progress=progress)

        units.append(Unit({"relation": relation, "template": t}, run, len(probes)))
    return units


def cells_of(setup: Setup, ranks: dict[tuple[str, int], dict],
             controls: dict) -> dict[tuple[str, int], list[DerivationRanks]]:
    """(rule, template) → each derivation's ranks, with its matched control's premises."""
    by_cell: dict[tuple[str, int], list[DerivationRanks]] = {}
    for t in setup.templates:
        for rule, derivations in setup.derivations.items():
            cell = by_cell.setdefault((rule, t), [])
            for d in derivations:
                p1, p2, c = (ranks[(s.key, t)]["rank"] for s in d.statements)
                other = controls.get(d.id)
                control = (None if other is None else
                           tuple(ranks[(s.key, t)]["rank"] for s in other.premises))
                keys = tuple(s.key for s in d.statements) + (
                    () if other is None else tuple(s.key for s in other.premises))
                cell.append(DerivationRanks(d.id, p1, p2, c, control, keys))
    return by_cell


def write_tables(setup: Setup, ranks: dict[tuple[str, int], dict], out: Path,
                 others: dict[str, dict] | None = None, reference: str = "") -> list[dict]:
    """results.csv, controls.csv, predictions.jsonl and derivations.json from the
    statements' ranks (`others`: each control model's ranks, the reference among them)."""
    from .controls import matched_controls

    matched = matched_controls([d for ds in setup.derivations.values() for d in ds],
                               setup.config.seed)
    config = setup.config
    by_cell = cells_of(setup, ranks, matched)
    others = others or {}
    ref = cells_of(setup, others[reference], matched) if reference in others else None
    rows = consistency_table(by_cell, believe_at=config.believe_at, seed=config.seed,
                             reference=ref, reference_name=reference if ref else "")
    controls = {c: control_model(c, config.model or "-") for c in config.controls}
    controls = {c: name for c, name in controls.items() if name in others}
    entail = entailment_rows(setup.derivations, statements_of(setup),
                             {config.model: ranks, **{c: others[n] for c, n in controls.items()}},
                             config.model, tuple(controls), believe_at=config.believe_at,
                             seed=config.seed)
    rows = confirm([{**row, **entail[(row["rule"], row["template"])]} for row in rows],
                   control_run=is_control(config.model))
    columns = [*COLUMNS, *claim_columns(tuple(controls))]
    write_text(out / "results.csv", rows_to_csv([blank_nan(r) for r in rows], columns))
    if others:
        control_rows = []
        for name, r in others.items():
            table = consistency_table(cells_of(setup, r, matched),
                                      believe_at=config.believe_at, seed=config.seed)
            control_rows += [{"model": name, **row} for row in table]
        write_text(out / "controls.csv", rows_to_csv([blank_nan(r) for r in control_rows],
                                                     ["model", *CONTROL_COLUMNS]))
    lines = []
    for t in setup.templates:
        for rule, derivations in setup.derivations.items():
            for d in derivations:
                p1, p2, c = (ranks[(s.key, t)] for s in d.statements)
                other = matched.get(d.id)
                lines.append({"rule": rule, "template": t, "id": d.id,
                              "triples": [list(x) for x in d.triples],
                              "premises": [p1, p2], "conclusion": c,
                              "control": None if other is None else other.id})
    write_jsonl(out / "predictions.jsonl", lines)
    write_json(out / "derivations.json", {
        "found": setup.found,
        "sampled": {rule: len(ds) for rule, ds in setup.derivations.items()},
        "controlled": {rule: sum(matched.get(d.id) is not None for d in ds)
                       for rule, ds in setup.derivations.items()},
        "skipped": dict(sorted(setup.skipped.items()))})
    return rows


def statements_of(setup: Setup) -> dict[int, dict[str, Statement]]:
    """template → every statement scored in it, by key (the base rates' population)."""
    out: dict[int, dict[str, Statement]] = {}
    for (_, t), probes in setup.probes.items():
        out.setdefault(t, {}).update({p.statement.key: p.statement for p in probes})
    return out


def blank_nan(row: dict) -> dict:
    """A row whose undefined numbers (no derivation with both premises believed) are empty
    cells, which every CSV reader takes as missing."""
    return {k: "" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
