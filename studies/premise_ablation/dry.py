"""`study premise-ablation --dry-run`: the prompts the study would score, without a model.

Which items land in the implicit and not-given cells depends on the model's answers to the
premise probes, so the dry run writes what does not: every premise probe (``extra.kind``
"premise probe", ``extra.role`` P1/P2), and every reasoning prompt under each way of writing
the premises (both, P1 only, P2 only, neither; ``p1``/``p2`` empty when not written). One
line per text: the pseudoword pairs (``extra.pairs``) change the vectors, not the text.
Soft templates are trained, so only the manual prompts are written.
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.studies.dry_run import PromptRecord, write_prompts

from .config import AblationConfig

STUDY = "premise-ablation"
#: (P1 written, P2 written), both first: the paper's explicit-explicit cell.
WRITTEN = ((True, True), (True, False), (False, True), (False, False))


def paper_records(config: AblationConfig) -> list[PromptRecord]:
    from kgprobe.reasoning.distractors import parse_protocol
    from kgprobe.reasoning.paper_items import candidates_for, p2_population, paper_items

    protocol = parse_protocol(config.candidates)
    out = []
    for rule, items in paper_items(config.rules).items():
        pool = [g for i in items for g in i.golds]
        evaluated = items[:config.limit] if config.limit else items
        # Every premise probe: the memorized split is over all of them, whatever --limit keeps.
        probes = [("P1", i.probes["P1"], i.id) for i in items]
        probes += [("P2", p, "") for p in p2_population(rule)]
        pools = {role: [g for r, q, _ in probes if r == role for g in q.golds]
                 for role in ("P1", "P2")}
        for role, probe, item_id in probes:
            n = len(protocol.candidates(candidates_for(probe.candidates, pools[role]),
                                        list(probe.golds), seed=f"{config.seed}:{probe.record}"))
            out.append(PromptRecord(STUDY, probe.text, probe.golds, n, rule=rule,
                                    template="manual", extra={
                                        "kind": "premise probe", "role": role, "item": item_id,
                                        "record": probe.record, "protocol": "paper",
                                        "pairs": config.pairs}))
        for item in evaluated:
            n = len(protocol.candidates(candidates_for(item.candidates, pool), list(item.golds),
                                        seed=f"{config.seed}:{item.id}"))
            for p1, p2 in WRITTEN:
                out.append(PromptRecord(
                    STUDY, item.text(p1, p2), item.golds, n, rule=rule, template="manual",
                    p1=item.p1 if p1 else "", p2=item.p2 if p2 else "",
                    h=f"{item.hypothesis} [MASK] {item.end}",
                    extra={"kind": "reasoning", "item": item.id, "record": item.record.index,
                           "protocol": "paper", "pairs": config.pairs}))
    return out


def default_records(config: AblationConfig) -> list[PromptRecord]:
    from .candidates import item_candidates
    from .cells import variants
    from .study import build_study, premise_probes, reasoning_prompt

    study = build_study(config, config.load_source(), load=False)
    out = []
    # The premise probes over the relation's whole population, as the run classifies them.
    for probe in premise_probes(study):
        first = probe.keys[0]
        out.append(PromptRecord(STUDY, probe.prompt, tuple(sorted({k.answer for k in probe.keys})),
                                len(probe.candidates), task=first.relation, template="manual",
                                extra={"kind": "premise probe", "role": first.role,
                                       "protocol": "default", "pairs": config.pairs}))
    for rule, rule_items in study.items.items():
        for item in rule_items:
            n = len(item_candidates(study, item))
            for v in variants(study.templates, rule, "manual"):
                for p1, p2 in WRITTEN:
                    s1, s2 = ("explicit" if p1 else "not"), ("explicit" if p2 else "not")
                    hyp = item.hypotheses[v] if item.hypotheses else item.conclusion["text"]
                    out.append(PromptRecord(
                        STUDY, reasoning_prompt(study, item, s1, s2, "manual", variant=v),
                        tuple(item.answers), n, rule=rule, template=f"manual:{v}",
                        p1=item.premises[0].text if p1 else "",
                        p2=item.premises[1].text if p2 else "", h=hyp,
                        extra={"kind": "reasoning", "item": item.id, "protocol": "default",
                               "pairs": config.pairs}))
    if config.deep:  # the chained cells' prompts (depth.py)
        from .depth import dry_records

        out += dry_records(study)
    return out


def write_dry_run(config: AblationConfig, out: Path) -> int:
    """Write ``OUT/prompts.jsonl``; returns the number of prompts."""
    records = paper_records(config) if config.protocol == "paper" else default_records(config)
    Path(out).mkdir(parents=True, exist_ok=True)
    return write_prompts(out, records)
