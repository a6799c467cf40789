"""The chained cells' numbers (`depth.py`), from the prompts on disk: results.csv rows with
95 % intervals, the tests the reading rests on, the curves (``depth.png``) and report.md's
section. Only a run with ``--depth``/``--distractors``/``--premise-order`` has them.

Rows are built like the premise grid's (`cells.cell_row`: items resampled with their
pseudoword pairs and templates, stratified by rule for the rule average) for each (depth,
distractors, written) cell: a row per manual template, the template average (``variant``
"mean") and the rule average (``rule`` "mean"). The tests: with every premise written, depth
d against depth 1 (different items: unpaired); the most distractors against none at each
depth (the same items: paired); written against unwritten at each depth (paired): does the
model use the premises at all at that depth; and that gain (written minus unwritten, item by
item) at depth d against depth 1 (unpaired): do the premises help less as the chain grows, with
each depth's answer prior taken out; and at each depth and number of distractors the gain
from writing the premises minus the copy control's on the same prompts, and the written
cell's own MRR minus copy's on the same prompts (with distractors that name candidates,
copying in order no longer ranks the gold first, so a level above copy's is a contrast with
the text fixed and no unwritten cell in it). They are rows of
comparisons.csv (``family`` "depth", `depth_family`), computed on every control's prompts too
and Holm-adjusted with every other descriptive row of the file: descriptive rows, never
claimed; the claims are the confirmatory family's depth rows (`depth_levels`, `family`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kgprobe.atomic import save_figure
from kgprobe.ontology.verbalize import load_templates
from kgprobe.studies import comparisons, stats
from kgprobe.studies.runner import read_results

from .cells import MEAN, Prompt, cell_row, prompt_values, sample, variants
from .columns import METRICS, UNWRITTEN, WRITTEN, chained_cells
from .contrasts import CHAINED, CHAINED_LEVEL
from .control_report import control_text
from .settings import ReportSettings

#: a chained prompt: the cell it is in (depth, distractors) and the observation
Chained = tuple[int, int, Prompt]


def load_chained(out: Path) -> list[Chained]:
    """Every chained prompt of ``predictions.jsonl`` (those with a depth)."""
    found = []
    with open(Path(out) / "predictions.jsonl", encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            if "depth" not in p:
                continue
            ranks = p.get("gold_ranks") or [p["gold_rank"]]
            found.append((int(p["depth"]), int(p["distractors"]), Prompt(
                p["rule"], p["p1"], p["p2"], p["template"], int(p["variant"]), p["item"],
                int(p["pair"]), prompt_values(ranks))))
    return found


def _cells(config: ReportSettings, prompts: list[Chained]) -> list[tuple[int, int, str]]:
    return chained_cells(config.depth or sorted({d for d, _, _ in prompts}),
                         config.distractors or sorted({n for _, n, _ in prompts}))


def _of(prompts: list[Chained], depth: int, n: int, written: str) -> list[Prompt]:
    return [p for d, k, p in prompts if d == depth and k == n and p.p1 == written]


def common(prompts: list[Chained]) -> list[Chained]:
    """The prompts of the rule families with items at every depth of the run: what the rule
    average and the tests average over, so each depth averages the same families (rdfs5 and
    rdfs7 have no chains on the bundled ontology; a mean over them at depth 1 only would
    compare other families at other depths)."""
    depths = {d for d, _, _ in prompts}
    every = [r for r in sorted({p.rule for _, _, p in prompts})
             if depths <= {d for d, _, p in prompts if p.rule == r}]
    return [c for c in prompts if c[2].rule in every]


def depth_rows(out: Path, config: ReportSettings) -> list[dict]:
    """results.csv's chained rows: per template, template average, rule average, per cell."""
    prompts = load_chained(out)
    templates = load_templates()
    rules = config.rules or sorted({p.rule for _, _, p in prompts})
    units, means, overall = [], [], []
    for depth, n, written in _cells(config, prompts):
        cell = _of(prompts, depth, n, written)
        base = {"p1": written, "p2": written, "template": "manual"}
        for rule in rules:
            of_rule = [p for p in cell if p.rule == rule]
            for v in variants(templates, rule, "manual"):
                key = {"rule": rule, **base, "variant": v, "depth": depth, "distractors": n}
                units.append(cell_row(key, [p for p in of_rule if p.variant == v], config))
            key = {"rule": rule, **base, "variant": MEAN, "depth": depth, "distractors": n}
            means.append(cell_row(key, of_rule, config))
        key = {"rule": MEAN, **base, "variant": MEAN, "depth": depth, "distractors": n}
        shared = _of(common(prompts), depth, n, written)
        overall.append(cell_row(key, shared, config, stratified=True))
    return units + means + overall


def _mrr(prompts: list[Prompt]) -> stats.Clustered:
    s = sample(prompts, stratified=True)
    return stats.Clustered(s.sums[:, [METRICS.index("MRR")]], s.counts, s.strata)


def _matched(first: list[Prompt], second: list[Prompt]) -> tuple[stats.Clustered, stats.Clustered]:
    other = {p.match: p for p in second}
    pairs = [(p, other[p.match]) for p in first if p.match in other]
    return _mrr([p for p, _ in pairs]), _mrr([q for _, q in pairs])


def _gains(written: list[Prompt], unwritten: list[Prompt]) -> stats.Clustered:
    """Each prompt's MRR with its premises written minus without (the same item, pair and
    template): what the premises add, the answer's prior taken out."""
    other = {p.match: p for p in unwritten}
    pairs = [(p, other[p.match]) for p in written if p.match in other]
    mrr = METRICS.index("MRR")
    return stats.Clustered.from_prompts([(p.rule, p.item) for p, _ in pairs],
                                        [[p.values[mrr] - q.values[mrr]] for p, q in pairs],
                                        [p.rule for p, _ in pairs])


def depth_tests(prompts: list[Chained], copy: list[Chained] | None,
                config: ReportSettings) -> list[tuple[dict, comparisons.Comparison]]:
    """The tests of the reading (see the module) over the rules, each keyed by its label;
    `copy`: the copy control's chained prompts, for the written premises' gain beyond it."""
    from .contrasts import beyond_copy, gains

    prompts = common(prompts)
    copy = None if copy is None else common(copy)
    seed, resamples = config.seed, config.resamples
    cells = _cells(config, prompts)
    depths = sorted({d for d, _, _ in cells})
    counts = sorted({n for _, n, w in cells if w == WRITTEN})
    found = []
    for depth in depths:
        written = _of(prompts, depth, counts[0], WRITTEN)
        if depth != depths[0]:
            label = f"depth {depth} vs {depths[0]} ({counts[0]} distractors)"
            found.append(comparisons.unpaired_difference(
                label, _mrr(written), _mrr(_of(prompts, depths[0], counts[0], WRITTEN)),
                seed=seed, resamples=resamples))
            label = f"gain from the premises, depth {depth} vs {depths[0]}"
            found.append(comparisons.unpaired_difference(
                label, _gains(written, _of(prompts, depth, 0, UNWRITTEN)),
                _gains(_of(prompts, depths[0], counts[0], WRITTEN),
                       _of(prompts, depths[0], 0, UNWRITTEN)), seed=seed, resamples=resamples))
        if counts[-1] != counts[0]:
            label = f"{counts[-1]} vs {counts[0]} distractors (depth {depth})"
            a, b = _matched(_of(prompts, depth, counts[-1], WRITTEN), written)
            found.append(comparisons.paired_difference(label, a, b, seed=seed, resamples=resamples))
        label = f"written vs unwritten (depth {depth}, {counts[0]} distractors)"
        a, b = _matched(written, _of(prompts, depth, 0, UNWRITTEN))
        found.append(comparisons.paired_difference(label, a, b, seed=seed, resamples=resamples))
        for n in counts:  # what writing the premises adds beyond what copying adds
            def gain(ps: list[Chained], n=n, depth=depth):
                return gains(_of(ps, depth, n, WRITTEN), _of(ps, depth, 0, UNWRITTEN))

            found.append(beyond_copy(f"{CHAINED} (depth {depth}, {n} distractors)",
                                     gain(prompts), None if copy is None else gain(copy),
                                     config, True))
        for n in counts:  # the written cell itself against copy, prompt by prompt
            def level(ps: list[Chained], n=n, depth=depth):
                return {p.match: p for p in _of(ps, depth, n, WRITTEN)}

            found.append(beyond_copy(f"{CHAINED_LEVEL} (depth {depth}, {n} distractors)",
                                     level(prompts), None if copy is None else level(copy),
                                     config, True))
    return [({"template": "manual", "rule": MEAN, "comparison": c.name}, c) for c in found]


def depth_family(out: Path, controls: dict[str, Path], config: ReportSettings):
    """comparisons.csv's depth rows (`contrasts.Family`): the model's chained prompts and each
    control's (`controls`: control → its run folder), tested alike."""
    from .contrasts import Family

    return Family("depth", load_chained(out),
                  {c: load_chained(folder) for c, folder in controls.items()},
                  lambda mine, copy: depth_tests(mine, copy, config),
                  lambda data: depth_levels(data, config))


def depth_levels(prompts: list[Chained], config: ReportSettings) -> list:
    """The depth rows of the confirmatory family (`family.CHAIN`): every premise written
    beside each number of naming distractors above 0, at each depth the run has, over the
    rule families with items at every depth (`common`); none without distractors."""
    from .family import depth_label

    prompts = common(prompts)
    cells = [(d, n) for d, n, w in _cells(config, prompts) if w == WRITTEN and n > 0]
    return [({"template": "manual", "rule": MEAN, "comparison": depth_label(d, n),
              "depth": d, "distractors": n}, _of(prompts, d, n, WRITTEN),
             _of(prompts, d, 0, UNWRITTEN)) for d, n in cells]


def _value(row: dict, key: str) -> float | None:
    value = row.get(key)
    if value in ("", None):
        return None
    value = float(value)
    return None if math.isnan(value) else value


def curve(rows: list[dict], rule: str, x: str, fixed: dict) -> list[tuple[int, float, float, float]]:
    """(x, MRR, lo, hi) of a rule's (or ``mean``'s) template-averaged rows along `x`
    (``depth`` or ``distractors``), the other keys held at `fixed`."""
    out = []
    for r in rows:
        if (r["rule"] != rule or r["variant"] != MEAN
                or any(str(r[k]) != str(v) for k, v in fixed.items())):
            continue
        value = _value(r, "MRR")
        if value is not None:
            out.append((int(r[x]), value, _value(r, "MRR_lo"), _value(r, "MRR_hi")))
    return sorted(out)


def _rules(rows: list[dict]) -> list[str]:
    return sorted({r["rule"] for r in rows} - {MEAN}, key=lambda r: int(r[4:])) + [MEAN]


#: line colours: distractor counts (top row), none written, depths (bottom row), apart
BY_DISTRACTORS = ("#1f4e8c", "#d4762a", "#7a3e9d", "#2e8b57")
NONE = "#888888"
BY_DEPTH = ("#a1d99b", "#41ab5d", "#006d2c", "#9e9ac8", "#6a51a3", "#3f007d")


def figure(out: Path, rows: list[dict]) -> Path:
    """depth.png: per rule family (and their mean) MRR against depth, a line per number of
    distractors and the unwritten baseline (top); MRR against distractors, a line per depth
    (bottom); bars are 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rules = _rules(rows)
    counts = sorted({int(r["distractors"]) for r in rows if r["p1"] == WRITTEN})
    depths = sorted({int(r["depth"]) for r in rows})
    fig, axes = plt.subplots(2, len(rules), figsize=(3.2 * len(rules), 6.2), squeeze=False)
    for col, rule in enumerate(rules):
        top, bottom = axes[0][col], axes[1][col]
        lines = [(f"{n} distractors", "depth", {"distractors": n, "p1": WRITTEN}, top,
                  BY_DISTRACTORS[i % len(BY_DISTRACTORS)]) for i, n in enumerate(counts)]
        lines.append(("none written", "depth", {"distractors": 0, "p1": UNWRITTEN}, top, NONE))
        lines += [(f"depth {d}", "distractors", {"depth": d, "p1": WRITTEN}, bottom,
                   BY_DEPTH[i % len(BY_DEPTH)]) for i, d in enumerate(depths)]
        for label, x, fixed, ax, color in lines:
            points = curve(rows, rule, x, fixed)
            if points:
                xs, ys = [p[0] for p in points], [100 * p[1] for p in points]
                err = [[100 * (p[1] - p[2]) for p in points], [100 * (p[3] - p[1]) for p in points]]
                ax.errorbar(xs, ys, yerr=err, color=color, linestyle=":" if color == NONE else "-",
                            marker="o", capsize=3, label=label)
        top.set_title("mean (families at every depth)" if rule == MEAN else rule, fontsize=10)
        top.set_xlabel("depth (derivation steps)")
        bottom.set_xlabel("distractors written")
        top.set_xticks(depths)
        bottom.set_xticks(counts)
        for ax in (top, bottom):
            ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("MRR (%), 95% CI")
    axes[1][0].set_ylabel("MRR (%), 95% CI")
    axes[0][0].legend(fontsize=7)
    axes[1][0].legend(fontsize=7)
    fig.tight_layout()
    path = out / "depth.png"
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _text(row: dict | None) -> str:
    if row is None or _value(row, "MRR") is None:
        return "empty"
    shown = stats.format_interval(_value(row, "MRR"), _value(row, "MRR_lo"), _value(row, "MRR_hi"))
    return (f"{shown} (n={row['n_items']}){'†' if row.get('low_n') == 'yes' else ''}"
            + control_text(row))


def _table(rows: list[dict], rule: str) -> list[str]:
    counts = sorted({int(r["distractors"]) for r in rows if r["p1"] == WRITTEN})
    depths = sorted({int(r["depth"]) for r in rows})
    find = {(int(r["depth"]), int(r["distractors"]), r["p1"]): r for r in rows
            if r["rule"] == rule and r["variant"] == MEAN}
    head = ["none written"] + [f"written, {n} distractors" for n in counts]
    lines = ["| depth | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for d in depths:
        cells = [find.get((d, 0, UNWRITTEN))] + [find.get((d, n, WRITTEN)) for n in counts]
        lines.append(f"| {d} | " + " | ".join(_text(c) for c in cells) + " |")
    return lines


def depth_section(out: Path, config: ReportSettings, finding, tests: list[dict]) -> list[str]:
    """report.md's section: the tables (each cell with the controls' values beside it), the
    tests (comparisons.csv's ``depth`` rows, each read by `finding`, the report's sentence
    for a comparison) and the figure."""
    rows = [r for r in read_results(out / "results.csv") if r.get("depth")]
    figure(out, rows)
    order = ("in chain order" if config.premise_order == "ordered"
             else "in a seeded shuffled order")
    lines = ["## Depth and distraction", "",
             f"Chained items (docs/depth.md): depth k needs k derivation steps and writes k + 1 "
             f"premises {order}, beside N true but irrelevant premises; *none written* is the "
             "hypothesis alone. MRR in % [95% CI] (n items), manual templates averaged"
             + (f", the controls' on the same prompts under it ({', '.join(config.controls)})"
                if config.controls else "")
             + "; rows with a `depth` in results.csv, the tests below in comparisons.csv "
             "(family `depth`, descriptive: Holm-adjusted with the other descriptive rows, none "
             "a claim; the depth rows of the confirmatory family lead the report; the gain from "
             "the premises is written minus none written, item by item).", ""]
    shared = sorted({p.rule for _, _, p in common(load_chained(out))}, key=lambda r: int(r[4:]))
    for rule in _rules(rows):
        title = f"Mean over {', '.join(shared)} (items at every depth)" if rule == MEAN else rule
        lines += [f"{title}:", ""] + _table(rows, rule) + [""]
    lines += [f"- {finding(c, c['comparison'])}" for c in tests]
    lines += ["", ("*Written − unwritten, minus copy* is what writing the premises adds to the "
                   "model's MRR beyond what it adds to the copy control's (which ranks the "
                   "candidates the prompt names first), prompt by prompt: a gain copying also "
                   "makes is no evidence of chaining the premises. Above copy's bound it shows "
                   "the model uses the written chain better than naming alone does; it cannot "
                   "show which steps the model takes, and where copying is already at the "
                   "ceiling no model can exceed it. *Written, model − copy* compares the "
                   "written cell itself with copy's on the same prompts: with distractors "
                   "that name candidates copying in order misses the gold, and a model above "
                   "copy's bound picks the entailed candidate among those named; a heuristic "
                   "that follows repeated terms from premise to premise would too, so it does "
                   "not show which steps the model takes."), ""]
    return lines + ["![depth](depth.png)", ""]
