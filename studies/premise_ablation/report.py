"""Report of a premise-ablation run, rebuilt from its results.csv alone.

Heatmaps per rule (P1 setting × P2 setting → MRR), one summary figure averaging the rules
(like the paper's Figure 3), and report.md with the tables and a short reading.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.errors import KgprobeError
from kgprobe.studies.runner import read_results

from .config import SETTINGS

WORDS = {"not": "not given", "implicit": "implicitly given", "explicit": "explicitly given"}
RULE_TITLES = {
    "rdfs2": "rdfs2: type from a property's domain",
    "rdfs3": "rdfs3: type from a property's range",
    "rdfs5": "rdfs5: subproperty transitivity",
    "rdfs7": "rdfs7: property inheritance",
    "rdfs9": "rdfs9: type inheritance",
    "rdfs11": "rdfs11: subclass transitivity",
}


def _num(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


def load_rows(out: Path) -> list[dict]:
    path = out / "results.csv"
    if not path.exists():
        raise KgprobeError(f"{out}: no results.csv; run `kgprobe study premise-ablation --out {out}` first")
    return read_results(path)


def grid(rows: list[dict], rule: str | None, template: str, metric: str = "MRR"):
    """3×3 matrix [P1][P2] of `metric` (None where a cell is empty), and the item counts.

    With `rule` None, each cell is the mean over the rules that have items in it.
    """
    values = [[None] * 3 for _ in range(3)]
    counts = [[0] * 3 for _ in range(3)]
    for i, p1 in enumerate(SETTINGS):
        for j, p2 in enumerate(SETTINGS):
            cell = [r for r in rows if r["template"] == template and r["p1"] == p1 and r["p2"] == p2
                    and (rule is None or r["rule"] == rule) and int(r["n"] or 0) > 0]
            if cell:
                values[i][j] = sum(_num(r[metric]) for r in cell) / len(cell)
                counts[i][j] = sum(int(r["n"]) for r in cell)
    return values, counts


def _heatmap(ax, values, counts, title: str):
    import numpy as np

    data = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    image = ax.imshow(data, vmin=0, vmax=max(0.05, np.nanmax(data) if np.isfinite(data).any() else 1),
                      cmap="viridis")
    ax.set_xticks(range(3), [WORDS[s] for s in SETTINGS], rotation=20, ha="right")
    ax.set_yticks(range(3), [WORDS[s] for s in SETTINGS])
    ax.set_xlabel("P2 (instance-level premise)")
    ax.set_ylabel("P1 (schema premise)")
    ax.set_title(title, fontsize=10)
    for i in range(3):
        for j in range(3):
            text = "empty" if values[i][j] is None else f"{100 * values[i][j]:.1f}\n(n={counts[i][j]})"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if values[i][j] is None or values[i][j] < 0.6 * np.nanmax(
                        np.where(np.isnan(data), 0, data)) else "black")
    return image


def figures(out: Path, rows: list[dict]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    templates = sorted({r["template"] for r in rows}, key=["manual", "soft"].index)
    rules = sorted({r["rule"] for r in rows}, key=lambda r: int(r[4:]))
    paths = []
    for rule in rules:
        fig, axes = plt.subplots(1, len(templates), figsize=(4.6 * len(templates), 4.2), squeeze=False)
        for ax, template in zip(axes[0], templates):
            values, counts = grid(rows, rule, template)
            image = _heatmap(ax, values, counts, f"{template} templates")
            fig.colorbar(image, ax=ax, label="MRR", fraction=0.046)
        fig.suptitle(f"{RULE_TITLES.get(rule, rule)} — MRR by premise setting", fontsize=11)
        fig.tight_layout()
        path = out / f"heatmap_{rule}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    # Summary: MRR per (P1, P2) averaged over rules, one bar group per P1 setting.
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    width = 0.8 / (3 * len(templates))
    colors = {"not": "#bbbbbb", "implicit": "#6a9fd4", "explicit": "#1f4e8c"}
    for t, template in enumerate(templates):
        values, _ = grid(rows, None, template)
        for j, p2 in enumerate(SETTINGS):
            xs = [i + (t * 3 + j - (3 * len(templates) - 1) / 2) * width for i in range(3)]
            ys = [0 if values[i][j] is None else 100 * values[i][j] for i in range(3)]
            ax.bar(xs, ys, width, color=colors[p2], edgecolor="black" if template == "soft" else None,
                   hatch="//" if template == "soft" else None,
                   label=f"P2 {WORDS[p2]}" + (f" ({template})" if len(templates) > 1 else ""))
    ax.set_xticks(range(3), [f"P1 {WORDS[s]}" for s in SETTINGS])
    ax.set_ylabel("MRR (%), mean over rules")
    ax.set_title("Reasoning by premise setting, averaged over the rules")
    ax.legend(fontsize=7, ncol=len(templates) if len(templates) > 1 else 3,
              loc="upper center", bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    path = out / "summary.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths + [path]


def _table(values, counts) -> list[str]:
    lines = ["| P1 \\ P2 | " + " | ".join(WORDS[s] for s in SETTINGS) + " |", "|---|---|---|---|"]
    for i, p1 in enumerate(SETTINGS):
        cells = ["empty" if values[i][j] is None else f"{100 * values[i][j]:.1f} (n={counts[i][j]})"
                 for j in range(3)]
        lines.append(f"| {WORDS[p1]} | " + " | ".join(cells) + " |")
    return lines


def reading(rows: list[dict], template: str) -> list[str]:
    """A few sentences that say what the averaged table shows, computed from it."""
    values, _ = grid(rows, None, template)
    v = {(p1, p2): values[i][j] for i, p1 in enumerate(SETTINGS) for j, p2 in enumerate(SETTINGS)}
    out = []
    base = v[("not", "not")]
    if base is not None:
        out.append(f"With neither premise given the MRR is {100 * base:.1f}: the baseline of a "
                   "model that cannot know the pseudoword.")
    how = {"explicit": "written into the prompt", "implicit": "known to the model but not written"}
    for role, cells in (("P1", [("explicit", "not"), ("implicit", "not")]),
                        ("P2", [("not", "explicit"), ("not", "implicit")])):
        for cell in cells:
            if v[cell] is not None and base is not None:
                verb = "raises" if v[cell] > base else "does not raise"
                setting = cell[0] if role == "P1" else cell[1]
                out.append(f"With only {role} given, {how[setting]}, the MRR is {100 * v[cell]:.1f} "
                           f"({verb} the baseline).")
    both = v[("explicit", "explicit")]
    if both is not None:
        out.append(f"With both premises written the MRR is {100 * both:.1f}"
                   + (" — far from the 100 of a model that applies the rule." if both < 0.8 else "."))
    return out


def write_report(out: str | Path) -> Path:
    out = Path(out)
    rows = load_rows(out)
    figures(out, rows)
    config = {}
    if (out / "config.json").exists():
        config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    templates = sorted({r["template"] for r in rows}, key=["manual", "soft"].index)
    lines = ["# Premise-ablation study", ""]
    if config:
        lines += [f"Model `{config.get('model')}`, rules {', '.join(config.get('rules', []))}, "
                  f"{config.get('limit') or 'all'} items per rule, {config.get('pairs')} pseudoword pair(s), "
                  f"seed {config.get('seed')}. Metrics in %, MRR shown (R@1, R@5, MRRa in "
                  "results.csv). A premise is *implicitly given* when the model's memorizing probe "
                  f"ranks it in the top {100 * config.get('memorized_fraction', 0.5):.0f}% of its kind.", ""]
    from kgprobe.reasoning.distractors import parse_protocol

    for name in sorted({r.get("protocol") or "all" for r in rows}):  # one, unless mixed by hand
        lines += [f"Protocol `{name}`: {parse_protocol(name).describe()}; MRR is comparable only "
                  "between runs of the same protocol.", ""]
    for template in templates:
        lines += [f"## Averaged over the rules ({template} templates)", ""]
        lines += _table(*grid(rows, None, template)) + [""]
        lines += reading(rows, template) + [""]
    lines += ["![summary](summary.png)", ""]
    for rule in sorted({r["rule"] for r in rows}, key=lambda r: int(r[4:])):
        lines += [f"## {RULE_TITLES.get(rule, rule)}", ""]
        for template in templates:
            lines += [f"{template} templates:", ""] + _table(*grid(rows, rule, template)) + [""]
        lines += [f"![{rule}](heatmap_{rule}.png)", ""]
    path = out / "report.md"
    write_text(path, "\n".join(lines))
    return path
