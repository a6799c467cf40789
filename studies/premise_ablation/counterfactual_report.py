"""The counterfactual cells' numbers (`counterfactual.py`), from the prompts on disk:
results.csv rows (``premises`` "counterfactual"), the tests (comparisons.csv's rows of
``family`` "counterfactual", `counterfactual_family`) and report.md's section. Only a run with ``--premises true,counterfactual`` has them.

Rows are built like the grid's (`cells.cell_row`): per manual template, the template average
and the rule average, for each counterfactual cell. The tests, over the rules (items paired
with themselves: the same item, pseudoword pair and template), descriptive rows Holm-adjusted
with every other descriptive row of comparisons.csv (the claim is the confirmatory family's
row, `levels`), each also computed on every control's prompts:

* the counterfactual P1 written vs unwritten, with P2 written: does the model follow a false
  premise (the false term's MRR with it written against its prior without it)? A recalling
  model (frequency) shows nothing; one that reads the prompt (a reasoner, or copying, which
  this test cannot tell apart) does;
* the same with P2 not given: following a written premise where no inference is possible;
* counterfactual vs true P1 written, with P2 written: how much worse the model follows a
  false premise than a true one (a reasoner: about 0; a model that answers from memory:
  the true gold is what it recalls, so far below 0);
* the false P1 written − unwritten minus the same for the copy control (P2 explicit; not
  given), paired by prompt: following the false premise beyond what copying the named
  candidates gives (`READS` says what that can and cannot show).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kgprobe.ontology.verbalize import load_templates
from kgprobe.studies import comparisons
from kgprobe.studies.runner import read_results

from .cells import MEAN, Prompt, cell_row, prompt_values, sample, variants
from .columns import METRICS, with_premises
from .contrasts import FOLLOWS
from .control_report import control_text
from .counterfactual import CELLS, COUNTERFACTUAL
from .settings import ReportSettings


def load_counterfactual(out: Path, premises: str = COUNTERFACTUAL) -> list[Prompt]:
    """The grid's prompts of ``premises`` (the counterfactual ones, or ``true``: those
    without the key), chained prompts left out."""
    found = []
    with open(Path(out) / "predictions.jsonl", encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            if "depth" in p or p.get("premises", "true") != premises:
                continue
            ranks = p.get("gold_ranks") or [p["gold_rank"]]
            found.append(Prompt(p["rule"], p["p1"], p["p2"], p["template"], int(p["variant"]),
                                p["item"], int(p["pair"]), prompt_values(ranks)))
    return found


def counterfactual_rows(out: Path, config: ReportSettings) -> list[dict]:
    """results.csv's counterfactual rows: per template, template average, rule average."""
    prompts = load_counterfactual(out)
    templates = load_templates()
    rules = config.rules or sorted({p.rule for p in prompts})
    units, means, overall = [], [], []
    for p1, p2 in CELLS:
        cell = [p for p in prompts if (p.p1, p.p2) == (p1, p2)]
        base = {"p1": p1, "p2": p2, "template": "manual"}
        for rule in rules:
            of_rule = [p for p in cell if p.rule == rule]
            for v in variants(templates, rule, "manual"):
                key = {"rule": rule, **base, "variant": v, "premises": COUNTERFACTUAL}
                units.append(cell_row(key, [p for p in of_rule if p.variant == v], config))
            means.append(cell_row({"rule": rule, **base, "variant": MEAN,
                                   "premises": COUNTERFACTUAL}, of_rule, config))
        overall.append(cell_row({"rule": MEAN, **base, "variant": MEAN,
                                 "premises": COUNTERFACTUAL}, cell, config, stratified=True))
    return units + means + overall


def with_counterfactual(out: Path, config: ReportSettings, rows: list[dict],
                        columns: list[str]) -> tuple[list[dict], list[str]]:
    """results.csv's rows and columns with the counterfactual cells' (the grid's rows
    ``premises`` "true")."""
    return ([{"premises": "true", **r} for r in rows] + counterfactual_rows(out, config),
            with_premises(columns))


def _matched(first: list[Prompt], second: list[Prompt]):
    """Item-level MRR sums over the prompts both sides hold, stratified by rule."""
    from kgprobe.studies import stats

    other = {p.match: p for p in second}
    pairs = [(p, other[p.match]) for p in first if p.match in other]
    mrr = METRICS.index("MRR")
    a, b = sample([p for p, _ in pairs], True), sample([q for _, q in pairs], True)
    return (stats.Clustered(a.sums[:, [mrr]], a.counts, a.strata),
            stats.Clustered(b.sums[:, [mrr]], b.counts, b.strata))


#: (label, first cell, second cell, second from the true grid)
TESTS = (
    ("counterfactual P1 written vs unwritten (P2 explicit)", ("explicit", "explicit"),
     ("not", "explicit"), False),
    ("counterfactual P1 written vs unwritten (P2 not given)", ("explicit", "not"),
     ("not", "not"), False),
    ("counterfactual vs true P1 written (P2 explicit)", ("explicit", "explicit"),
     ("explicit", "explicit"), True),
)
#: (label, P2): the false P1's written − unwritten gain minus the copy control's
BEYOND_COPY = ((f"{FOLLOWS} (P2 explicit)", "explicit"), (f"{FOLLOWS} (P2 not given)", "not"))

#: one model's counterfactual data: its twins' prompts and the true grid's (manual templates)
Data = tuple[list[Prompt], list[Prompt]]


def counterfactual_tests(data: Data, copy: Data | None, config: ReportSettings
                         ) -> list[tuple[dict, comparisons.Comparison]]:
    """The tests (see the module) over the rules, manual templates, each keyed by its label;
    `copy`: the copy control's data, for the false premise followed beyond copying."""
    from .contrasts import beyond_copy, gains

    twins, true = data
    found = []
    for label, first, second, grid in TESTS:
        a = [p for p in twins if (p.p1, p.p2) == first]
        b = [p for p in (true if grid else twins) if (p.p1, p.p2) == second]
        x, y = _matched(a, b)
        found.append(comparisons.paired_difference(label, x, y, seed=config.seed,
                                                   resamples=config.resamples))

    def follows(ps: list[Prompt], p2: str):
        return gains([p for p in ps if (p.p1, p.p2) == ("explicit", p2)],
                     [p for p in ps if (p.p1, p.p2) == ("not", p2)])

    for label, p2 in BEYOND_COPY:
        found.append(beyond_copy(label, follows(twins, p2),
                                 None if copy is None else follows(copy[0], p2), config, True))
    return [({"template": "manual", "rule": MEAN, "comparison": c.name}, c) for c in found]


def _data(folder: Path) -> Data:
    return ([p for p in load_counterfactual(folder) if p.template == "manual"],
            [p for p in load_counterfactual(folder, "true") if p.template == "manual"])


def counterfactual_family(out: Path, controls: dict[str, Path], config: ReportSettings):
    """comparisons.csv's counterfactual rows (`contrasts.Family`): the model's counterfactual
    and true prompts and each control's (`controls`: control → its run folder), tested alike."""
    from .contrasts import Family

    return Family("counterfactual", _data(out), {c: _data(f) for c, f in controls.items()},
                  lambda mine, copy: counterfactual_tests(mine, copy, config), levels)


def levels(data: Data) -> list:
    """The counterfactual row of the confirmatory family (`family.FALSE_P1`): the false P1
    written with P2 written, manual templates, rules averaged."""
    from .family import declared

    return [({"template": "manual", "rule": MEAN, "comparison": d.label},
             [p for p in data[0] if (p.p1, p.p2) == (d.p1, d.p2)],
             [p for p in data[0] if (p.p1, p.p2) in d.unwritten])
            for d in declared("counterfactual")]


def _text(row: dict | None) -> str:
    from kgprobe.studies.stats import format_interval

    if row is None or row.get("MRR") in ("", None) or math.isnan(float(row["MRR"])):
        return "empty"
    shown = format_interval(float(row["MRR"]), float(row["MRR_lo"]), float(row["MRR_hi"]))
    return (f"{shown} (n={row['n_items']}){'†' if row.get('low_n') == 'yes' else ''}"
            + control_text(row))


def counterfactual_section(out: Path, config: ReportSettings, finding, tests: list[dict]
                           ) -> list[str]:
    """report.md's section: the rule-averaged table beside the true grid's P1-written row (each
    cell with the controls' values under it), and the tests (comparisons.csv's
    ``counterfactual`` rows, each read by `finding`)."""
    rows = read_results(out / "results.csv")
    find = {(r["premises"] or "true", r["p1"], r["p2"]): r for r in rows
            if r["rule"] == MEAN and r["variant"] == MEAN and r["template"] == "manual"
            and not r.get("depth")}
    lines = ["## Counterfactual premises", "",
             "Each item asked again with P1 naming a false term (a seeded candidate of its own "
             "list that is no true answer of it); the gold is what the written premises entail "
             "(docs/premise-ablation.md#counterfactual-premises). MRR in % [95% CI] (n items) of "
             "that gold, manual templates and rules averaged"
             + (f", the controls' on the same prompts under it ({', '.join(config.controls)})"
                if config.controls else "")
             + "; *true P1 written* is the grid's row. A model that follows what it reads scores "
             "alike in both rows; one that recalls the ontology answers the real gold, which "
             "counts as wrong here.", "",
             "| P1 \\ P2 | explicitly given | implicitly given | not given |", "|---|---|---|---|"]
    for label, premises, p1 in (("true P1 written", "true", "explicit"),
                                ("counterfactual P1 written", COUNTERFACTUAL, "explicit"),
                                ("counterfactual P1 unwritten", COUNTERFACTUAL, "not")):
        cells = [find.get((premises, p1, p2)) for p2 in ("explicit", "implicit", "not")]
        lines.append(f"| {label} | " + " | ".join(_text(c) for c in cells) + " |")
    lines += ["", ("Descriptive tests (comparisons.csv, family `counterfactual`, Holm-adjusted "
                   "with the other descriptive rows, none a claim):"), ""]
    lines += [f"- {finding(c, c['comparison'])}" for c in tests]
    return lines + ["", READS, ""]


#: What the counterfactual contrast against copy can and cannot show (report.md, docs).
READS = ("*False P1 written − unwritten, minus copy* is how much writing the false premise "
         "moves the model to the false term beyond how much it moves the copy control, which "
         "ranks the candidates the prompt names first, on the same prompts. A model that "
         "answers from memory does not follow the premise (frequency: no gain); one that reads "
         "it does, whether it infers or copies, so the plain written − unwritten rows cannot "
         "tell inference from copying. Only a gain above copy's bound is evidence of using the "
         "premise beyond naming it; where copy is at the ceiling (the false term is often the "
         "only candidate the prompt names) no model can show that, and a claim here says the "
         "model follows a false premise, not that it reasons validly elsewhere.")
