"""The premise-ablation contrasts a control cannot fake, and every cell read beside the controls.

Two cells that ask the same text differ only in *which items* land in them (whether the model
knows P1 decides it), so a difference between them can be a selection effect: a frequency
control that reads nothing "gains" from a known P1 when known premises are those with frequent
answers. The contrasts here hold the prompt fixed or difference it out:

* **known P1, as an interaction**: (P1 implicit − P1 not given | P2 written) − (P1 implicit −
  P1 not given | P2 not given), computed as the difference between two groups of items of a
  *paired* within-item effect: writing P2 for the items whose P1 the model knows, minus
  writing P2 for those whose P1 it does not know (each item's prompts matched by pair and
  template). An item's own answer is in both of its prompts and cancels; a model that reads
  nothing has a zero effect in both groups. Its p is the label permutation of the two groups
  (`comparisons.unpaired_difference`), within rules for the rule average.
* **a written premise, against copy**: (written − not given) of the model minus the same of
  the ``copy`` control, paired by prompt: a copier gains from a written premise without any
  inference, so only the gain beyond copying can be inference.

The same "beyond copy" contrast reads the chained cells (`depth_report`: writing the chain at
each depth and number of distractors) and the counterfactual ones (`counterfactual_report`:
following a written false P1): each design is a `Family` of tests, and `comparison_table`
puts every family's rows into the one comparisons.csv (``family`` says which).

Every comparison of the report (these and `cells.COMPARISONS`) is also computed on each
control's prompts (the same requests, `studies.controls`) and shown beside it, as a
**descriptive** row (``role``): Holm-adjusted among the descriptive rows, never claimed. A
gain "minus copy" subtracts one control only, so it is no claim. Claims are the
**confirmatory** rows (`family`): a few declared cells, model − every control on the same
prompts, one-sided, Holm within that family only. A run whose model is itself a control is
tested against the other controls (`tested_controls`): the design must claim nothing there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from kgprobe.models.registry import COPY  # the control every written-premise contrast subtracts
from kgprobe.studies import comparisons
from kgprobe.studies.controls import beside, control_folder, control_model
from kgprobe.studies.controls import control_columns as generic_columns

from .cells import COMPARISONS, MEAN, Prompt, compare, load_prompts, sample
from .columns import COMPARISON_COLUMNS, METRICS
from .family import DESCRIPTIVE_ROLE, TEMPLATE, UNWRITTEN, confirmatory_rows, declared
from .settings import ReportSettings

INTERACTION = "known P1 (implicit − not given), P2 written minus P2 not given"
WRITTEN = {"P1": ("P1 written − unwritten (P2 not given), minus copy",
                  (("explicit", "not"),), (("not", "not"), ("implicit", "not"))),
           "P2": ("P2 written − unwritten (P1 not given), minus copy",
                  (("not", "explicit"),), (("not", "not"), ("not", "implicit")))}
#: A written cell's level against copy's on the same prompts: no unwritten cell enters, so a
#: model that starts far below frequency (copy's unwritten level) gains no room from it.
LEVEL = {"P1": ("P1 written (P2 not given), model − copy", (("explicit", "not"),)),
         "P2": ("P2 written (P1 not given), model − copy", (("not", "explicit"),))}
#: The contrasts' labels, in the order comparisons.csv lists them.
CONTRASTS = (INTERACTION, *(label for label, _, _ in WRITTEN.values()),
             *(label for label, _ in LEVEL.values()))
#: The control an unpaired row must be read against to be claimed (the model's own prior).
PRIOR = "prior"
#: The chained cells' contrast: writing the premises at one depth, minus copy (`depth_report`).
CHAINED = "written − unwritten, minus copy"
#: The chained cells' level against copy's on the same prompts (`depth_report`): with naming
#: distractors copy no longer ranks the gold first, so a model can exceed it without a gain.
CHAINED_LEVEL = "written, model − copy"
#: The counterfactual cells' contrast: the false P1 followed beyond copying
#: (`counterfactual_report`).
FOLLOWS = "false P1 written − unwritten, minus copy"


def load_controls(out: Path, config: ReportSettings) -> dict[str, list[Prompt]]:
    """Each control's prompts (its run folder's predictions.jsonl); a control whose folder
    holds none (a run stopped before its controls) is left out."""
    found = {}
    for control in config.controls:
        folder = control_folder(out, control, config.model)
        if (folder / "predictions.jsonl").exists():
            found[control] = load_prompts(folder)
    return found


def control_columns(controls) -> list[str]:
    """results.csv's columns for the controls: ``MRR_copy``, ``MRR_copy_lo``, ... per metric."""
    return generic_columns(controls, METRICS)


#: What names a results.csv row's cell (a control's row of the same cell has the same values).
CELL_KEYS = ("rule", "p1", "p2", "template", "variant", "depth", "distractors", "premises")


def with_controls(rows: list[dict], tables: dict[str, list[dict]]) -> list[dict]:
    """`rows` with each control's value and interval in the same cell beside the model's."""
    return beside(rows, tables, CELL_KEYS, METRICS)


def differences(prompts: list[Prompt], first, second) -> list[Prompt]:
    """Each prompt of a `first` cell minus its match (same item, pair, template) in a
    `second` cell: the within-item effect of the change, one observation per matched prompt."""
    other = {p.match: p for p in prompts if (p.p1, p.p2) in second}
    return [replace(p, values=tuple(np.subtract(p.values, other[p.match].values)))
            for p in prompts if (p.p1, p.p2) in first and p.match in other]


def _mrr(prompts: list[Prompt], stratified: bool):
    s = sample(prompts, stratified)
    return type(s)(s.sums[:, [METRICS.index("MRR")]], s.counts, s.strata)


def interaction(name: str, prompts: list[Prompt], config: ReportSettings,
                stratified: bool) -> comparisons.Comparison:
    """(implicit − not | P2 written) − (implicit − not | P2 not given), on MRR: writing P2's
    within-item effect for P1-known items minus that for P1-not-known items."""
    known = differences(prompts, {("implicit", "explicit")}, {("implicit", "not")})
    unknown = differences(prompts, {("not", "explicit")}, {("not", "not")})
    found = comparisons.unpaired_difference(name, _mrr(known, stratified),
                                            _mrr(unknown, stratified), seed=config.seed,
                                            resamples=config.resamples)
    found.test = "interaction"
    return found


def gains(first: list[Prompt], second: list[Prompt]) -> dict[tuple, Prompt]:
    """Each prompt of `first` minus its match (same item, pair, template) in `second`, by
    match: what the change adds on that prompt, the item's own level taken out."""
    other = {p.match: p for p in second}
    return {p.match: replace(p, values=tuple(np.subtract(p.values, other[p.match].values)))
            for p in first if p.match in other}


def beyond_copy(name: str, mine: dict[tuple, Prompt], copy: dict[tuple, Prompt] | None,
                config: ReportSettings, stratified: bool) -> comparisons.Comparison:
    """A model's gains (`gains`) minus the copy control's on the same prompts, paired by
    prompt: what the model gains beyond what copying the named candidates gains."""
    if copy is None:
        return comparisons.Comparison(name, "paired", *([math.nan] * 4), "0")
    keys = [k for k in mine if k in copy]
    a, b = _mrr([mine[k] for k in keys], stratified), _mrr([copy[k] for k in keys], stratified)
    return comparisons.paired_difference(name, a, b, seed=config.seed, resamples=config.resamples)


def minus_copy(name: str, prompts: list[Prompt], copy: list[Prompt] | None, first, second,
               config: ReportSettings, stratified: bool) -> comparisons.Comparison:
    """(first − second) of `prompts` minus the same of the copy control, paired by prompt."""
    def cells(ps, wanted):
        return [p for p in ps if (p.p1, p.p2) in wanted]

    return beyond_copy(name, gains(cells(prompts, first), cells(prompts, second)),
                       None if copy is None else gains(cells(copy, first), cells(copy, second)),
                       config, stratified)


def _tests(prompts: list[Prompt], copy: list[Prompt] | None, scope: str, config: ReportSettings,
           stratified: bool) -> list[comparisons.Comparison]:
    """Every comparison of one scope (template kind / rule) on one model's prompts."""
    found = [compare(spec, prompts, f"{scope}/{spec.label}", config, stratified)
             for spec in COMPARISONS]
    found.append(interaction(f"{scope}/{INTERACTION}", prompts, config, stratified))
    for label, first, second in WRITTEN.values():
        found.append(minus_copy(f"{scope}/{label}", prompts, copy, set(first), set(second),
                                config, stratified))
    for label, cell in LEVEL.values():
        mine = {p.match: p for p in prompts if (p.p1, p.p2) in set(cell)}
        theirs = None if copy is None else {p.match: p for p in copy if (p.p1, p.p2) in set(cell)}
        found.append(beyond_copy(f"{scope}/{label}", mine, theirs, config, stratified))
    return found


def _labels() -> list[str]:
    return [spec.label for spec in COMPARISONS] + list(CONTRASTS)


#: keyed tests: (the row's key columns, the comparison)
Keyed = list[tuple[dict, comparisons.Comparison]]


@dataclass(frozen=True)
class Family:
    """One design's tests in comparisons.csv (``family``: grid, depth, counterfactual):
    `tests` turns one model's data (and the copy control's, or None) into keyed comparisons
    (descriptive rows); it runs on the model's data and on every control's, the same way.
    `levels` turns one model's data into its declared confirmatory cells (`family.Level`:
    key columns, prompts), read against each control's same cells."""

    name: str
    model: Any
    controls: dict[str, Any]
    tests: Callable[[Any, Any], Keyed]
    levels: Callable[[Any], list] = lambda data: []


def grid_levels(prompts: list[Prompt], config: ReportSettings) -> list:
    """The grid's confirmatory cells (`family.declared("grid")`), manual templates, rules
    averaged; none when the run has no manual templates."""
    kinds = config.templates or sorted({p.template for p in prompts})
    if TEMPLATE not in kinds:
        return []
    manual = [p for p in prompts if p.template == TEMPLATE]
    return [({"template": TEMPLATE, "rule": MEAN, "comparison": d.label},
             [p for p in manual if (p.p1, p.p2) == (d.p1, d.p2)],
             [p for p in manual if (p.p1, p.p2) in d.unwritten]) for d in declared("grid")]


def grid_family(prompts: list[Prompt], controls: dict[str, list[Prompt]],
                config: ReportSettings) -> Family:
    """The premise grid's comparisons and contrasts, per template kind, per rule and over
    the rules (kinds and rules: the run's, or the model's prompts')."""
    kinds = config.templates or sorted({p.template for p in prompts})
    rules = config.rules or sorted({p.rule for p in prompts})

    def tests(mine: list[Prompt], copy: list[Prompt] | None) -> Keyed:
        found = []
        for kind in kinds:
            for rule in [MEAN, *rules]:
                def scope(ps: list[Prompt], kind=kind, rule=rule) -> list[Prompt]:
                    return [p for p in ps if p.template == kind and rule in (MEAN, p.rule)]

                tested = _tests(scope(mine), None if copy is None else scope(copy),
                                f"{kind}/{rule}", config, rule == MEAN)
                found += [({"template": kind, "rule": rule, "comparison": label}, c)
                          for label, c in zip(_labels(), tested)]
        return found

    return Family("grid", prompts, controls, tests, lambda data: grid_levels(data, config))


def _row_key(key: dict) -> tuple:
    return tuple(sorted(key.items()))


def tested_controls(controls, model: str | None) -> list[str]:
    """The controls a run's rows are read against: every one but the model itself (a run of
    a control is tested against the other controls, so the design is checked both ways)."""
    return [c for c in controls if model is None or control_model(c, model) != model]


def comparison_table(prompts: list[Prompt], controls: dict[str, list[Prompt]],
                     config: ReportSettings, families: Sequence[Family] = ()
                     ) -> tuple[list[dict], list[str]]:
    """comparisons.csv's rows and columns: first the confirmatory family (`family`: each
    declared cell the run has, model − each control on the same prompts, one-sided, Holm
    over the family only, the only rows that can be ``claimed``), then every descriptive row
    — the grid's comparisons and contrasts and those of `families` (depth, counterfactual) —
    Holm-adjusted among themselves, each with every control's estimate and upper bound on
    its own prompts, never claimed."""
    names = list(controls)
    against = tested_controls(names, config.model)
    levels, found, keys, beside = [], [], [], []
    for design in (grid_family(prompts, controls, config), *families):
        theirs = {c: {_row_key(k): ps for k, ps, _ in design.levels(design.controls[c])}
                  for c in against if c in design.controls}
        for key, mine, unwritten in design.levels(design.model):
            levels.append(({"family": design.name, **key}, mine, unwritten,
                           {c: t[_row_key(key)] for c, t in theirs.items()
                            if _row_key(key) in t}))
        copy = design.controls.get(COPY)
        with comparisons.estimates_only():  # a control's side shows its estimate and bound
            others = {c: {_row_key(k): t for k, t in design.tests(design.controls[c], copy)}
                      for c in names if c in design.controls}
        for key, test in design.tests(design.model, copy):
            found.append(test)
            keys.append({"family": design.name, **key})
            beside.append({c: others[c].get(_row_key(key)) for c in others})
    rows = confirmatory_rows(levels, against, config)
    comparisons.adjust(found)
    nan = comparisons.Comparison("", "", *([math.nan] * 4), "0")
    for key, c, other in zip(keys, found, beside):
        row = {**key, "role": DESCRIPTIVE_ROLE, "test": c.test, "n_items": c.n_items,
               "difference": c.estimate, "difference_lo": c.lo, "difference_hi": c.hi,
               "p": c.p, "p_holm": c.p_holm, "finding": "yes" if c.supported() else "no",
               "estimate": c.estimate, "lo": c.lo, "hi": c.hi, "claimed": False}
        for name in names:
            o = other.get(name) or nan
            row[f"control_estimate_{name}"], row[f"control_hi_{name}"] = o.estimate, o.hi
        rows.append(row)
    columns = ["family", "role", *COMPARISON_COLUMNS, "depth", "distractors", "estimate", "lo",
               "hi", "model_value",
               *[f"control_{what}_{c}" for c in names for what in ("estimate", "hi")],
               *([f"control_estimate_{UNWRITTEN}"] if against else []),
               *[f"control_{what}_{c}" for c in (*against, UNWRITTEN) if against
                 for what in ("diff", "lo", "p")],
               "stopped_by", "claimed"]
    return rows, columns


__all__ = ["tested_controls", "grid_levels", "CHAINED", "CHAINED_LEVEL", "CONTRASTS", "FOLLOWS", "INTERACTION", "LEVEL", "PRIOR", "WRITTEN", "Family", "beyond_copy", "comparison_table", "gains", "control_columns",
           "interaction", "load_controls", "minus_copy", "with_controls"]
