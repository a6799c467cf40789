"""What report.md says about the controls: their values in every table, and the claimed rows.

A cell's controls are shown under the model's value (``frequency 48.1 · copy 50.3 ·
random 17.9``), so no number is read without what a model that cannot reason scores on the
same prompts. The section "What this run claims" states exactly the rows of comparisons.csv
whose ``claimed`` is true (`contrasts`), each in words that say what its design can show,
and says plainly when nothing is claimed and why.
"""

from __future__ import annotations

import math

from kgprobe.studies.comparisons import Comparison, claimed
from kgprobe.studies.controls import CHOICES, is_control

from .contrasts import CHAINED, CHAINED_LEVEL, FOLLOWS, INTERACTION, LEVEL, PRIOR, WRITTEN
from .settings import ReportSettings

#: What a claimed row shows, by its comparison (the design's reach, not more).
MEANS = {
    INTERACTION: "the model uses a P1 it knows together with a written P2: writing P2 helps "
                 "more on the items whose P1 it knows than on those whose P1 it does not, each "
                 "item compared with itself, so which answers the items have cancels out",
    WRITTEN["P1"][0]:
        "a written P1 helps more than copying the candidates it names does, on the same prompts",
    WRITTEN["P2"][0]:
        "a written P2 helps more than copying the candidates it names does, on the same prompts",
    LEVEL["P1"][0]:
        "with P1 written, the model ranks the gold higher than the copy control does on the "
        "same prompts: it uses the premise beyond naming its candidates",
    LEVEL["P2"][0]:
        "with P2 written, the model ranks the gold higher than the copy control does on the "
        "same prompts: it uses the premise beyond naming its candidates",
    CHAINED: "writing the chain of premises helps more than it helps the copy control on the "
             "same prompts (ranking the candidates the prompt names first), so more than naming "
             "the answer does; it does not show which derivation steps the model takes",
    CHAINED_LEVEL: "with the chain of premises written, the model ranks the gold higher than "
                   "the copy control does on the same prompts: among the candidates the "
                   "premises name it picks the entailed one more often than copying them in "
                   "order does; it does not show which derivation steps the model takes (a "
                   "heuristic that follows repeated terms from premise to premise would too)",
    FOLLOWS: "the model follows a written false premise to the term it entails more than "
             "copying the candidates the prompt names does, on the same prompts: it uses the "
             "premise, not only its recall; it does not show valid reasoning on true premises",
}


def meaning(comparison: str) -> str:
    """What a claimed row of `comparison` shows (its design's reach); depth and
    counterfactual labels carry their cell after the contrast's name."""
    for label, text in MEANS.items():
        if comparison == label or comparison.startswith(f"{label} ("):
            return text + comparison[len(label):]
    return f"{comparison}, beyond every control"


def where(row: dict) -> str:
    """Which part of the run a comparisons.csv row is about, in words."""
    family = row.get("family") or "grid"
    if family == "grid":
        return f"{row['template']} templates, rule {row['rule']}"
    return f"{family} cells, {row['template']} templates, rules averaged"


def number(value) -> float | None:
    """A CSV field as a number; None for an empty field or NaN."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def control_text(row: dict, metric: str = "MRR") -> str:
    """The controls' values of `metric` in a results.csv row, as a table cell's second line."""
    shown = [f"{c} {100 * v:.1f}" for c in CHOICES
             if (v := number(row.get(f"{metric}_{c}"))) is not None]
    return "<br>" + " · ".join(shown) if shown else ""


def _claimed(row: dict) -> bool:
    return str(row.get("claimed", "")).lower() == "true"


def _families(comparisons: list[dict]) -> list[str]:
    return list(dict.fromkeys(c.get("family") or "grid" for c in comparisons))


def claimed_lines(comparisons: list[dict], config: ReportSettings) -> list[str]:
    """report.md's section on the claimed rows of comparisons.csv (or why there are none)."""
    lines = ["## What this run claims", ""]
    if is_control(config.model):
        return lines + [(f"Nothing: `{config.model}` is itself a control, a model that cannot "
                        "reason, so no difference it shows is evidence of reasoning; its "
                        "numbers are what a language model's must exceed."), ""]
    if not config.controls:
        return lines + [("Nothing: no controls were run (`--controls none`), so no difference "
                        "can be read against what a model that cannot reason scores."), ""]
    claimed = [c for c in comparisons if _claimed(c)]
    held = held_for_prior(comparisons, config)
    if not claimed:
        return lines + [(f"Nothing: no row of comparisons.csv ({len(comparisons)} rows: "
                        f"{', '.join(_families(comparisons))}) has its 95% interval off zero, "
                        "a Holm-adjusted p below 0.05 (over the whole file) and an estimate "
                        "above every control's upper bound "
                        f"({', '.join(config.controls)})."), "", *held]
    lines += [("The rows of comparisons.csv whose interval excludes zero, whose Holm-adjusted p "
              "is below 0.05 and whose estimate exceeds every control's upper bound:"), ""]
    for c in claimed:
        bounds = [v for k, v in c.items() if k.startswith("control_hi_") and number(v) is not None]
        lines.append(f"- {where(c)}: {meaning(c['comparison'])}: "
                     f"{100 * float(c['estimate']):+.1f} points [{100 * float(c['lo']):+.1f}, "
                     f"{100 * float(c['hi']):+.1f}], Holm-adjusted p = {float(c['p_holm']):.3g}, "
                     f"controls at most {100 * max(map(float, bounds)):+.1f}.")
    return lines + ["", ("A claim says the model does better than the controls on this design; "
                    "it does not say the inference is valid for other items or wordings."), "",
                    *held]


def _comparison(row: dict) -> Comparison:
    """A comparisons.csv row back as the `Comparison` it was written from."""
    def value(key: str) -> float:
        found = number(row.get(key))
        return math.nan if found is None else found

    return Comparison(row["comparison"], row["test"], value("estimate"), value("lo"),
                      value("hi"), value("p"), row.get("n_items", ""), value("p_holm"))


def held_for_prior(comparisons: list[dict], config: ReportSettings) -> list[str]:
    """A paragraph naming the unpaired rows that pass every other test but are not claimed
    because the ``prior`` control did not run (`contrasts`: two cells' different items can
    differ by the model's own preference for their answers); none when it ran."""
    if PRIOR in config.controls:
        return []
    held = []
    for c in comparisons:
        bounds = [number(v) for k, v in c.items() if k.startswith("control_hi_")]
        if not _claimed(c) and claimed(_comparison(c), [math.nan if b is None else b
                                                       for b in bounds], with_prior=True):
            held.append(f"{where(c)}: {c['comparison']} "
                        f"({100 * float(c['estimate']):+.1f} points)")
    if not held:
        return []
    return [("Not claimed without the model's own prior as a control, though above the other "
             "controls: " + "; ".join(held) + ". These rows compare different items, whose "
             "answers the model may simply prefer; rerun with `--controls "
             f"{','.join((*config.controls, PRIOR))}` to read them against its content-free "
             "prior."), ""]
