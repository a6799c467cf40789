"""What `kgprobe compare` writes: ``compare.csv``, ``compare.md`` and ``compare.png``.

The reading in ``compare.md`` states a model as higher or lower than the baseline in a cell
only where the paired difference's 95 % interval excludes zero *and* its Holm-adjusted p
(over the whole table) is below 0.05 (`Comparison.supported`); every other cell is reported
as not separated by these items, never as "equal".
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from kgprobe.atomic import save_figure, write_text
from kgprobe.studies.compare import Row, Table
from kgprobe.studies.stats import CONFIDENCE, MIN_ITEMS

ALPHA = 1 - CONFIDENCE
#: compare.csv after the cell columns: one row per cell × model.
COLUMNS = ["cell", "model", "run", "baseline", "metric", "n_items", "mean", "mean_lo", "mean_hi",
           "test", "difference", "difference_lo", "difference_hi", "p", "p_holm", "finding"]


def finding(row: Row) -> str:
    """``higher`` / ``lower`` where the difference from the baseline is supported, else ``""``."""
    d = row.difference
    if d is None or not d.supported(ALPHA):
        return ""
    return "higher" if d.estimate > 0 else "lower"


def csv_rows(table: Table) -> list[dict]:
    out = []
    for row in table.rows:
        d = row.difference
        record = {**row.cell, "cell": table.cell_label(row.cell), "model": row.label,
                  "run": row.run, "baseline": row.baseline, "metric": table.metric,
                  "n_items": row.n_items, "mean": row.mean, "mean_lo": row.mean_lo,
                  "mean_hi": row.mean_hi, "finding": finding(row)}
        if d is not None:
            record.update(test=d.test, difference=d.estimate, difference_lo=d.lo, difference_hi=d.hi,
                          p=d.p, p_holm=d.p_holm)
        out.append(record)
    return out


def write_csv(table: Table, path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*table.cell_columns, *COLUMNS], restval="",
                            lineterminator="\n")
    writer.writeheader()
    for record in csv_rows(table):
        writer.writerow({k: _csv_value(v) for k, v in record.items()})
    write_text(path, buffer.getvalue())


def _csv_value(value):
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return value


def _number(value: float, scale: float = 100.0) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{scale * value:.1f}"


def _p(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.3f}" if value >= 0.001 else "<0.001"


def markdown_table(table: Table) -> str:
    """One line per cell × model: mean [95 % interval], and the paired difference from the
    baseline with its interval, p and Holm-adjusted p (× 100 for the metric's values)."""
    m = table.metric
    lines = [f"| cell | model | n items | {m} [95 % CI] | Δ vs {table.baseline.label} [95 % CI] "
             "| test | p | p (Holm) | finding |", "|---|---|---:|---|---|---|---:|---:|---|"]
    for row in table.rows:
        d = row.difference
        mean = f"{_number(row.mean)} [{_number(row.mean_lo)}, {_number(row.mean_hi)}]"
        low = " (few items)" if 0 < row.n_items < MIN_ITEMS else ""
        diff, test, p, holm = ("baseline" if row.baseline else "–"), "", "", ""
        if d is not None:
            diff = f"{_number(d.estimate)} [{_number(d.lo)}, {_number(d.hi)}]"
            test, p, holm = d.test, _p(d.p), _p(d.p_holm)
        lines.append(f"| {table.cell_label(row.cell)} | {row.label} | {row.n_items}{low} | {mean} "
                     f"| {diff} | {test} | {p} | {holm} | {finding(row)} |")
    return "\n".join(lines)


def reading(table: Table) -> str:
    """What the table supports, model by model, in words."""
    cells = len({tuple(r.cell.values()) for r in table.rows})
    others = [run.label for run in table.runs[1:]]
    family = sum(r.difference is not None for r in table.rows)
    text = [f"A model is higher or lower than {table.baseline.label} in a cell where the 95 % "
            f"interval of the paired difference excludes 0 and its p, Holm-adjusted over all "
            f"{family} differences in the table, is below {ALPHA:.2f}; elsewhere these items do "
            "not separate the two."]
    for label in others:
        rows = [r for r in table.rows if r.label == label]
        up = sum(finding(r) == "higher" for r in rows)
        down = sum(finding(r) == "lower" for r in rows)
        text.append(f"- {label}'s {table.metric} against {table.baseline.label}'s: "
                    f"{_counts(up, down, cells)}.")
    unpaired = sorted({table.cell_label(r.cell) for r in table.rows
                       if r.difference is not None and r.difference.test == "unpaired"})
    if unpaired:
        text.append(f"- {len(unpaired)} cells hold different items for different models (the "
                    f"study assigns items to them by each model's own answers), so they are "
                    f"compared unpaired, each model's items resampled on their own: "
                    f"{', '.join(unpaired)}.")
    empty = sorted({table.cell_label(r.cell) for r in table.rows if r.n_items == 0})
    if empty:
        text.append(f"- Cells some model put no item in (no difference): {', '.join(empty)}.")
    for column, values in table.per_run.items():
        pairs = ", ".join(f"{run.label}: {v}" for run, v in zip(table.runs, values))
        text.append(f"- {column} is set per run, not per cell ({pairs}); cells are matched "
                    "without it.")
    few = sorted({table.cell_label(r.cell) for r in table.rows if 0 < r.n_items < MIN_ITEMS})
    if few:
        text.append(f"- Cells with fewer than {MIN_ITEMS} items (intervals unreliable): "
                    f"{', '.join(few)}.")
    return "\n".join(text)


def _counts(up: int, down: int, cells: int) -> str:
    """"higher in 2 of 9 cells, lower in 1, not separated in the other 6"."""
    if not up and not down:
        return f"not separated in any of the {cells} cells"
    parts = [f"{word} in {n}" for word, n in (("higher", up), ("lower", down)) if n]
    parts[0] += f" of {cells} cells"
    rest = cells - up - down
    if rest:
        parts.append(f"not separated in the other {rest}")
    return ", ".join(parts)


def write_markdown(table: Table, path: Path, command: str) -> None:
    runs = "\n".join(f"- {run.label}: `{run.path}`" + (" (baseline)" if k == 0 else "")
                     for k, run in enumerate(table.runs))
    text = (f"# Comparison of {len(table.runs)} {table.study} runs: {table.metric}\n\n"
            f"Command: `{command}`\n\nRuns:\n{runs}\n\n"
            f"Values × 100. Each item's {table.metric} is averaged over its observations in a "
            f"cell; means and differences (model − baseline) carry 95 % item-bootstrap "
            f"intervals ({table.resamples} resamples, seed {table.seed}). A paired difference "
            f"is taken item by item, its p from a permutation test swapping the two models "
            f"within items; an unpaired one (a cell the models fill with different items) "
            f"resamples each side on its own, its p from permuting items between them.\n\n"
            f"{markdown_table(table)}\n\n## Reading\n\n{reading(table)}\n\n"
            f"Figure: compare.png (the same means and intervals).\n")
    write_text(path, text)


def plot(table: Table, path: Path) -> None:
    """Per cell, each model's mean with its 95 % interval, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(dict.fromkeys(table.cell_label(r.cell) for r in table.rows))
    width = 0.5 / len(table.runs)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.6 * len(cells) * len(table.runs) + 1.5), 4.0))
    for k, run in enumerate(table.runs):
        rows = [r for r in table.rows if r.label == run.label]
        x = [cells.index(table.cell_label(r.cell)) - 0.25 + width * (k + 0.5) for r in rows]
        means = [r.mean for r in rows]
        errors = [[max(0.0, r.mean - r.mean_lo) for r in rows],
                  [max(0.0, r.mean_hi - r.mean) for r in rows]]
        ax.errorbar(x, means, yerr=errors, fmt="o", capsize=3, label=run.label)
    ax.set_xticks(range(len(cells)), cells, rotation=30 if len(cells) > 3 else 0, ha="right"
                  if len(cells) > 3 else "center", fontsize=8)
    ax.set_xlim(-0.6, len(cells) - 0.4)
    ax.set_ylabel(f"{table.metric} (95 % item-bootstrap interval)")
    ax.set_title(f"{table.study}: {table.metric} by cell", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def write_outputs(table: Table, out: Path, command: str) -> list[Path]:
    """compare.csv, compare.md and compare.png in `out`; their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "compare.csv", out / "compare.md", out / "compare.png"]
    write_csv(table, paths[0])
    write_markdown(table, paths[1], command)
    plot(table, paths[2])
    return paths
