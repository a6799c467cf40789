"""`study premise-ablation --dry-run`: the prompts the study would score, without a model.

Which items land in the implicit and not-given cells depends on the model's answers to the
premise probes, so the dry run writes what does not: every premise probe (``extra.kind``
"premise probe", ``extra.role`` P1/P2), and every reasoning prompt under each way of writing
the premises (both, P1 only, P2 only, neither; ``p1``/``p2`` empty when not written). One
line per text: the pseudoword pairs (``extra.pairs``) change the vectors, not the text.
Soft templates are trained, so the default protocol writes only the manual prompts; under
``--protocol paper`` with soft templates the soft prompts are written too (their slots named,
their vectors trained by the run), and every request their training scores (``extra.kind``
"soft training", ``extra.training`` naming the training, ``extra.split`` train or dev).
Every line is a request
the run builds with the same functions (`study.item_requests`, `study.premise_probes`,
`depth.chain_requests`, and the paper protocol's `paper.p1_requests`, `p2_requests`,
`item_request`), so the run asks no prompt this file lacks. The plan (`plan.py`) hands these
records to the contract's dry run, which writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgprobe.reasoning.items import ReasoningItem
from kgprobe.studies.dry_run import PromptRecord
from kgprobe.studies.probes import ProbeRequest

from .config import AblationConfig

STUDY = "premise-ablation"
#: (P1 written, P2 written), both first: the paper's explicit-explicit cell.
WRITTEN = ((True, True), (True, False), (False, True), (False, False))


def paper_records(config: AblationConfig, study=None) -> list[PromptRecord]:
    """The paper protocol's requests (`paper.py`'s providers, as its run builds them): every
    P1 and P2 probe, then every evaluated item under each way of writing its premises
    (`study`: the plan's `paper.PaperStudy`; by default built from `config`)."""
    from kgprobe.reasoning.paper_items import p2_population

    from .paper import item_request, p1_requests, p2_requests, paper_study

    study = paper_study(config) if study is None else study
    out = []
    for rule, items in study.items.items():
        # Every premise probe: the memorized split is over all of them, whatever --limit keeps.
        probes = [("P1", i.probes["P1"], i.id, r) for i, r in zip(items, p1_requests(study, rule))]
        probes += [("P2", p, "", r) for p, r in zip(p2_population(rule), p2_requests(study, rule, 0))]
        for role, probe, item_id, req in probes:
            out.append(PromptRecord(STUDY, req.prompt, probe.golds, len(req.candidates), rule=rule,
                                    template="manual", extra={
                                        "kind": "premise probe", "role": role, "item": item_id,
                                        "record": probe.record, "protocol": "paper",
                                        "pairs": config.pairs}))
        for kind in config.templates:
            for item in study.evaluated(rule):
                for p1, p2 in WRITTEN:
                    req = item_request(study, rule, item, p1, p2, 0, kind)
                    parts = _parts(item, kind)
                    out.append(PromptRecord(
                        STUDY, req.prompt, item.golds, len(req.candidates), rule=rule,
                        template=kind, p1=parts[0] if p1 else "", p2=parts[1] if p2 else "",
                        h=parts[2],
                        extra={"kind": "reasoning", "item": item.id, "record": item.record.index,
                               "protocol": "paper", "pairs": config.pairs}))
    if "soft" in config.templates:
        out += soft_training_records(study)
    return out


def _parts(item, kind: str) -> tuple[str, str, str]:
    """An item's P1, P2 and hypothesis as its `kind` of prompt writes them."""
    if kind == "manual":
        return item.p1, item.p2, f"{item.hypothesis} [MASK] {item.end}"
    from kgprobe.reasoning.paper_items import fill_soft

    soft = item.soft
    return (fill_soft(soft["p1"], "p1"), fill_soft(soft["p2"], "p2"),
            f"{fill_soft(soft['hypothesis'], 'h')} [MASK] {soft['end']}")


def soft_training_records(study) -> list[PromptRecord]:
    """Every request the paper protocol's soft trainings score (`paper_soft.training_requests`
    with the run's builders)."""
    from .paper import has_slot, item_request, probe_requests
    from .paper_soft import training_requests

    return [PromptRecord(STUDY, req.prompt, tuple(req.candidates[g] for g in req.golds),
                         len(req.candidates), template="soft",
                         task="" if ":" in label else label, rule=label.split(":")[0] if ":" in label else "",
                         extra={"kind": "soft training", "training": label, "split": split,
                                "item": req.item, "protocol": "paper"})
            for label, split, req in training_requests(study, probe_requests=probe_requests,
                                                       item_request=item_request,
                                                       has_slot=has_slot)]


@dataclass(frozen=True)
class WrittenRequest:
    """An item's request with its premises written (`p1`, `p2`) or not, under manual template
    `variant`: the text and candidates every cell asks of it (which cells ask it depends on
    the model's answers to the premise probes, `study.settings_of`). Its pseudoword pair 0
    stands for every pair: they change the vectors, not the text."""

    rule: str
    item: ReasoningItem
    p1: bool
    p2: bool
    variant: int
    request: ProbeRequest


def written_requests(data) -> list[WrittenRequest]:
    """Every evaluated item of `data` (a `build.AblationData`) under each manual template and
    each way of writing its premises (both first: the paper's explicit-explicit cell), in the
    run's order: the requests the dry run lists and ``kgprobe export lm-eval`` converts."""
    from .cells import variants
    from .study import item_requests

    blank = data.blank_pseudowords()
    out = []
    for rule, rule_items in data.items.items():
        for item in rule_items:
            for v in variants(data.templates, rule, "manual"):
                for p1, p2 in WRITTEN:
                    s1, s2 = ("explicit" if p1 else "not"), ("explicit" if p2 else "not")
                    req = item_requests(data, blank, item, s1, s2, "manual", variant=v,
                                        pairs=[0])[0]
                    out.append(WrittenRequest(rule, item, p1, p2, v, req))
    return out


def default_records(config: AblationConfig, data=None) -> list[PromptRecord]:
    """The default protocol's requests (`data`: the plan's `build.AblationData`; by default
    built from `config`): the premise probes, then every item under each way of writing its
    premises, then the chained and counterfactual cells' prompts."""
    from kgprobe.studies.open_answers import generation_prompt

    from .study import build_data, classified_probes

    data = build_data(config, config.load_source()) if data is None else data
    out = []
    # The premise probes the run classifies: the whole population, or a sample and the
    # evaluated items' own (--memorized-sample).
    for probe in classified_probes(data)[0]:
        first = probe.keys[0]
        out.append(PromptRecord(STUDY, probe.prompt, tuple(sorted({k.answer for k in probe.keys})),
                                len(probe.candidates), task=first.relation, template="manual",
                                extra={"kind": "premise probe", "role": first.role,
                                       "protocol": "default", "pairs": config.pairs}))
    for w in written_requests(data):
        item, req, v = w.item, w.request, w.variant
        hyp = item.hypotheses[v] if item.hypotheses else item.conclusion["text"]
        text, extra = req.prompt, {}
        if config.answers == "generate":  # what the model continues (generate.py)
            text = generation_prompt(req.prompt)
            extra = {"answers": "generate", "cloze": req.prompt,
                     "max_new_tokens": config.max_new_tokens}
        out.append(PromptRecord(
            STUDY, text, tuple(item.answers), len(req.candidates), rule=w.rule,
            template=f"manual:{v}",
            p1=item.premises[0].text if w.p1 else "",
            p2=item.premises[1].text if w.p2 else "", h=hyp,
            extra={"kind": "reasoning", "item": item.id, "protocol": "default",
                   "pairs": config.pairs, **extra}))
    if config.deep:  # the chained cells' prompts (depth.py)
        from .depth import dry_records

        out += dry_records(data)
    if config.counterfactual:  # the counterfactual cells' prompts (counterfactual.py)
        from .counterfactual import dry_records as counterfactual_records

        out += counterfactual_records(data)
    return out
