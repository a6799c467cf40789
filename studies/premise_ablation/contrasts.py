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

Every comparison of the report (these and `cells.COMPARISONS`) is also computed on each
control's prompts (the same requests, `studies.controls`); a row is **claimed** when its
interval excludes 0, its Holm p (over the whole file) is below 0.05 and its estimate exceeds
every control's upper bound (`comparisons.claimed`) — never for a run whose model is itself a
control.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from kgprobe.studies import comparisons
from kgprobe.studies.controls import control_folder, is_control

from .cells import COMPARISONS, MEAN, Prompt, compare, load_prompts, result_rows, sample
from .config import COMPARISON_COLUMNS, METRICS
from .settings import ReportSettings

INTERACTION = "known P1 (implicit − not given), P2 written minus P2 not given"
WRITTEN = {"P1": ("P1 written − unwritten (P2 not given), minus copy",
                  (("explicit", "not"),), (("not", "not"), ("implicit", "not"))),
           "P2": ("P2 written − unwritten (P1 not given), minus copy",
                  (("not", "explicit"),), (("not", "not"), ("not", "implicit")))}
#: The contrasts' labels, in the order comparisons.csv lists them.
CONTRASTS = (INTERACTION, *(label for label, _, _ in WRITTEN.values()))
#: The control every written-premise contrast subtracts.
COPY = "copy"


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
    return [f"{m}_{c}{suffix}" for c in controls for m in METRICS for suffix in ("", "_lo", "_hi")]


def _key(row: dict) -> tuple:
    return tuple(str(row.get(k, "")) for k in ("rule", "p1", "p2", "template", "variant",
                                                "depth", "distractors"))


def with_controls(rows: list[dict], tables: dict[str, list[dict]]) -> list[dict]:
    """`rows` with each control's value and interval in the same cell beside the model's."""
    for control, table in tables.items():
        by_key = {_key(r): r for r in table}
        for row in rows:
            other = by_key.get(_key(row), {})
            for m in METRICS:
                for suffix in ("", "_lo", "_hi"):
                    row[f"{m}_{control}{suffix}"] = other.get(f"{m}{suffix}", "")
    return rows


def control_tables(out: Path, controls: dict[str, list[Prompt]], config: ReportSettings,
                   ) -> dict[str, list[dict]]:
    """Each control's results rows, built as the model's are (chained cells too)."""
    tables = {}
    for control, prompts in controls.items():
        table = result_rows(prompts, config)
        if config.chained:
            from .depth_report import depth_rows

            table += depth_rows(control_folder(out, control, config.model), config)
        tables[control] = table
    return tables


# ------------------------------------------------------------------ the contrasts


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


def minus_copy(name: str, prompts: list[Prompt], copy: list[Prompt] | None, first, second,
               config: ReportSettings, stratified: bool) -> comparisons.Comparison:
    """(first − second) of `prompts` minus the same of the copy control, paired by prompt."""
    if copy is None:
        return comparisons.Comparison(name, "paired", *([math.nan] * 4), "0")
    own = {p.match: p for p in differences(copy, first, second)}
    mine = [p for p in differences(prompts, first, second) if p.match in own]
    a, b = _mrr(mine, stratified), _mrr([own[p.match] for p in mine], stratified)
    return comparisons.paired_difference(name, a, b, seed=config.seed,
                                         resamples=config.resamples)


def _tests(prompts: list[Prompt], copy: list[Prompt] | None, scope: str, config: ReportSettings,
           stratified: bool) -> list[comparisons.Comparison]:
    """Every comparison of one scope (template kind / rule) on one model's prompts."""
    found = [compare(spec, prompts, f"{scope}/{spec.label}", config, stratified)
             for spec in COMPARISONS]
    found.append(interaction(f"{scope}/{INTERACTION}", prompts, config, stratified))
    for label, first, second in WRITTEN.values():
        found.append(minus_copy(f"{scope}/{label}", prompts, copy, set(first), set(second),
                                config, stratified))
    return found


def _labels() -> list[str]:
    return [spec.label for spec in COMPARISONS] + list(CONTRASTS)


def comparison_table(prompts: list[Prompt], controls: dict[str, list[Prompt]],
                     config: ReportSettings) -> tuple[list[dict], list[str]]:
    """comparisons.csv's rows and columns: every comparison and contrast per template kind,
    per rule and over the rules, Holm-adjusted together, each with every control's estimate
    and upper bound and whether it is claimed."""
    kinds = config.templates or sorted({p.template for p in prompts})
    rules = config.rules or sorted({p.rule for p in prompts})
    names = list(controls)
    found, keys, beside = [], [], []
    for kind in kinds:
        for rule in [MEAN, *rules]:
            def scope(ps: list[Prompt], kind=kind, rule=rule) -> list[Prompt]:
                return [p for p in ps if p.template == kind and rule in (MEAN, p.rule)]

            copy = scope(controls[COPY]) if COPY in controls else None
            tests = _tests(scope(prompts), copy, f"{kind}/{rule}", config, rule == MEAN)
            others = {c: _tests(scope(controls[c]), copy, f"{kind}/{rule}", config, rule == MEAN)
                      for c in names}
            for i, (test, label) in enumerate(zip(tests, _labels())):
                found.append(test)
                keys.append({"template": kind, "rule": rule, "comparison": label})
                beside.append({c: others[c][i] for c in names})
    comparisons.adjust(found)
    control_model = is_control(config.model)
    rows = []
    for key, c, other in zip(keys, found, beside):
        row = {**key, "test": c.test, "n_items": c.n_items, "difference": c.estimate,
               "difference_lo": c.lo, "difference_hi": c.hi, "p": c.p, "p_holm": c.p_holm,
               "finding": "yes" if c.supported() else "no",
               "estimate": c.estimate, "lo": c.lo, "hi": c.hi}
        for name, o in other.items():
            row[f"control_estimate_{name}"], row[f"control_hi_{name}"] = o.estimate, o.hi
        row["claimed"] = comparisons.claimed(c, [o.hi for o in other.values()],
                                             control_model=control_model)
        rows.append(row)
    columns = [*COMPARISON_COLUMNS, "estimate", "lo", "hi",
               *[f"control_{what}_{c}" for c in names for what in ("estimate", "hi")], "claimed"]
    return rows, columns


__all__ = ["CONTRASTS", "INTERACTION", "comparison_table", "control_columns",
           "control_tables", "interaction", "load_controls", "minus_copy", "with_controls"]
