"""`kgprobe compare RUN RUN …`: one study's runs on different models, cell by cell, paired by item.

Two models probed with the same settings see the same items, so the question "is model B
better than model A here?" is answered item by item: each cell's per-item differences are
bootstrapped as a cell is (`studies/stats.py`) and tested with the paired permutation test of
`studies/comparisons.py`, and Holm's adjustment runs over the whole table (every cell × every
model against the baseline), so a reading of the table claims only what survives it.

Runs are comparable only if nothing but the model differs: the study, every pinned setting
that changes items or numbers (`IGNORED` lists the ones that do not) and every recorded one
(`RECORDED`: the candidates, which each run's config.json names) — among them the
candidate protocol, the ranking, the templates, the controls and the study protocol, whose
refusal also says why (`WHY`) —, the cells' protocol columns (only `MODEL_CELLS` may
differ, as they follow from the model), and the set of (cell, item) observations. Anything
else is refused with one line naming the difference, because a paired difference between
different items or protocols would measure those too.
One exception: a study whose cells depend on the model's own answers (`Study.model_assigned`:
the premise-ablation study puts an item under P1 "implicit" when the model recalls the
premise) has its items checked without those columns, and a cell the two models fill with
different items is compared unpaired (`comparisons.unpaired_difference`), marked as such.

A study may score an item several times in one cell (the premise-ablation study: pseudoword
pairs); each item's observations are averaged first, so every item weighs the same and the
pairing is by item. `studies/compare_report.py` writes the table, the reading and the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
from kgprobe.errors import StudyError
from kgprobe.studies.comparisons import (
    Comparison,
    adjust,
    paired_difference,
    unpaired_difference,
)
from kgprobe.studies.stats import RESAMPLES, Clustered, Interval, bootstrap_interval

if TYPE_CHECKING:
    import pandas

    from kgprobe.studies.results import Results

#: config.json keys that name the model or say how it ran, not what was asked of it: runs may
#: differ in these (the model is the point; "kind" is the model's, as STA records it; device,
#: dtype, batch size, cache and the report's resamples change no item).
IGNORED = ("model", "kind", "device", "dtype", "batch_size", "cache", "threads", "progress",
           "resamples", "min_items", "study")
#: How the model is addressed (`--chat-template`, models/chat.py): the same items asked with
#: and without a chat template is a comparison of two ways of asking one model, so runs may
#: differ in these too; each run's label names its template.
CHAT_KEYS = ("chat_template", "chat_instruction", "chat_template_sha256")
#: config.json keys a run records beside its pinned settings, which a folder written before
#: they were recorded lacks (memorization's ``candidates``): compared where both runs record
#: them; where one does not, the cells check what they can (`run_constants`).
RECORDED = ("candidates",)
#: Cell columns that follow from the model, not from what was asked (a baseline's masks and
#: pooling are "-", a causal model pools by "sum"): the only ones that may hold one different
#: value per run. Any other cell column that does (memorization's ``protocol``: its
#: candidates) is a protocol difference, refused.
MODEL_CELLS = ("masks", "pooling")
#: The option a cell column records, named in the refusal.
CELL_OPTION = {"protocol": "candidates"}
#: Why a setting that decides what the numbers mean refuses a comparison (said in the refusal):
#: a difference between such runs would measure the setting, not the models.
WHY = {"candidates": "the candidate protocol: MRR among other candidates is another scale",
       "ranking": "raw and filtered ranking count an item's other true answers differently",
       "templates": "other templates ask other prompts",
       "controls": "other controls: another claim rule",
       "protocol": "the study protocol: other items, prompts and metrics"}
#: The metric a comparison uses unless `--metric` names another: the first the runs have.
DEFAULT_METRICS = ("MRR", "accuracy")


@dataclass
class Run:
    """One run folder in a comparison: its label (the model, made unique), and its per-item
    values of the metric, indexed by (cell columns…, item)."""

    path: Path
    label: str
    model: str
    values: "pandas.Series"


@dataclass
class Row:
    """One cell × one model: the mean with its interval (NaN, 0 items, where the model put no
    item in the cell), and for a model other than the baseline the difference from the
    baseline with its interval and p-values (``difference.test``: paired or unpaired)."""

    cell: dict
    label: str
    model: str
    run: str
    baseline: bool
    n_items: int
    mean: float
    mean_lo: float
    mean_hi: float
    difference: Comparison | None = None


@dataclass
class Table:
    """A whole comparison: the study, the metric, the cell columns and one `Row` per cell × model
    (cells in the runs' order, models in the order given, the baseline first)."""

    study: str
    metric: str
    cell_columns: list[str]
    runs: list[Run]
    rows: list[Row] = field(default_factory=list)
    resamples: int = RESAMPLES
    seed: int = 0
    #: Cell columns with one value per run that differs between runs (the memorization
    #: study's pooling: "-" for the frequency baseline, "sum" for a causal model): a property
    #: of the run, not a cell, so cells are matched without them. Column → value per run.
    per_run: dict[str, list[str]] = field(default_factory=dict)

    @property
    def baseline(self) -> Run:
        return self.runs[0]

    @property
    def varying(self) -> list[str]:
        """The cell columns with more than one value (the rest say the same in every row)."""
        return [c for c in self.cell_columns if len({r.cell[c] for r in self.rows}) > 1]

    def cell_label(self, cell: dict) -> str:
        shown = self.varying
        return " ".join(f"{c}={cell[c]}" for c in shown) if shown else "all"


def paired_interval(first: Sequence[float], second: Sequence[float], *, seed: int, key: Sequence = (),
                    resamples: int = RESAMPLES) -> Interval:
    """The 95 % item-bootstrap interval of mean(first − second) over aligned per-item values:
    the interval `compare` reports for a model against the baseline (`paired_difference`
    computes the same one under the same key), here without the permutation test."""
    diff = np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64)
    return bootstrap_interval(Clustered.from_prompts(range(diff.size), diff), seed=seed, key=key,
                              resamples=resamples)


def load_runs(paths: Sequence[str | Path]) -> list["Results"]:
    """The run folders, checked to hold one study under the same settings but the model."""
    from kgprobe.studies.results import Results

    if len(paths) < 2:
        raise StudyError("kgprobe compare: give at least two run folders of one study "
                         "(the same settings, different models)")
    results = [Results.from_path(p) for p in paths]
    first = results[0]
    for other in results[1:]:
        if other.study != first.study:
            raise StudyError(f"{other.path}: a {other.study} run, but {first.path} is a "
                             f"{first.study} run; compare runs of one study")
        setting = differing_setting(first.config, other.config)
        if setting is not None:
            why = f" ({WHY[setting]})" if setting in WHY else ""
            raise StudyError(f"{other.path}: setting {setting!r} is {other.config.get(setting)!r}, "
                             f"but {first.config.get(setting)!r} in {first.path}{why}; compare "
                             "runs that differ only in the model (rerun one with the other's "
                             "setting)")
    return results


def differing_setting(first: dict, second: dict) -> str | None:
    """The first pinned setting (in config.json's order) two runs disagree on, model aside."""
    for key in list(dict.fromkeys([*first, *second])):
        if key in IGNORED or key in CHAT_KEYS or key in RECORDED and not (key in first and key in second):
            continue
        if first.get(key) != second.get(key):
            return key
    return None


def choose_metric(results: Sequence["Results"], metric: str | None) -> str:
    """`metric`, checked to be a per-item metric of every run; by default the first of
    `DEFAULT_METRICS` every run has."""
    frames = [r.observations() for r in results]
    have = [set(c for c in f.columns if c != "item" and f[c].notna().any()
                and _numeric(f[c])) for f in frames]
    common = set.intersection(*have) - set(_cell_columns(results[0]))
    if metric is None:
        metric = next((m for m in DEFAULT_METRICS if m in common), None)
        if metric is None:
            raise StudyError(f"these {results[0].study} runs have no MRR or accuracy per item; "
                             f"pass --metric with one of: {', '.join(sorted(common)) or 'none'}")
    elif metric not in common:
        raise StudyError(f"--metric {metric}: not a per-item metric of every run; use one of "
                         f"{', '.join(sorted(common)) or 'none'}")
    return metric


def _numeric(column) -> bool:
    import pandas.api.types as types

    return types.is_numeric_dtype(column)


def _assigned(results: "Results") -> list[str]:
    """The study's cell columns that each model's answers set (`Study.model_assigned`)."""
    from kgprobe.studies.registry import get_study

    return list(getattr(get_study(results.study), "model_assigned", ()))


def _cell_columns(results: "Results") -> list[str]:
    """The study's cell columns that the run's observations carry."""
    from kgprobe.studies.registry import get_study

    obs = results.observations()
    return [c for c in get_study(results.study).cell_columns if c in obs.columns]


def item_values(results: "Results", metric: str) -> "pandas.Series":
    """The run's per-item values of `metric`, indexed by (cell columns…, item): an item
    observed several times in a cell (pseudoword pairs, template variants) averaged first.
    Cell values are text, so the same cell matches across runs whatever its type on disk."""
    obs = results.observations()
    if obs.empty:
        raise StudyError(f"{results.path}: no scored items in predictions.jsonl; compare runs "
                         "that finished at least one unit")
    keys = [*_cell_columns(results), "item"]
    obs = obs[obs[metric].notna()].copy()
    for c in keys:
        obs[c] = obs[c].map(_text)
    return obs.groupby(keys, sort=False)[metric].mean().astype(float)


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def check_items(runs: Sequence[Run], assigned: Sequence[str] = ()) -> None:
    """Refuse runs whose (cell, item) observations differ: no pairing would be honest. The
    `assigned` cell columns (`Study.model_assigned`: set by each model's answers) are left
    out of the check; `table_rows` pairs within them where the models agree."""
    first = runs[0]
    mine = _checked_keys(first.values, assigned)
    for other in runs[1:]:
        theirs = _checked_keys(other.values, assigned)
        if theirs == mine:
            continue
        only_a, only_b = sorted(mine - theirs, key=str), sorted(theirs - mine, key=str)
        example = (f"e.g. {_key_text(only_a[0])} only in {first.path}" if only_a
                   else f"e.g. {_key_text(only_b[0])} only in {other.path}")
        raise StudyError(f"{first.path} and {other.path} hold different items: {len(only_a)} "
                         f"(cell, item) observations only in the first, {len(only_b)} only in "
                         f"the second ({example}); compare runs over the same items (the same "
                         "--limit, tasks and data)")


def _checked_keys(values: "pandas.Series", assigned: Sequence[str]) -> set:
    index = values.index
    if assigned:
        index = index.droplevel([n for n in index.names if n in assigned])
    return set(index)


def _key_text(key) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def labels(results: Sequence["Results"]) -> list[str]:
    """Each run's model (with its chat template, where one wraps its prompts), with its
    folder's name where two runs share a model."""
    models = [str(r.config.get("model", r.path.name)) + _chat_label(r.config) for r in results]
    return [m if models.count(m) == 1 else f"{m} ({r.path.name})" for m, r in zip(models, results)]


def _chat_label(config: dict) -> str:
    chat = config.get("chat_template")
    return f" [chat: {Path(chat).name if chat != 'auto' else chat}]" if chat else ""


def compare(paths: Sequence[str | Path], *, baseline: str | Path | None = None,
            metric: str | None = None, resamples: int = RESAMPLES, seed: int = 0) -> Table:
    """The comparison table of the run folders `paths` against `baseline` (default: the first;
    a baseline not among `paths` is added in front)."""
    if resamples < 100:
        raise StudyError(f"--resamples {resamples}: give at least 100 (2000 by default)")
    paths = [Path(p) for p in paths]
    if baseline is not None:
        base = Path(baseline)
        paths = [base] + [p for p in paths if p.resolve() != base.resolve()]
    results = load_runs(paths)
    metric = choose_metric(results, metric)
    runs = [Run(r.path, label, str(r.config.get("model", "")), item_values(r, metric))
            for r, label in zip(results, labels(results))]
    per_run = run_constants(runs)
    check_items(runs, _assigned(results[0]))
    columns = [c for c in _cell_columns(results[0]) if c not in per_run]
    table = Table(results[0].study, metric, columns, runs, resamples=resamples, seed=seed,
                  per_run=per_run)
    table.rows = table_rows(table)
    adjust([r.difference for r in table.rows if r.difference is not None])
    return table


def run_constants(runs: Sequence[Run]) -> dict[str, list[str]]:
    """Drop from every run's index the cell columns that hold one value in each run but not
    the same one in all (`Table.per_run`); return them with each run's value."""
    names = [n for n in runs[0].values.index.names if n != "item"]
    out = {}
    for name in names:
        values = [run.values.index.get_level_values(name).unique().tolist() for run in runs]
        if all(len(v) == 1 for v in values) and len({v[0] for v in values}) > 1:
            if name not in MODEL_CELLS:
                other = next(k for k, v in enumerate(values) if v[0] != values[0][0])
                option = CELL_OPTION.get(name, name)
                column = f" (its {name} column)" if option != name else ""
                raise StudyError(f"{runs[other].path}: setting {option!r}{column} is "
                                 f"{values[other][0]!r}, but {values[0][0]!r} in "
                                 f"{runs[0].path}; compare runs that differ only in the model "
                                 "(rerun one with the other's setting)")
            out[name] = [v[0] for v in values]
    if out:
        for run in runs:
            run.values = run.values.droplevel(list(out))
    return out


def table_rows(table: Table) -> list[Row]:
    """Every cell × model: its mean and interval, and the difference from the baseline:
    paired where both hold the same items in the cell, else unpaired (`Row.test`)."""
    by_cell = [_cells(run.values) for run in table.runs]
    cells = list(dict.fromkeys(key for cells in by_cell for key in cells))
    rows = []
    for cell_key in cells:
        cell = dict(zip(table.cell_columns, cell_key))
        base = by_cell[0].get(cell_key)
        for k, run in enumerate(table.runs):
            values = by_cell[k].get(cell_key)
            key = (table.metric, *cell_key, run.label)
            row = _mean_row(table, cell, run, k == 0, values, key)
            if k and base is not None and values is not None:
                name = " ".join(map(str, (*key, "-", table.baseline.label)))
                row.difference = _difference(name, values, base, table)
            rows.append(row)
    return rows


def _cells(values: "pandas.Series") -> dict[tuple, "pandas.Series"]:
    """The run's per-item values, cell by cell (each indexed by item)."""
    if values.index.nlevels == 1:  # no cell column left: one cell
        return {(): values}
    out = {}
    for key, part in values.groupby(level=list(range(values.index.nlevels - 1)), sort=False):
        out[key if isinstance(key, tuple) else (key,)] = part.droplevel(
            list(range(values.index.nlevels - 1)))
    return out


def _mean_row(table: Table, cell: dict, run: Run, baseline: bool,
              values: "pandas.Series | None", key: tuple) -> Row:
    if values is None:  # the model put no item in this cell
        nan = float("nan")
        return Row(cell, run.label, run.model, str(run.path), baseline, 0, nan, nan, nan)
    mean = bootstrap_interval(_one_per_item(values.to_numpy()), seed=table.seed, key=key,
                              resamples=table.resamples)
    return Row(cell, run.label, run.model, str(run.path), baseline, int(values.size),
               float(mean.estimate[0]), float(mean.lo[0]), float(mean.hi[0]))


def _difference(name: str, values: "pandas.Series", base: "pandas.Series",
                table: Table) -> Comparison:
    """model − baseline: paired by item where the cell holds the same items in both runs;
    unpaired (each side resampled on its own) where the study put different items there."""
    if set(values.index) == set(base.index):
        return paired_difference(name, _one_per_item(values.loc[base.index].to_numpy()),
                                 _one_per_item(base.to_numpy()), seed=table.seed,
                                 resamples=table.resamples)
    return unpaired_difference(name, _one_per_item(values.to_numpy()),
                               _one_per_item(base.to_numpy()), seed=table.seed,
                               resamples=table.resamples)


def _one_per_item(values: np.ndarray) -> Clustered:
    return Clustered.from_prompts(range(values.size), values)
