"""The premise-ablation study's numbers with their uncertainty, from the prompts on disk.

Every scored prompt is one observation — an (item, pseudoword pair, manual template) triple
nested in its item — stored with its gold ranks in the unit files and ``predictions.jsonl``.
From them this module builds

* ``results.csv``: each unit's cell (one template), the template average of each cell
  (``variant`` "mean": the paper averages a relation's manual templates, Table 3) and the
  rule average of that (``rule`` "mean"), each with ``n_items``, ``n_prompts`` and a 95 %
  interval per metric that resamples items (stratified by rule for the rule average) — with
  several pseudoword pairs, items and pairs as crossed random factors (`cell_interval`);
* the differences the paper's findings rest on (`COMPARISONS`, each tested by `compare`),
  which `contrasts.py` writes into ``comparisons.csv`` with the other families' rows.

Everything is recomputed from the observations with seeds derived from the run's seed, so a
killed and resumed run ends with the same intervals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kgprobe.errors import StudyError
from kgprobe.ontology.verbalize import TemplateSet, load_templates
from kgprobe.reasoning.distractors import parse_protocol
from kgprobe.reasoning.items import RULE_RELATIONS
from kgprobe.studies import comparisons, stats

from .columns import DEPTH_COLUMNS, METRICS, SETTINGS
from .settings import ReportSettings

MEAN = "mean"


@dataclass(frozen=True)
class Prompt:
    """One observation: a prompt of a cell and its metric values (R@1, R@5, MRR, MRRa)."""

    rule: str
    p1: str
    p2: str
    template: str
    variant: int
    item: str
    pair: int
    values: tuple[float, ...]

    @property
    def match(self) -> tuple:
        """What identifies the prompt across premise settings (for paired comparisons)."""
        return (self.rule, self.item, self.pair, self.variant)


@dataclass(frozen=True)
class Spec:
    """A comparison the report tests: `first` vs `second` cells (P1, P2), or `first` vs 100."""

    label: str
    test: str  # "paired" | "unpaired" | "target"
    first: tuple[tuple[str, str], ...]
    second: tuple[tuple[str, str], ...] = ()


COMPARISONS = (
    Spec("P1 explicit vs unwritten (P2 not given)", "paired", (("explicit", "not"),),
         (("not", "not"), ("implicit", "not"))),
    Spec("P1 implicit vs not given (P2 not given)", "unpaired", (("implicit", "not"),),
         (("not", "not"),)),
    Spec("P2 explicit vs unwritten (P1 not given)", "paired", (("not", "explicit"),),
         (("not", "not"), ("not", "implicit"))),
    Spec("P2 implicit vs not given (P1 not given)", "unpaired", (("not", "implicit"),),
         (("not", "not"),)),
    Spec("both explicit vs 100", "target", (("explicit", "explicit"),)),
)


def prompt_values(ranks: list[int]) -> tuple[float, ...]:
    """R@1, R@5, MRR, MRRa of one prompt from its gold ranks (`metrics.rank_metrics`)."""
    from kgprobe.studies.metrics import rank_metrics

    values = rank_metrics(ranks, ks=(1, 5))
    return tuple(values[m] for m in METRICS)


def load_prompts(out: Path) -> list[Prompt]:
    path = out / "predictions.jsonl"
    if not path.exists():
        raise StudyError(f"{out}: no predictions.jsonl; run `kgprobe study premise-ablation "
                         f"--out {out}` (again) to finish the run")
    prompts = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            if "depth" in p or p.get("premises", "true") != "true":
                continue  # a chained or counterfactual cell's prompt (their *_report.py)
            ranks = p.get("gold_ranks") or [p["gold_rank"]]
            prompts.append(Prompt(p["rule"], p["p1"], p["p2"], p["template"],
                                  int(p.get("variant", 0)), p["item"], int(p["pair"]),
                                  prompt_values(ranks)))
    return prompts


def variants(templates: TemplateSet, rule: str, kind: str) -> list[int]:
    """The templates a cell is scored under: every manual template of the hypothesis relation
    (the paper averages them, Table 3), the one soft template."""
    if kind != "manual":
        return [0]
    return list(range(len(templates[RULE_RELATIONS[rule][2]].manual)))


def sample(prompts: list[Prompt], stratified: bool = False) -> stats.Clustered:
    """Prompts clustered by item (and by rule, for a rule average)."""
    if not prompts:
        return stats.Clustered(np.zeros((0, len(METRICS))), np.zeros(0), np.zeros(0, dtype=object))
    return stats.Clustered.from_prompts([(p.rule, p.item) for p in prompts],
                                        [p.values for p in prompts],
                                        [p.rule for p in prompts] if stratified else None)


def cell_interval(prompts: list[Prompt], clustered: stats.Clustered, key: dict,
                  config: ReportSettings, stratified: bool) -> stats.Interval:
    """A cell's interval. With one pseudoword pair per item, the item bootstrap (conditional
    on that one draw: the report says so). With several, pair j is the same pair for every
    item, so pairs are a second random factor crossed with items (`stats.two_way_interval`);
    a cell whose prompts hold a single pair or a single item falls back to the item bootstrap."""
    if (config.pairs or 1) > 1 and len({p.pair for p in prompts}) > 1 and clustered.n_items > 1:
        crossed = stats.Crossed.from_prompts([(p.rule, p.item) for p in prompts],
                                             [p.pair for p in prompts], [p.values for p in prompts],
                                             [p.rule for p in prompts] if stratified else None)
        return stats.two_way_interval(crossed)
    return stats.bootstrap_interval(clustered, seed=config.seed, key=tuple(key.values()),
                                    resamples=config.resamples)


def cell_row(key: dict, prompts: list[Prompt], config: ReportSettings, *, stratified: bool = False) -> dict:
    row = {**key, "n": len(prompts), "n_items": 0, "n_prompts": len(prompts),
           "protocol": parse_protocol(config.candidates).name,  # as config.json spells it
           "study_protocol": config.protocol,
           # a folder from before filtered ranking existed ranked raw
           "ranking": config.ranking}
    if not prompts:
        return row  # an empty cell: no numbers, not made-up zeros
    clustered = sample(prompts, stratified)
    interval = cell_interval(prompts, clustered, key, config, stratified)
    row["n_items"] = interval.n_items
    for k, metric in enumerate(METRICS):
        row.update({metric: float(interval.estimate[k]), f"{metric}_lo": float(interval.lo[k]),
                    f"{metric}_hi": float(interval.hi[k])})
    # A rule with a single item adds nothing to resample: the rule average's interval is then
    # too narrow, so it is flagged however many items the other rules have.
    lone = any(np.count_nonzero(clustered.strata == s) == 1 for s in clustered.stratum_labels())
    low = interval.n_items < config.min_items or (stratified and lone)
    row["low_n"] = "yes" if low else ""
    return row


def result_rows(prompts: list[Prompt], config: ReportSettings) -> list[dict]:
    """Every unit's row, then each cell's template average, then the rule averages."""
    templates = load_templates()
    kinds = config.templates or sorted({p.template for p in prompts})
    rules = config.rules or sorted({p.rule for p in prompts})
    by_cell: dict[tuple, list[Prompt]] = {}
    for p in prompts:
        by_cell.setdefault((p.rule, p.template, p.p1, p.p2), []).append(p)
    units, means, overall = [], [], []
    for kind in kinds:
        for p1 in SETTINGS:
            for p2 in SETTINGS:
                for rule in rules:
                    cell = by_cell.get((rule, kind, p1, p2), [])
                    # The paper protocol scores one template per rule (its scripts' template).
                    paper = config.protocol == "paper"
                    for v in [0] if paper else variants(templates, rule, kind):
                        key = {"rule": rule, "p1": p1, "p2": p2, "template": kind, "variant": v}
                        units.append(cell_row(key, [p for p in cell if p.variant == v], config))
                    means.append(cell_row({**key, "variant": MEAN}, cell, config))
                every = [p for rule in rules for p in by_cell.get((rule, kind, p1, p2), [])]
                key = {"rule": MEAN, "p1": p1, "p2": p2, "template": kind, "variant": MEAN}
                overall.append(cell_row(key, every, config, stratified=True))
    return units + means + overall


# ------------------------------------------------------------------ comparisons


def _paired(first: list[Prompt], second: list[Prompt], stratified: bool):
    """Item-level sums of MRR over the prompts both sides hold, items in one order."""
    other = {p.match: p for p in second}
    matched = [(p, other[p.match]) for p in first if p.match in other]
    a = sample([p for p, _ in matched], stratified)
    b = sample([q for _, q in matched], stratified)
    mrr = METRICS.index("MRR")
    return (stats.Clustered(a.sums[:, [mrr]], a.counts, a.strata),
            stats.Clustered(b.sums[:, [mrr]], b.counts, b.strata))


def _mrr(prompts: list[Prompt], stratified: bool) -> stats.Clustered:
    s = sample(prompts, stratified)
    return stats.Clustered(s.sums[:, [METRICS.index("MRR")]], s.counts, s.strata)


def compare(spec: Spec, prompts: list[Prompt], name: str, config: ReportSettings,
            stratified: bool) -> comparisons.Comparison:
    """One comparison on MRR over `prompts` (one template kind; one rule or all of them).

    P2's implicit and not-given groups can share items when there are several pseudoword
    pairs (the pair decides whether the model knows P2); the unpaired test then treats the
    groups as independent, which only widens the interval.
    """
    seed, resamples = config.seed, config.resamples
    first = [p for p in prompts if (p.p1, p.p2) in spec.first]
    second = [p for p in prompts if (p.p1, p.p2) in spec.second]
    if spec.test == "paired":
        a, b = _paired(first, second, stratified)
        return comparisons.paired_difference(name, a, b, seed=seed, resamples=resamples)
    if spec.test == "unpaired":
        return comparisons.unpaired_difference(name, _mrr(first, stratified), _mrr(second, stratified),
                                         seed=seed, resamples=resamples)
    return comparisons.against_target(name, _mrr(first, stratified), 1.0, seed=seed,
                                resamples=resamples)


#: The prediction fields that name a premise-ablation cell (one template variant).
CELLS = ("rule", "p1", "p2", "template", "variant")


def observations(out: str | Path) -> list[dict]:
    """Each scored prompt (item, pseudoword pair, template variant) with its metrics
    (`Study.observations`); ``item`` is the reasoning item, so a paired comparison averages
    an item's pairs before it pairs items."""
    from kgprobe.studies.metrics import rank_observations

    predictions = stats.read_predictions(Path(out))
    # a run with chained items: its cells are told apart by depth and distractors too
    cells = CELLS + DEPTH_COLUMNS if any("depth" in p for p in predictions) else CELLS
    if any("premises" in p for p in predictions):  # and counterfactual cells by premises
        predictions = [{"premises": "true", **p} for p in predictions]
        cells += ("premises",)
    return rank_observations(predictions, cells, item="item")
