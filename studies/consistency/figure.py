"""``OUT/consistency.png``: per rule, how often the conclusion is believed when both premises
are believed and when they are not, with 95 % intervals — the table's two headline columns
side by side, so a gap (or its absence) is seen at a glance."""

from __future__ import annotations

from pathlib import Path

from kgprobe.atomic import save_figure

FIGURE = "consistency.png"


def _value(row: dict, key: str) -> tuple[float, float, float] | None:
    try:
        v, lo, hi = (float(row[k]) for k in (key, f"{key}_lo", f"{key}_hi"))
    except (KeyError, ValueError):
        return None
    return 100 * v, 100 * max(0.0, v - lo), 100 * max(0.0, hi - v)


def write_figure(out: Path, rows: list[dict], title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows) + 1.5), 4.2))
    series = (("consistency", "n_both", "both premises believed", "#1f4e8c", -0.2),
              ("p_given_not_both", "n_not_both", "not both", "#bbbbbb", 0.2))
    for key, count, label, color, shift in series:
        for i, row in enumerate(rows):
            found = _value(row, key)
            if found is None:
                continue
            v, down, up = found
            ax.bar(i + shift, v, 0.38, color=color, yerr=[[down], [up]], capsize=2, label=label)
            label = None  # one legend entry a series
            ax.text(i + shift, 1, f"n={row[count]}", ha="center", va="bottom", fontsize=6.5,
                    color="white" if color != "#bbbbbb" else "black", rotation=90)
    labels = [r["rule"] if len({x["template"] for x in rows}) == 1
              else f"{r['rule']} t{r['template']}" for r in rows]
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylim(0, 105)
    ax.set_ylabel("conclusion believed (%); bars: 95% CI")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    fig.tight_layout()
    path = Path(out) / FIGURE
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
