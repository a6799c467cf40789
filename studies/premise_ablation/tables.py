"""results.csv and comparisons.csv of a premise-ablation run, from the prompts on disk: the
model's and, beside them, every control's (`contrasts`), for the grid and, where the run has
them, the chained (`depth_report`) and counterfactual (`counterfactual_report`) cells.

One comparisons.csv holds every test of the run — the grid's, the depth family's and the
counterfactual family's, told apart by ``family`` — and ``role`` splits it: the confirmatory
rows declared in `family` (Holm within them, the only rows that can be ``claimed``) and the
descriptive rest (Holm among themselves, never claimed).
"""

from __future__ import annotations

import math
from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.errors import KgprobeError
from kgprobe.studies.controls import control_folder
from kgprobe.studies.runner import read_results, rows_to_csv

from .cells import Prompt, load_prompts, result_rows
from .columns import COLUMNS, with_depth
from .contrasts import (
    Family,
    comparison_table,
    control_columns,
    load_controls,
    with_controls,
)
from .settings import ReportSettings


def load_rows(out: Path) -> list[dict]:
    path = out / "results.csv"
    if not path.exists():
        raise KgprobeError(f"{out}: no results.csv; run `kgprobe study premise-ablation --out {out}` first")
    # the premise grid; chained and counterfactual cells are depth_report.py's and
    # counterfactual_report.py's
    return [r for r in read_results(path) if not r.get("depth") and r.get("premises") in (None, "", "true")]


def control_folders(out: Path, config: ReportSettings) -> dict[str, Path]:
    """Each control's run folder that holds predictions (a run stopped before its controls
    has none)."""
    folders = {c: control_folder(out, c, config.model) for c in config.controls}
    return {c: f for c, f in folders.items() if (f / "predictions.jsonl").exists()}


def cell_rows(folder: Path, prompts: list[Prompt], config: ReportSettings
              ) -> tuple[list[dict], list[str]]:
    """One model's results rows (grid, chained, counterfactual) and their columns."""
    rows, columns = result_rows(prompts, config), COLUMNS
    if config.chained:
        from .depth_report import depth_rows

        rows, columns = rows + depth_rows(folder, config), with_depth(COLUMNS)
    if config.counterfactual:
        from .counterfactual_report import with_counterfactual

        rows, columns = with_counterfactual(folder, config, rows, columns)
    return rows, columns


def families(out: Path, folders: dict[str, Path], config: ReportSettings) -> list[Family]:
    """The run's test families beside the grid: depth and counterfactual, where it has them."""
    found = []
    if config.chained:
        from .depth_report import depth_family

        found.append(depth_family(out, folders, config))
    if config.counterfactual:
        from .counterfactual_report import counterfactual_family

        found.append(counterfactual_family(out, folders, config))
    return found


def write_tables(out: Path) -> tuple[list[dict], list[dict], ReportSettings]:
    """results.csv and comparisons.csv, recomputed from the prompts on disk; → the grid's
    rows, every comparisons.csv row, the report's settings."""
    config = ReportSettings.read(out)
    prompts, controls = load_prompts(out), load_controls(out, config)
    folders = {c: f for c, f in control_folders(out, config).items() if c in controls}
    table, table_columns = comparison_table(prompts, controls, config,
                                            families(out, folders, config))
    clean = [{k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
             for r in table]
    rows, columns = cell_rows(out, prompts, config)
    beside = {c: cell_rows(folders[c], controls[c], config)[0] for c in controls}
    rows = with_controls(rows, beside)
    write_text(out / "results.csv", rows_to_csv(rows, columns + control_columns(controls)))
    write_text(out / "comparisons.csv", rows_to_csv(clean, table_columns))
    return load_rows(out), read_results(out / "comparisons.csv"), config
