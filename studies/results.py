"""A study's results as a notebook user wants them: a DataFrame, a metric, the comparisons, a plot.

`Results.from_path(run)` reads any study's run folder (the study comes from its
``config.json``); `kgprobe.run(...)` returns the same object. The files on disk stay the record:
nothing here computes a number a report does not also show, except `get_metric` averaging a
study's per-item observations where ``results.csv`` has no column for the metric asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgprobe.errors import StudyError

if TYPE_CHECKING:
    import pandas


@dataclass
class Results:
    """One run folder: `frame` holds ``results.csv``'s rows (numbers as floats, empty cells as
    NaN), `config` its ``config.json``, `study` the study's name."""

    path: Path
    study: str
    config: dict
    _frame: "pandas.DataFrame | None" = field(default=None, repr=False)
    _observations: "pandas.DataFrame | None" = field(default=None, repr=False)

    @classmethod
    def from_path(cls, run: str | Path) -> "Results":
        from kgprobe.studies.settings import require_study

        run = Path(run)
        name = require_study(run)
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
        return cls(run, name, config)

    @property
    def frame(self) -> "pandas.DataFrame":
        """``results.csv`` as a DataFrame, read on first use: pandas is imported only by code
        that asks for a frame, so a command-line run (which returns a `Results`) needs none."""
        if self._frame is None:
            import pandas

            self._frame = pandas.read_csv(self.path / "results.csv", keep_default_na=False,
                                          na_values=[""])
        return self._frame

    # -- the study behind the folder ----------------------------------------------------------

    def _definition(self):
        from kgprobe.studies.registry import get_study

        return get_study(self.study)

    @property
    def cell_columns(self) -> list[str]:
        """The columns that name a row's cell, as the study declares them."""
        return [c for c in self._definition().cell_columns if c in self.frame.columns]

    # -- what a notebook asks for --------------------------------------------------------------

    def observations(self) -> "pandas.DataFrame":
        """One row per scored item and cell: the cell's columns, ``item`` and its metrics."""
        import pandas

        if self._observations is None:
            self._observations = pandas.DataFrame(self._definition().observations(self.path))
        return self._observations

    def get_metric(self, name: str) -> "pandas.Series":
        """The metric `name` (``"MRR"``, ``"R@1"``, ``"accuracy"``…) of every cell that has it,
        indexed by the cell's columns: ``results.csv``'s column where it has one, else the
        mean of the study's per-item observations."""
        if name in self.frame.columns:
            rows = self.frame[self.frame[name].notna()]
            index = self.cell_columns or None
            series = rows.set_index(index)[name] if index else rows[name]
            return series.astype(float)
        obs = self.observations()
        if name not in obs.columns:
            have = sorted({c for c in self.frame.columns if _numeric(self.frame[c])}
                          | {c for c in obs.columns if c != "item" and _numeric(obs[c])}
                          - set(self.cell_columns))
            raise StudyError(f"{name}: not a metric of this {self.study} run; use one of "
                             f"{', '.join(have)}")
        keys = [c for c in self._definition().cell_columns if c in obs.columns]
        if not keys:
            return obs[name].mean()
        return obs.groupby(keys, sort=False, dropna=False)[name].mean()

    @property
    def comparisons(self) -> "pandas.DataFrame":
        """``comparisons.csv`` (the study's paired tests with Holm-adjusted p), or an empty
        frame for studies that write none."""
        import pandas

        path = self.path / "comparisons.csv"
        return pandas.read_csv(path) if path.is_file() else pandas.DataFrame()

    def plot(self, metric: str = "MRR", ax: Any = None):
        """A bar per cell of `metric`, with its 95 % interval where the run has one."""
        import matplotlib.pyplot as plt

        values = self.get_metric(metric)
        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(values)), 3.5))
        labels = [" ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in values.index]
        errors = None
        lo, hi = f"{metric}_lo", f"{metric}_hi"
        if lo in self.frame.columns and hi in self.frame.columns:
            rows = self.frame[self.frame[metric].notna()]
            errors = [(rows[metric] - rows[lo]).clip(lower=0).fillna(0).to_numpy(),
                      (rows[hi] - rows[metric]).clip(lower=0).fillna(0).to_numpy()]
        ax.bar(range(len(values)), values.to_numpy(), yerr=errors, capsize=2)
        ax.set_xticks(range(len(values)), labels, rotation=90, fontsize=7)
        ax.set_ylabel(metric)
        ax.set_title(f"{self.study}: {self.path.name}")
        return ax


def _numeric(column) -> bool:
    import pandas.api.types as types

    return types.is_numeric_dtype(column)
