"""The premise-ablation study (OntoProbe §2.3, §3.2, §4.2–4.3): can a model reason with
ontological knowledge when a premise is not given, only known implicitly, or written out?

For every reasoning item (one RDFS derivation, entities as pseudowords) each premise is
- **explicit**: written into the prompt;
- **implicit**: not written, but the model knows it: its memorizing probe ranks the gold
  answer first (pessimistically: a gold tied at the top is not first) and the frequency
  control, asked the same probe with the same candidates, does not (knowledge the answer
  distribution explains is not counted as the model's); decided premise by premise, so it
  is the same whatever items a run samples;
- **not** given: not written and not shown known (ranked below first, or first only where
  the frequency control ranks it first too).
So an item whose P1 is known lands in the P1 = implicit and explicit cells, one whose P1 is
not known in the not and explicit cells; likewise for P2. The conjunction ("Therefore ,")
stays in every prompt, written premises or not, as in the paper.

Work is split into resumable units (rule × template kind × P1 × P2 × manual template), written
as they finish with every prompt's gold ranks; the report averages a relation's manual templates
(the paper's protocol) and computes intervals from those observations (`cells.py`). Chained
items (`--depth`, `--distractors`) add their own units (`depth.py`), and so do
counterfactual premises (`--premises true,counterfactual`: `counterfactual.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kgprobe.atomic import write_json
from kgprobe.models.registry import FREQUENCY
from kgprobe.ontology.verbalize import capitalize, reasoning_text
from kgprobe.reasoning.items import ReasoningItem
from kgprobe.studies.metrics import gold_indices, ranks_of
from kgprobe.studies.probes import ProbeRequest
from kgprobe.studies.runner import Unit

from .build import (AblationData, AblationSetup, build_data, build_setup,  # noqa: F401
                    population_rules, select_items)
from .cells import variants
from .columns import SETTINGS
from .config import NAME, AblationConfig
from .premise_keys import MemorizedPremise, PremiseKey  # noqa: F401 (imported from here)


# ------------------------------------------------------------------ memorized or not


def memorization_prompt(data: AblationData, item: ReasoningItem, role: str) -> tuple[str, str]:
    """The memorizing probe of a premise: (prompt, candidates key)."""
    p = item.premises[0 if role == "P1" else 1]
    rel = data.templates[p.relation]
    tmpl = rel.manual[rel.hypothesis]
    meta = None
    if p.relation in ("domain", "range"):
        meta = data.verbalizer.property_meta(p.triple[0])
    text_b = "[Y]" if p.relation == "property" else ""
    return capitalize(tmpl.render(text_a=p.subject, text_b=text_b, meta=meta)), rel.candidates


#: memorized.json's format: 3 = known absolutely (ranked first, beyond the frequency null)
MEMORIZED_VERSION = 3
#: the null a premise's rank must beat: the control that ranks by the answer distribution
NULL = FREQUENCY


def premise_population(data: AblationData) -> dict[PremiseKey, tuple[ReasoningItem, str]]:
    """Every premise probe of the kinds this run's items use, over every item of every rule
    (not the sampled ones): the population a premise's reciprocal rank is ranked in, so its
    outcome is the same whatever ``--limit`` (or ``--rules``) a run takes. → (an item that
    has it, its role)."""
    pairs = range(data.config.pairs)
    used = {PremiseKey.of(item, role, pair).stratum for items in data.items.values()
            for item in items for role in ("P1", "P2") for pair in pairs}
    out: dict[PremiseKey, tuple[ReasoningItem, str]] = {}
    for items in data.population.values():
        for item in items:
            for role in ("P1", "P2"):
                for pair in pairs:
                    key = PremiseKey.of(item, role, pair)
                    if key.stratum in used and key not in out:
                        out[key] = (item, role)
    return out


@dataclass(frozen=True)
class PremiseProbe:
    """One memorizing probe the premise classification scores: a prompt (a subject, and for
    P2 a pseudoword pair) and its candidates; every premise `keys` it tests is ranked in it,
    `true` the answers true for it (left out of each other's ranks when filtered)."""

    prompt: str
    candidates: tuple[str, ...]
    pair: int | None
    keys: tuple[PremiseKey, ...]
    true: frozenset[str]


def premise_probes(data: AblationData) -> list[PremiseProbe]:
    """The probes that classify every premise of `premise_population`, one per prompt (the
    premises of one prompt share it), in a fixed order; the dry run writes the same ones."""
    from .candidates import premise_others, probe_candidates

    population = premise_population(data)
    groups: dict[tuple[str, str, int | None], list[PremiseKey]] = {}
    for key in population:
        item, role = population[key]
        prompt, cands_key = memorization_prompt(data, item, role)
        groups.setdefault((prompt, cands_key, key.pair), []).append(key)
    out = []
    for (prompt, cands_key, pair), keys in groups.items():
        true = frozenset(k.answer for k in keys)
        for k in keys:
            item, role = population[k]
            true |= premise_others(data, item.premises[0 if role == "P1" else 1])
        cands = probe_candidates(data, cands_key, true, f"{prompt}|{'-' if pair is None else pair}")
        out.append(PremiseProbe(prompt, tuple(cands), pair, tuple(keys), true))
    return out


def classify_premises(setup: AblationSetup, out: Path, *,
                      progress: bool = False) -> dict[PremiseKey, MemorizedPremise]:
    """Every premise's gold rank under its memorizing probe, under the model and under the
    frequency control (`NULL`) on the same candidates, and whether it counts as known
    (`is_known`). The whole population (`premise_population`) is classified, so the report
    can say how many premises of each relation are known; with ``--memorized-sample`` only a
    seeded sample and the evaluated items' premises (`memorized_sample`). A premise's outcome
    depends on its own probe alone, never on the others or ``--limit``.
    Cached in OUT/memorized.json (one record a premise)."""
    config = setup.config
    path = out / "memorized.json"
    if path.exists():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if (cached.get("model") == config.model and isinstance(cached["premises"], list)
                and cached.get("version") == MEMORIZED_VERSION
                and (cached.get("sample") or {}).get("size") == config.memorized_sample):
            _note(progress, f"premises: {len(cached['premises'])} read from {path} (classified "
                            "by an earlier run into this folder)")
            return {m.key: m for m in map(MemorizedPremise.from_json, cached["premises"])}
    probes, population, sample = classified_probes(setup.data)
    extra = None
    ranks, prompts = _premise_ranks(setup, setup.model.scorer, probes, population, progress)
    nulls, _ = _premise_ranks(setup, _null_scorer(setup), probes, population, False)
    premises = {k: MemorizedPremise(k, 1.0 / ranks[k] if ranks[k] else 0.0,
                                    is_known(ranks[k], nulls[k]), prompts[k], ranks[k], nulls[k])
                for k in population}
    if sample is not None:
        from .memorized_sample import sample_summary

        extra = {"sample": {"size": config.memorized_sample, "seed": config.seed,
                            "strata": sample_summary(premises, sample)}}
    _note(progress, f"premises: {sum(m.known for m in premises.values())} of {len(premises)} "
                    f"known (ranked first by the model and not by the {NULL} control)")
    sample = None if sample is None else set(sample)
    write_json(path, {"model": config.model, "rule": KNOWN_RULE, "null": NULL,
                      "version": MEMORIZED_VERSION, "ranking": config.ranking, **(extra or {}),
                      "premises": [_record(m, sample) for m in premises.values()]})
    return premises


def classified_probes(data: AblationData) -> tuple[list[PremiseProbe], dict[PremiseKey, None],
                                                   list[PremiseKey] | None]:
    """The memorizing probes a run asks (the run and its ``--dry-run`` alike), the premises
    they classify and, with ``--memorized-sample``, the sampled ones: every premise of
    `premise_population`, or the sample and the evaluated items' own."""
    probes = premise_probes(data)
    population = {k: None for p in probes for k in p.keys}
    size = data.config.memorized_sample
    if size is None:
        return probes, population, None
    from .memorized_sample import sampled_premises

    sample = sampled_premises(list(population), size, data.config.seed)
    wanted = set(sample) | needed_premises(data)
    population = {k: None for k in population if k in wanted}
    return [p for p in probes if any(k in population for k in p.keys)], population, sample


#: memorized.json's name for the rule `is_known` applies
KNOWN_RULE = "first-beyond-null"


def is_known(rank: int, null_rank: int) -> bool:
    """Known: the model ranks the gold first (`rank` 1, pessimistic, so a tie at the top is
    not first; 0: the gold is not a candidate) and the frequency control ranks it lower on the
    same candidates. An absolute rule, not a share of the premises: a model that knows
    nothing beyond the answer distribution has no premise known, one that knows everything
    has every premise known the prior does not answer."""
    return rank == 1 and null_rank > 1


def _null_scorer(setup: AblationSetup):
    """The frequency control's scorer, set up as the run's control is (`controls.control_scorer`:
    the run's seed, the same training answers), without the score cache (it scores for free)."""
    from kgprobe.studies.controls import ControlSettings, control_scorer

    from .build import training_answers

    config = setup.config
    return control_scorer(NULL, config.model or NULL,
                          answers=lambda: training_answers(setup.model.memorizing),
                          settings=ControlSettings(device="cpu", seed=config.seed, cache=False))


def _record(premise: MemorizedPremise, sample: set[PremiseKey] | None) -> dict:
    """memorized.json's record of a premise; an estimated split marks the sampled ones."""
    row = premise.to_json()
    return row if sample is None else {**row, "sampled": premise.key in sample}


def needed_premises(data: AblationData) -> set[PremiseKey]:
    """The premises the evaluated items (those under ``--limit``) take their settings from."""
    return {PremiseKey.of(item, role, pair) for items in data.items.values() for item in items
            for role in ("P1", "P2") for pair in range(data.config.pairs)}


def _note(progress: bool, text: str) -> None:
    """One line on stderr for a person watching the run (not for library calls)."""
    if progress:
        import sys

        print(f"kgprobe: {text}", file=sys.stderr, flush=True)


def _premise_ranks(setup: AblationSetup, scorer, probes: list[PremiseProbe], wanted: dict,
                   progress: bool) -> tuple[dict[PremiseKey, int], dict[PremiseKey, str]]:
    """Every `wanted` premise's pessimistic gold rank under `scorer` (0: the gold is not a
    candidate) and its prompt; says on stderr how many probes the score cache served (the
    population is scored once per model and protocol, then reused)."""
    from kgprobe.studies.probes import Request, score_requests

    pseudowords = setup.model.pseudowords
    asked = [Request(p.prompt, p.candidates, pseudowords[p.pair or 0]) for p in probes]
    hits = getattr(scorer, "hits", None)
    rows = score_requests(scorer, asked, batch_size=setup.config.settings.batch_size,
                          desc="classifying premises (memorizing probes)", progress=progress)
    filtered = setup.data.truth is not None
    ranks: dict[PremiseKey, int] = {}
    prompts: dict[PremiseKey, str] = {}
    for req, row, probe in zip(asked, rows, probes):
        for key in (k for k in probe.keys if k in wanted):
            gold = gold_indices(req.candidates, [key.answer])
            also = gold_indices(req.candidates, probe.true - {key.answer}) if filtered else []
            ranks[key] = int(ranks_of(row, gold, filtered=filtered, also_true=also).min()) if gold else 0
            prompts[key] = req.prompt
    served = ("score cache off" if hits is None else
              f"{scorer.hits - hits} from the score cache, {len(probes) - scorer.hits + hits} scored")
    _note(progress, f"premises: {len(ranks)} ranked by {len(probes)} memorizing probes "
                    f"({served})")
    return ranks, prompts


def settings_of(item: ReasoningItem, premises: dict[PremiseKey, MemorizedPremise],
                pair: int) -> tuple[set, set]:
    """The P1 and P2 settings an item takes part in."""
    out = []
    for role in ("P1", "P2"):
        known = premises[PremiseKey.of(item, role, pair)].known
        out.append({"explicit", "implicit" if known else "not"})
    return out[0], out[1]


def reasoning_prompt(data: AblationData, item: ReasoningItem, p1: str, p2: str, kind: str,
                     soft: dict | None = None, variant: int | None = None) -> str:
    """Written premises (P1 then P2, as in the paper's Table 2), the conjunction, the hypothesis
    (under manual template `variant` of its relation; by default the relation's hypothesis one)."""
    if kind == "manual":
        written = [p.text for p, s in zip(item.premises, (p1, p2)) if s == "explicit"]
        hypothesis = item.conclusion["text"] if variant is None else item.hypotheses[variant]
        return reasoning_text(written, data.templates.conjunction, hypothesis)
    from .soft import soft_reasoning_prompt

    return soft_reasoning_prompt(data, item, p1, p2, soft)


def item_requests(data: AblationData, pseudowords: list[dict], item: ReasoningItem, p1: str,
                  p2: str, kind: str, soft: dict | None = None, variant: int | None = None,
                  pairs: list[int] | None = None) -> list[ProbeRequest]:
    """An item's requests with its premises set to `p1`, `p2`: one per pseudoword pair of
    `pairs` (every pair by default), with that pair's vectors of `pseudowords` (the model's,
    or the dry run's `AblationData.blank_pseudowords`). The run's cells and the dry run both
    ask these."""
    from .candidates import item_candidates, item_others, pair_requests

    candidates = item_candidates(data, item)
    # filtered, all candidates: the item's other true answers, left out of its ranks
    also = gold_indices(candidates, item_others(data, item))
    text = reasoning_prompt(data, item, p1, p2, kind, soft, variant)
    return pair_requests(text, candidates, gold_indices(candidates, item.answers), also,
                         item=item.id, pseudowords=pseudowords, pairs=pairs,
                         soft=soft["vectors"] if soft else None)


def cell_requests(setup: AblationSetup, rule: str, p1: str, p2: str, kind: str, premises: dict,
                  soft: dict | None, variant: int | None = None) -> list[ProbeRequest]:
    """Every prompt of one cell: each item under each pair whose P1 and P2 take `p1`, `p2`."""
    pseudowords = setup.model.pseudowords
    requests = []
    for item in setup.data.items[rule]:
        pairs = [pair for pair in range(len(pseudowords))
                 if all(s in taken for s, taken in zip((p1, p2), settings_of(item, premises, pair)))]
        if pairs:
            requests += item_requests(setup.data, pseudowords, item, p1, p2, kind, soft, variant,
                                      pairs)
    return requests


def run_cell(setup: AblationSetup, rule: str, p1: str, p2: str, kind: str, premises: dict,
             soft: dict | None, variant: int | None = None,
             progress: bool = False) -> tuple[dict, list[dict]]:
    from .candidates import score_cell

    requests = cell_requests(setup, rule, p1, p2, kind, premises, soft, variant)
    if not requests:
        return {"n": 0}, []  # an empty setting is reported as empty
    answers = {item.id: item.answers for item in setup.data.items[rule]}
    return score_cell(setup, requests, answers, desc=f"{rule} P1 {p1} P2 {p2} ({kind})",
                      progress=progress)


def grid_units(setup: AblationSetup, premises: dict, softs: dict, progress: bool) -> list[Unit]:
    """Every cell (rule × template kind × P1 × P2 × manual template), then the chained ones,
    as resumable units scored by `setup`'s scorer (the model's, or a control's)."""
    config = setup.config
    units = []
    for rule in config.rules:
        for kind in config.templates:
            for p1 in SETTINGS:
                for p2 in SETTINGS:
                    for variant in variants(setup.data.templates, rule, kind):
                        def run(rule=rule, kind=kind, p1=p1, p2=p2, variant=variant):
                            metrics, preds = run_cell(
                                setup, rule, p1, p2, kind, premises, softs or None,
                                variant if kind == "manual" else None, progress)
                            return {**metrics, "protocol": setup.data.protocol.name,
                                    "ranking": config.ranking}, preds

                        key = {"rule": rule, "p1": p1, "p2": p2, "template": kind,
                               "variant": variant}
                        units.append(Unit(key, run, len(setup.data.items[rule]) * config.pairs))
    if config.deep:
        from .depth import depth_units

        units += depth_units(setup, progress)
    if config.counterfactual:
        from .counterfactual import counterfactual_units

        units += counterfactual_units(
            setup, lambda item, pair: settings_of(item, premises, pair), progress)
    return units


def run_premise_ablation(config: AblationConfig, out: str | Path, *,
                         progress: bool = True) -> list[dict]:
    """Run (or resume) the study of `config` into `out` and return the model's unit rows,
    through the study's lifecycle (`contract.Study.execute`; the plan: `plan.py`)."""
    from kgprobe.studies.registry import get_study

    return get_study(NAME).run_rows(config, out, progress=progress)
