"""Tables and figures of the STA study, laid out like the paper's.

* ``fig2_retrieval.png`` — MRR and target probability vs number of properties (Figure 2);
* ``fig3_conditions.png`` — (a) per feature type vs all properties, (b) top/bottom-PF
  selections in decreasing/increasing order vs the random baseline (Figure 3);
* ``fig4_elicitation.png`` — mAP_VOCAB, mAP_SENS and ρ per relation, and the ablation without
  "Everyone knows that" (Table 2 as bars);
* ``report.md`` — the same numbers as tables, example predictions (Figure 1, Table 1) and
  the run's settings and counts.

`write_comparison` draws Figure 2 and Table 2 for several finished runs (one line per model).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

from kgprobe.atomic import save_figure, write_text
from kgprobe.errors import StudyError
from kgprobe.studies.runner import read_results
from kgprobe.studies.stats import grouped_intervals, interval_text, read_predictions

__all__ = ["write_report", "format_tables", "write_comparison", "load_run"]

ORDER_STYLES = {
    "top-dec": ("top-PF, decreasing", "-", "o"),
    "top-inc": ("top-PF, increasing", "--", "o"),
    "bottom-dec": ("bottom-PF, decreasing", "-", "s"),
    "bottom-inc": ("bottom-PF, increasing", "--", "s"),
    "random": ("random sets and orders", ":", "x"),
}
#: Points averaging fewer concepts than this are left out of the per-type curves.
MIN_CONCEPTS = 3


def _num(value) -> float:
    if value is None or value == "":
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _fmt(value, digits: int = 3) -> str:
    v = _num(value)
    return "–" if math.isnan(v) else f"{v:.{digits}f}"


def _curve(rows: Sequence[dict], condition: str, key: str, min_concepts: int = 1) -> tuple[list[int], list[float]]:
    pts = sorted((int(_num(r["n_properties"])), _num(r.get(key))) for r in rows
                 if r.get("task") == "retrieval" and r.get("condition") == condition
                 and _num(r.get("n_concepts")) >= min_concepts)
    return [p[0] for p in pts], [p[1] for p in pts]


def _elicitation(rows: Sequence[dict]) -> dict[tuple[str, str], dict]:
    return {(r["relation"], r["context"]): r for r in rows if r.get("task") == "elicitation"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------


def plot_retrieval(runs: Sequence[tuple[str, Sequence[dict]]], path: Path) -> Path | None:
    """Figure 2: MRR and target probability vs number of properties, one line per run."""
    if not any(_curve(rows, "top-dec", "MRR")[0] for _, rows in runs):
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, rows in runs:
        for ax, key in zip(axes, ("MRR", "p_target")):
            xs, ys = _curve(rows, "top-dec", key)
            if xs:
                ax.plot(xs, ys, marker="o", label=label)
    axes[0].set_ylabel("MRR of the target concept")
    axes[1].set_ylabel("probability of the target concept")
    for ax in axes:
        ax.set_xlabel("number of properties in the prompt (top-PF, decreasing)")
        ax.set_xticks(range(1, 11))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title("Concept retrieval: MRR")
    axes[1].set_title("Concept retrieval: target probability")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def plot_conditions(label: str, rows: Sequence[dict], path: Path,
                    random_draws: Sequence[int] | None = None) -> Path | None:
    """Figure 3: (a) per feature type vs all properties; (b) selection/order vs random."""
    groups = sorted({r["condition"] for r in rows if r.get("task") == "retrieval"
                     and str(r.get("condition", "")).startswith("group:")})
    orders = [c for c in ORDER_STYLES if _curve(rows, c, "MRR")[0]]
    if not groups and not orders:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    ax = axes[0]
    xs, ys = _curve(rows, "top-dec", "MRR")
    if xs:
        ax.plot(xs, ys, color="black", marker="o", label="all properties")
    for g in groups:
        xs, ys = _curve(rows, g, "MRR", MIN_CONCEPTS)
        if xs:
            ax.plot(xs, ys, marker=".", label=g.split(":", 1)[1])
    ax.set_title(f"(a) by feature type (points with ≥ {MIN_CONCEPTS} concepts)")
    ax = axes[1]
    for c in orders:
        name, style, marker = ORDER_STYLES[c]
        if c == "random" and random_draws:
            sets, orders = random_draws
            name = f"random ({sets} set{'s' * (sets != 1)} × {orders} order{'s' * (orders != 1)})"
        xs, ys = _curve(rows, c, "MRR")
        ax.plot(xs, ys, linestyle=style, marker=marker, label=name,
                color="black" if c == "random" else None)
    ax.set_title("(b) selection and order vs random baseline")
    for ax in axes:
        ax.set_xlabel("number of properties in the prompt")
        ax.set_xticks(range(1, 11))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("MRR of the target concept")
    fig.suptitle(label, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def plot_elicitation(runs: Sequence[tuple[str, Sequence[dict]]], path: Path) -> Path | None:
    """Table 2 as bars: per relation, mAP_VOCAB / mAP_SENS / ρ, and mAP_VOCAB without the context."""
    import numpy as np

    tables = [(label, _elicitation(rows)) for label, rows in runs]
    relations = [r for r in ("is", "is a", "has", "has a", "made of")
                 if any((r, "everyone") in t for _, t in tables)]
    if not relations:
        return None
    plt = _plt()
    metrics = [("mAP_vocab", "everyone", "mAP$_{VOCAB}$"), ("mAP_sens", "everyone", "mAP$_{SENS}$"),
               ("spearman", "everyone", "ρ with human PF"), ("mAP_vocab", "bare", "mAP$_{VOCAB}$, no \"Everyone knows that\"")]
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False, sharey=True)
    width = 0.8 / len(metrics)
    x = np.arange(len(relations))
    for ax, (label, table) in zip(axes[0], tables):
        for k, (key, ctx, name) in enumerate(metrics):
            vals = [_num(table.get((r, ctx), {}).get(key)) for r in relations]
            ax.bar(x + (k - (len(metrics) - 1) / 2) * width, vals, width, label=name,
                   hatch="//" if ctx == "bare" else None, edgecolor="white" if ctx != "bare" else "grey")
        ax.set_xticks(x, relations)
        ax.set_xlabel("relation in \"Everyone knows that a {concept} {relation} [MASK] .\"")
        ax.set_title(f"Property elicitation: {label}")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("score")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(metrics), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def intervals(out: Path, preds: list[dict] | None = None) -> dict[tuple, str]:
    """95% bootstrap intervals (prompts resampled, seed 0) of the headline numbers: retrieval
    MRR per number of properties (top-PF, decreasing), mAP_VOCAB and mAP_SENS per relation.
    `preds`: the run's predictions when the caller has read them already."""
    preds = read_predictions(out) if preds is None else preds
    found = {}
    for name, value in (("MRR", lambda p: p.get("rr")), ("mAP_vocab", lambda p: p.get("ap_vocab")),
                        ("mAP_sens", lambda p: p.get("ap_sens"))):
        def group(p, name=name):
            if name == "MRR":
                ok = p.get("task") == "retrieval" and p.get("condition") == "top-dec"
                return (name, int(p["n"])) if ok else None
            ok = p.get("task") == "elicitation"
            return (name, p.get("relation"), p.get("context")) if ok else None

        found.update({k: " " + interval_text(iv, scale=1, digits=3)
                      for k, iv in grouped_intervals(preds, group, value).items()})
    return found


def retrieval_table(rows: Sequence[dict], ci: dict | None = None) -> str:
    ci = ci or {}
    lines = ["| properties | MRR | P(target) | R@1 | R@10 | median rank | concepts |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted((r for r in rows if r.get("task") == "retrieval" and r.get("condition") == "top-dec"),
                    key=lambda r: _num(r["n_properties"])):
        n = int(_num(r['n_properties']))
        lines.append(f"| {n} | {_fmt(r['MRR'])}{ci.get(('MRR', n), '')} | {_fmt(r['p_target'], 4)} | "
                     f"{_fmt(r['R@1'])} | {_fmt(r['R@10'])} | {_fmt(r['median_rank'], 0)} | "
                     f"{int(_num(r['n_concepts']))} |")
    return "\n".join(lines)


def conditions_table(rows: Sequence[dict]) -> str:
    conds = list(dict.fromkeys(r["condition"] for r in rows if r.get("task") == "retrieval"))
    if not conds:
        return ""
    head = "| condition | " + " | ".join(f"n={n}" for n in range(1, 11)) + " |"
    lines = [head, "|---|" + "---:|" * 10]
    for c in conds:
        cells = {int(_num(r["n_properties"])): r for r in rows
                 if r.get("task") == "retrieval" and r.get("condition") == c}
        vals = []
        for n in range(1, 11):
            r = cells.get(n)
            vals.append(f"{_fmt(r['MRR'])} ({int(_num(r['n_concepts']))})" if r else "")
        lines.append(f"| {c} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def elicitation_table(rows: Sequence[dict], ci: dict | None = None) -> str:
    ci = ci or {}
    table = _elicitation(rows)
    if not table:
        return ""
    lines = ["| relation | prompts | mAP_VOCAB | mAP_SENS | ρ human PF (prompts) | mAP_VOCAB without "
             "\"Everyone knows that\" | mAP_SENS without | gold answers in / out of vocabulary |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for rel in ("is", "is a", "has", "has a", "made of"):
        r = table.get((rel, "everyone"))
        b = table.get((rel, "bare"), {})
        if not r:
            continue
        lines.append(f"| {rel} | {int(_num(r['n_prompts']))} | {_fmt(r['mAP_vocab'])}"
                     f"{ci.get(('mAP_vocab', rel, 'everyone'), '')} | {_fmt(r['mAP_sens'])}"
                     f"{ci.get(('mAP_sens', rel, 'everyone'), '')} | "
                     f"{_fmt(r['spearman'])} ({int(_num(r['spearman_prompts']))}) | {_fmt(b.get('mAP_vocab'))} | "
                     f"{_fmt(b.get('mAP_sens'))} | {int(_num(r['gold_in_vocab']))} / {int(_num(r['gold_dropped']))} |")
    return "\n".join(lines)


def format_tables(rows: Sequence[dict]) -> str:
    """Plain-text summary for the terminal."""
    parts = []
    ret = retrieval_table(rows)
    if ret.count("\n") > 1:
        parts += ["Concept retrieval (top-PF, decreasing):", ret]
    eli = elicitation_table(rows)
    if eli:
        parts += ["", "Property elicitation:", eli]
    return "\n".join(parts)


def _examples(preds: list[dict], max_concepts: int = 2) -> tuple[str, str]:
    """Figure 1 (retrieval) and Table 1 (elicitation) style examples from the predictions."""
    retrieval: dict[str, dict[int, dict]] = {}
    elicit: dict[str, dict] = {}
    for p in preds:
        if p.get("task") == "retrieval" and p.get("condition") == "top-dec":
            retrieval.setdefault(p["concept"], {})[p["n"]] = p
        elif p.get("task") == "elicitation" and p.get("relation") == "has" and p.get("context") == "everyone":
            elicit.setdefault(p["concept"], p)
    lines = []
    for concept in list(retrieval)[:max_concepts]:
        by_n = retrieval[concept]
        for n in sorted({1, 3, max(by_n)} & set(by_n)):
            p = by_n[n]
            top = ", ".join(f"{w} ({pr:.3f})" for w, pr in p["top"][:3])
            lines.append(f"| {p['prompt']} | {top} | {p['target']} | {p['rank']} |")
    ret_md = ""
    if lines:
        ret_md = "| prompt | model's top 3 (probability) | target | target rank |\n|---|---|---|---:|\n" + "\n".join(lines)
    lines = []
    for concept in list(elicit)[:max_concepts]:
        p = elicit[concept]
        gold = ", ".join(f"{w} ({pf})" for w, pf in sorted(p["gold"].items(), key=lambda kv: -kv[1])[:5])
        top = ", ".join(f"{w} ({pr:.3f})" for w, pr in p["top"][:5])
        lines.append(f"| {p['prompt']} | {gold} | {top} | {_fmt(p['ap_vocab'])} |")
    eli_md = ""
    if lines:
        eli_md = ("| prompt | human answers (PF) | model's top 5 (probability) | AP |\n|---|---|---|---:|\n"
                  + "\n".join(lines))
    return ret_md, eli_md


def _figure_and_examples(figure: bool, image: str, heading: str, examples: str) -> list[str]:
    """A section's closing lines: its figure when one was drawn, its examples when any."""
    return ([image, ""] if figure else []) + ([heading, "", examples, ""] if examples else [])


def write_report(out: Path, rows: Sequence[dict], summary: dict) -> Path:
    """report.md and the figures of one run."""
    out = Path(out)
    settings = summary.get("settings", {})
    label = f"{settings.get('model', '?')} ({settings.get('kind', '?')})"
    figs = {
        "fig2": plot_retrieval([(label, rows)], out / "fig2_retrieval.png"),
        "fig3": plot_conditions(label, rows, out / "fig3_conditions.png", settings.get("random")),
        "fig4": plot_elicitation([(label, rows)], out / "fig4_elicitation.png"),
    }
    preds = read_predictions(out)
    ret_ex, eli_ex = _examples(preds)
    ci = intervals(out, preds)
    md = [f"# Tacit assumptions (Weir et al. 2020): {label}", ""]
    md.append("Settings: " + ", ".join(f"{k} = `{v}`" for k, v in settings.items()))
    md.append("")
    if "retrieval" in summary:
        s = summary["retrieval"]
        md += ["## Concept retrieval", "",
               f"Template `{s.get('template')}`, scored by {s.get('method')} over the `{s.get('vocabulary')}` "
               f"vocabulary ({s.get('vocabulary_size')} candidates). Of {s.get('concepts')} concepts, "
               f"{s.get('skipped_vowel_sound')} start with a vowel sound (skipped), "
               f"{s.get('dropped_out_of_vocabulary')} are not in the vocabulary (dropped), "
               f"{s.get('eligible')} remain; {s.get('targets')} were probed.", ""]
        if figs["fig2"]:
            md += ["![Figure 2](fig2_retrieval.png)", ""]
        md += ["Top-PF properties in decreasing order (the paper's Figure 2; MRR with its 95% "
               "bootstrap interval over concepts):", "", retrieval_table(rows, ci), ""]
        md += ["MRR per condition and number of properties (concepts averaged in parentheses):", "",
               conditions_table(rows), ""]
        md += _figure_and_examples(figs["fig3"], "![Figure 3](fig3_conditions.png)",
                                   "Examples (Figure 1):", ret_ex)
    if "elicitation" in summary:
        s = summary["elicitation"]
        md += ["## Property elicitation", "",
               f"Scored by {s.get('method')} over LAMA ∩ model single-token words ({s.get('vocabulary_size')} "
               f"candidates), {s.get('concepts')} concepts. Sensible sets (all gold answers of a relation, "
               "in the vocabulary / all): " + ", ".join(
                   f"{r} {v['in_vocabulary']}/{v['words']}" for r, v in s.get("sensible_set", {}).items()), "",
               "mAP with its 95% bootstrap interval over prompts in brackets.", "",
               elicitation_table(rows, ci), ""]
        md += _figure_and_examples(figs["fig4"], "![Table 2 as bars](fig4_elicitation.png)",
                                   "Examples (Table 1):", eli_ex)
    if "run_seconds" in summary:
        md.append(f"Run time: {summary['run_seconds']} s (this invocation; model load {summary.get('model_load_seconds')} s).")
    path = out / "report.md"
    write_text(path, "\n".join(md) + "\n")
    return path


def load_run(run: Path) -> tuple[str, list[dict]]:
    """(label, result rows) of a finished run folder."""
    run = Path(run)
    try:
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        rows = read_results(run / "results.csv")
    except (OSError, ValueError) as err:
        raise StudyError(f"{run}: not a finished sta run ({err}); pass folders written by kgprobe study sta") from None
    settings = summary.get("settings", {})
    return str(settings.get("model", run.name)), rows


def write_comparison(runs: Sequence[Path], out: Path) -> list[Path]:
    """Figure 2 and Table 2 for several runs side by side, plus comparison.md."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    loaded = [load_run(r) for r in runs]
    paths = [p for p in (plot_retrieval(loaded, out / "fig2_retrieval.png"),
                         plot_elicitation(loaded, out / "fig4_elicitation.png")) if p]
    md = ["# Tacit assumptions: comparison", ""]
    for (label, rows), run in zip(loaded, runs):
        md += [f"## {label} (`{run}`)", "", retrieval_table(rows), "", elicitation_table(rows), ""]
    path = out / "comparison.md"
    write_text(path, "\n".join(md) + "\n")
    return paths + [path]


def rebuild_report(out: str | Path) -> Path:
    """`write_report` of a finished run folder, from its results.csv and summary.json."""
    out = Path(out)
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise StudyError(f"{out}: no readable summary.json of an sta run ({err})") from None
    return write_report(out, read_results(out / "results.csv"), summary)

