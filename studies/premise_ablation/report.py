"""Report of a premise-ablation run, rebuilt from the prompts on disk.

`cells.py` turns the stored prompts into ``results.csv`` (every cell with counts and 95 %
intervals; templates averaged, then rules averaged), `contrasts.py` ``comparisons.csv``; this module
draws them: heatmaps per rule (P1 setting × P2 setting → template-averaged MRR with its
interval), one summary figure averaging the rules with error bars (like the paper's Figure 3),
and report.md with the tables and a reading that states a difference only where its interval
(and Holm-adjusted p) supports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kgprobe.atomic import save_figure, write_text
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.items import RULE_RELATIONS
from kgprobe.studies.stats import format_interval

from .cells import MEAN, variants
from .control_report import claimed_lines, control_text, descriptive
from .control_report import number as _num
from .columns import SETTINGS
from .known_reach import known_reach, known_rule  # noqa: F401 (known_reach: imported from here)
from .settings import ReportSettings
from .tables import load_rows, write_tables  # noqa: F401 (load_rows: read from here too)

WORDS = {"not": "not given", "implicit": "implicitly given", "explicit": "explicitly given"}
RULE_TITLES = {
    "rdfs2": "rdfs2: type from a property's domain",
    "rdfs3": "rdfs3: type from a property's range",
    "rdfs5": "rdfs5: subproperty transitivity",
    "rdfs7": "rdfs7: property inheritance",
    "rdfs9": "rdfs9: type inheritance",
    "rdfs11": "rdfs11: subclass transitivity",
}


LOW_N = "†"


@dataclass
class Cell:
    """One P1 × P2 cell of a table: its estimate and interval (None when empty)."""

    value: float | None
    lo: float | None
    hi: float | None
    n_items: int
    low: bool
    beside: str = ""  # the controls' values on the same prompts (`control_report`)

    def text(self, *, items: bool = True, controls: bool = True) -> str:
        if self.value is None:
            return "empty"
        shown = format_interval(self.value, self.lo, self.hi)
        return (shown + (f" (n={self.n_items})" if items else "") + (LOW_N if self.low else "")
                + (self.beside if controls else ""))


def cells(rows: list[dict], rule: str | None, template: str, metric: str = "MRR",
          variant: str = MEAN) -> list[list[Cell]]:
    """3×3 cells [P1][P2] of `metric`, template-averaged; `rule` None: the rule average."""
    rule = MEAN if rule is None else rule
    out = [[Cell(None, None, None, 0, False) for _ in range(3)] for _ in range(3)]
    for r in rows:
        if r["rule"] == rule and r["template"] == template and str(r["variant"]) == variant:
            i, j = SETTINGS.index(r["p1"]), SETTINGS.index(r["p2"])
            value = _num(r.get(metric))
            if value is not None:
                out[i][j] = Cell(value, _num(r[f"{metric}_lo"]), _num(r[f"{metric}_hi"]),
                                 int(r["n_items"]), r.get("low_n") == "yes",
                                 control_text(r, metric))
    return out


def _heatmap(ax, table: list[list[Cell]], title: str):
    import numpy as np

    data = np.array([[np.nan if c.value is None else c.value for c in row] for row in table])
    top = np.nanmax(data) if np.isfinite(data).any() else 1
    image = ax.imshow(data, vmin=0, vmax=max(0.05, top), cmap="viridis")
    ax.set_xticks(range(3), [WORDS[s] for s in SETTINGS], rotation=20, ha="right")
    ax.set_yticks(range(3), [WORDS[s] for s in SETTINGS])
    ax.set_xlabel("P2 (instance-level premise)")
    ax.set_ylabel("P1 (schema premise)")
    ax.set_title(title, fontsize=10)
    for i in range(3):
        for j in range(3):
            c = table[i][j]
            text = "empty" if c.value is None else (
                f"{100 * c.value:.1f}\n[{100 * c.lo:.0f}, {100 * c.hi:.0f}]\n"
                f"n={c.n_items}{LOW_N if c.low else ''}")
            dark = c.value is None or c.value < 0.6 * top
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5,
                    color="white" if dark else "black")
    return image


def figures(out: Path, rows: list[dict]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    templates = _kinds(rows)
    paths = []
    for rule in _rules(rows):
        fig, axes = plt.subplots(1, len(templates), figsize=(4.8 * len(templates), 4.4), squeeze=False)
        for ax, template in zip(axes[0], templates):
            image = _heatmap(ax, cells(rows, rule, template), f"{template} templates (averaged)")
            fig.colorbar(image, ax=ax, label="MRR", fraction=0.046)
        fig.suptitle(f"{RULE_TITLES.get(rule, rule)} — MRR [95% CI] by premise setting", fontsize=11)
        fig.tight_layout()
        path = out / f"heatmap_{rule}.png"
        save_figure(fig, path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths + [_summary_figure(out, rows, templates, plt)]


def _summary_figure(out: Path, rows: list[dict], templates: list[str], plt) -> Path:
    """MRR per (P1, P2) averaged over rules with its 95 % interval, a bar group per P1 setting."""
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    width = 0.8 / (3 * len(templates))
    colors = {"not": "#bbbbbb", "implicit": "#6a9fd4", "explicit": "#1f4e8c"}
    for t, template in enumerate(templates):
        table = cells(rows, None, template)
        for j, p2 in enumerate(SETTINGS):
            xs = [i + (t * 3 + j - (3 * len(templates) - 1) / 2) * width for i in range(3)]
            column = [table[i][j] for i in range(3)]
            ys = [0 if c.value is None else 100 * c.value for c in column]
            err = [[0 if c.value is None else 100 * (c.value - c.lo) for c in column],
                   [0 if c.value is None else 100 * (c.hi - c.value) for c in column]]
            ax.bar(xs, ys, width, color=colors[p2], edgecolor="black" if template == "soft" else None,
                   hatch="//" if template == "soft" else None, yerr=err, capsize=2,
                   error_kw={"elinewidth": 0.8},
                   label=f"P2 {WORDS[p2]}" + (f" ({template})" if len(templates) > 1 else ""))
    ax.set_xticks(range(3), [f"P1 {WORDS[s]}" for s in SETTINGS])
    ax.set_ylabel("MRR (%), mean over rules; bars: 95% CI")
    ax.set_title("Reasoning by premise setting, averaged over the rules")
    ax.legend(fontsize=7, ncol=len(templates) if len(templates) > 1 else 3,
              loc="upper center", bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    path = out / "summary.png"
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _kinds(rows: list[dict]) -> list[str]:
    return sorted({r["template"] for r in rows}, key=["manual", "soft"].index)


def _rules(rows: list[dict]) -> list[str]:
    return sorted({r["rule"] for r in rows} - {MEAN}, key=lambda r: int(r[4:]))


def _table(table: list[list[Cell]]) -> list[str]:
    lines = ["| P1 \\ P2 | " + " | ".join(WORDS[s] for s in SETTINGS) + " |", "|---|---|---|---|"]
    for i, p1 in enumerate(SETTINGS):
        lines.append(f"| {WORDS[p1]} | " + " | ".join(c.text() for c in table[i]) + " |")
    return lines


def console_table(rows: list[dict], template: str) -> str:
    """The rule-averaged table for a terminal (the demo prints it)."""
    table = cells(rows, None, template)
    lines = [f"MRR (%) [95% CI] (n items), mean over the rules, {template} templates averaged",
             f"{'P1 / P2':18s}" + "".join(f"{WORDS[s]:>28s}" for s in SETTINGS)]
    texts = [[c.text(controls=False) for c in row] for row in table]
    for i, p1 in enumerate(SETTINGS):
        lines.append(f"{WORDS[p1]:18s}" + "".join(f"{t:>28s}" for t in texts[i]))
    if any(LOW_N in t for row in texts for t in row):
        lines.append(f"{LOW_N}: fewer items than the minimum (see report.md)")
    return "\n".join(lines)


def _per_template(rows: list[dict], rule: str, template: str) -> list[str]:
    """MRR of every cell under each manual template and their average (the paper's protocol)."""
    shown = [str(v) for v in variants(load_templates(), rule, template)]
    if len(shown) < 2:
        return []
    sources = load_templates()[RULE_RELATIONS[rule][2]].manual
    head = [f"`{sources[int(v)].render(text_a='[X]')}`" for v in shown]
    lines = [f"MRR per {template} template:", "",
             "| P1 | P2 | " + " | ".join(head) + " | average |", "|---" * (len(shown) + 3) + "|"]
    tables = [cells(rows, rule, template, variant=v) for v in shown + [MEAN]]
    for i, p1 in enumerate(SETTINGS):
        for j, p2 in enumerate(SETTINGS):
            texts = [t[i][j].text(items=False) for t in tables]
            lines.append(f"| {WORDS[p1]} | {WORDS[p2]} | " + " | ".join(texts) + " |")
    return lines + [""]


def finding(c: dict, what: str) -> str:
    """One comparison as a sentence: a difference only where the interval (and Holm) support it."""
    low, high = _num(c["difference_lo"]), _num(c["difference_hi"])
    diff = _num(c["difference"])
    n = c["n_items"]
    if diff is None:
        return f"{what}: not testable (n = {n or 0} items)."
    p = _num(c["p_holm"])
    detail = (f"{100 * diff:+.1f} points [{100 * low:+.1f}, {100 * high:+.1f}], {c['test']}, "
              + (f"Holm-adjusted p = {p:.3g}" if p is not None else "too few items to test"))
    if c["finding"] != "yes":
        # An interval off zero whose test does not survive Holm's correction is no finding either.
        after = " after Holm's correction" if low is not None and (low > 0 or high < 0) else ""
        return f"{what}: no detectable difference{after} (n = {n} items; {detail})."
    verb = "raises" if diff > 0 else "lowers"
    return f"{what} {verb} the MRR by {detail} (n = {n} items)."


WHAT = {
    "P1 explicit vs unwritten (P2 not given)": "Writing P1 (P2 not given)",
    "P1 implicit vs not given (P2 not given)": "A P1 the model knows, unwritten, vs one it does not (P2 not given)",
    "P2 explicit vs unwritten (P1 not given)": "Writing P2 (P1 not given)",
    "P2 implicit vs not given (P1 not given)": "A P2 the model knows, unwritten, vs one it does not (P1 not given)",
}


def reading(rows: list[dict], comparisons: list[dict], template: str) -> list[str]:
    """The rule-averaged table read through its comparisons."""
    table = cells(rows, None, template)
    out = []
    if table[0][0].value is not None:
        out.append(f"With neither premise given the MRR is {table[0][0].text(controls=False)}: the baseline of "
                   "a model that cannot know the pseudoword.")
    for c in comparisons:
        if c["template"] != template or c["rule"] != MEAN:
            continue
        if c["comparison"] in WHAT:
            out.append(finding(c, WHAT[c["comparison"]]))
        elif c["comparison"] == "both explicit vs 100" and table[2][2].value is not None:
            both = f"With both premises written the MRR is {table[2][2].text(controls=False)}"
            if c["finding"] == "yes":
                out.append(f"{both}, below the 100 of a model that applies the rule "
                           f"({100 * float(c['difference']):+.1f} points, Holm-adjusted p = "
                           f"{float(c['p_holm']):.3g}, n = {c['n_items']} items).")
            else:
                out.append(f"{both}: no detectable difference from 100 (n = {c['n_items']} items).")
    return out


def _source_title(out: Path) -> str:
    """`` on store S`` for a run on another ontology than the bundled one (config.json's
    ``extra.ontology``), so the report's first line says which ontology it is about."""

    try:
        pinned = json.loads((out / "config.json").read_text(encoding="utf-8"))
        ontology = pinned.get("extra", {}).get("ontology", "bundled")
    except (OSError, ValueError, AttributeError):
        return ""
    return "" if ontology in (None, "bundled") else f" on {ontology}"


def _interval_words(config: ReportSettings) -> str:
    """How the intervals were made: with one pseudoword pair the item bootstrap cannot see how
    much the numbers depend on which pair was drawn, so the report says it is conditional."""
    if (config.pairs or 1) > 1:
        return ("items and pseudoword pairs as crossed random factors (every item gets the "
                "same pairs, so an easy pair lifts the whole cell): the mean ± t × its two-way "
                "standard error; rule averages keep items within their rule.")
    return ("a bootstrap of items with their templates "
            f"({config.resamples} resamples, seeded; stratified by rule for the rule average). "
            "The interval is conditional on one pseudoword draw: another pair of pseudowords "
            "can move the cell by more than its interval (`--pairs 5` counts the draw).")


def _family(comparisons: list[dict], family: str) -> list[dict]:
    """The descriptive rows of one design (the confirmatory ones lead the report)."""
    return [c for c in descriptive(comparisons) if (c.get("family") or "grid") == family]


def write_report(out: str | Path) -> Path:
    """results.csv, comparisons.csv, the figures and report.md, all from the prompts on disk."""
    out = Path(out)
    rows, comparisons, config = write_tables(out)
    figures(out, rows)
    templates = _kinds(rows)
    min_items = config.min_items
    lines = [f"# Premise-ablation study{_source_title(out)}", ""]
    if config.model is not None:
        lines += [f"Model `{config.model}`, rules {', '.join(config.rules)}, "
                  f"{config.limit or 'all'} items per rule, {config.pairs} pseudoword pair(s), "
                  f"seed {config.seed}. " + known_rule(config), ""]
        lines += known_reach(out)
        from .memorized_sample import read_sample_lines

        lines += read_sample_lines(out)
    lines += claimed_lines(comparisons, config)
    lines += ["## Descriptive results", "",
              "Everything below describes the run; the claims are the section above.", ""]
    lines += ["MRR in %, averaged over each relation's manual templates (per template below), "
              f"with its 95% interval in brackets: {_interval_words(config)} "
              f"n = items. {LOW_N}: fewer than {min_items} items, read with care. "
              "R@1, R@5, MRRa and every interval are in results.csv; the descriptive tests in "
              "comparisons.csv (``role`` descriptive, Holm-adjusted over the descriptive rows, "
              "none a claim)." + (
                  f" Under each value, the controls' on the same prompts ({', '.join(config.controls)})."
                  if config.controls else ""), ""]
    from kgprobe.reasoning.distractors import parse_protocol

    for name in sorted({r.get("protocol") or "all" for r in rows}):  # one, unless mixed by hand
        lines += [f"Protocol `{name}`: {parse_protocol(name).describe()}; MRR is comparable only "
                  "between runs of the same protocol.", ""]
    if config.ranking == "filtered":
        lines += ["Ranking `filtered`: the answers an item's premises make true besides its gold "
                  "(entailed superclasses, superproperties, domain and range classes) are left "
                  "out when the gold is ranked; `--ranking raw` counts them.", ""]
    for template in templates:
        lines += [f"## Averaged over the rules ({template} templates)", ""]
        lines += _table(cells(rows, None, template)) + [""]
        lines += reading(rows, _family(comparisons, "grid"), template) + [""]
    lines += ["![summary](summary.png)", ""]
    for rule in _rules(rows):
        lines += [f"## {RULE_TITLES.get(rule, rule)}", ""]
        for template in templates:
            lines += [f"{template} templates (averaged):", ""] + _table(cells(rows, rule, template))
            lines += [""] + _per_template(rows, rule, template)
        tested = [c for c in _family(comparisons, "grid")
                  if c["rule"] == rule and c["comparison"] in WHAT]
        lines += [f"- {c['template']}: {finding(c, WHAT[c['comparison']])}" for c in tested]
        lines += ["", f"![{rule}](heatmap_{rule}.png)", ""]
    if config.chained:
        from .depth_report import depth_section

        lines += depth_section(out, config, finding, _family(comparisons, "depth"))
    if config.counterfactual:
        from .counterfactual_report import counterfactual_section
        lines += counterfactual_section(out, config, finding,
                                        _family(comparisons, "counterfactual"))
    path = out / "report.md"
    write_text(path, "\n".join(lines))
    return path
