"""What report.md says about the controls: their values in every table, and the claims.

A cell's controls are shown under the model's value (``frequency 48.1 · copy 50.3 ·
random 17.9``), so no number is read without what a model that cannot reason scores on the
same prompts. The section "What this run claims" leads the report: the confirmatory family's
rows (`family`), each with the model's value, each control's, the paired differences, the
family-Holm p and a one-line verdict naming the control that stops a claim; the rows whose
``claimed`` is true in words that say what the design can show. Every other row is
descriptive.
"""

from __future__ import annotations

import math

from kgprobe.studies.controls import CHOICES, is_control

from .contrasts import tested_controls
from .family import COPIER_PASSES, CONFIRMATORY_ROLE, UNWRITTEN, reads, verdict
from .settings import ReportSettings

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


def confirmatory(comparisons: list[dict]) -> list[dict]:
    """comparisons.csv's confirmatory rows (``role``), in the family's declared order."""
    return [c for c in comparisons if c.get("role") == CONFIRMATORY_ROLE]


def descriptive(comparisons: list[dict]) -> list[dict]:
    """Every other row of comparisons.csv: read, never claimed."""
    return [c for c in comparisons if c.get("role") != CONFIRMATORY_ROLE]


def _points(value) -> str:
    found = number(value)
    return "–" if found is None else f"{100 * found:.1f}"


def _diff(row: dict, control: str) -> str:
    diff, lo = number(row.get(f"control_diff_{control}")), number(row.get(f"control_lo_{control}"))
    if diff is None:
        return "–"
    return f"{100 * diff:+.1f} (≥ {100 * lo:+.1f})" if lo is not None else f"{100 * diff:+.1f}"


#: What report.md says about the controls' nature, whatever the run claims.
NOT_A_REASONER = ("A control is not a reasoner: it ranks the candidates by how often they "
                  "answer, by the order the prompt names them, at random or by the model's "
                  "content-free prior, so whatever it scores is what a model that cannot "
                  "reason scores on the same prompts.")


def claimed_lines(comparisons: list[dict], config: ReportSettings) -> list[str]:
    """report.md's leading section: the confirmatory family's table (the model's MRR, each
    control's on the same prompts, the paired differences model − control with their one-sided
    95 % lower bounds, the family-Holm p and a verdict) and the rows it claims."""
    lines = ["## What this run claims", ""]
    against = tested_controls(config.controls, config.model)
    self_note = []
    if is_control(config.model):
        others = ", ".join(against) or "no other control"
        self_note = [(f"`{config.model}` is itself a control: its rows are read against the "
                      f"other controls ({others}), never against itself. A row claimed here is "
                      "one that only the missing control (this one) stands in front of: it "
                      "says which control a language model's claim on that row needs, not that "
                      f"`{config.model}` reasons."), ""]
    if not against:
        return lines + self_note + [
            ("Nothing: no control " + ("besides the model itself " if self_note else "")
             + "was run" + ("" if config.controls else " (`--controls none`)")
             + ", so no difference can be read against what a model that cannot reason "
             "scores."), "", NOT_A_REASONER, ""]
    rows = confirmatory(comparisons)
    read = levels_read(comparisons)
    shown = [*against, UNWRITTEN]
    lines += self_note + [
        ("A claim is a row of the confirmatory family, declared before the run "
         "(docs/premise-ablation.md#what-a-run-claims): the model's MRR in a cell against each "
         f"control's ({', '.join(against)}) on the very prompts both scored, model − control "
         "per control, one-sided (is the model above it?), with its one-sided 95% lower bound "
         "in brackets; and against its own MRR on the same items with the row's premises "
         "left out (*unwritten*): the premises must raise it. A row is claimed when it is "
         "above every control and its unwritten self: each lower bound "
         "above 0 and the row's p — the largest of its per-control p's (an intersection–union "
         "test, which needs no correction across controls) — below 0.05 after Holm's "
         f"adjustment over the family's {len(rows)} rows only. Rules averaged, manual "
         "templates; MRR in %."), "",
        *(header := ["| row | model | " + " | ".join(shown) + " | "
                     + " | ".join(f"model − {c}" for c in shown) + " | p (Holm) | verdict |",
                     "|---" * (4 + 2 * len(shown)) + "|"])]
    lines += [_table_row(r, shown, verdict(r, against)) for r in rows]
    if read:
        lines += ["", ("The other level rows, tested the same way and read descriptively "
                       f"({COPIER_PASSES}; Holm over these rows):"), "",
                  *header,
                  *[_table_row(r, shown, _read_verdict(r, against)) for r in read]]
    claimed = [r for r in rows if _claimed(r)]
    lines.append("")
    if claimed:
        lines += ["What the claimed rows show:", ""]
        lines += [f"- {row_name(r)}: {reads(r['comparison'])}." for r in claimed]
        lines += ["", ("A claim says the model does better than every control on this design; "
                       "it does not say the inference is valid for other items or wordings.")]
    else:
        lines.append(f"Nothing is claimed: no row of the family ({len(rows)} rows) is above "
                     f"every control ({', '.join(against)}) and its unwritten self after "
                     "Holm's adjustment.")
    rest = descriptive(comparisons)
    lines += ["", NOT_A_REASONER, "",
              (f"Every other row of comparisons.csv ({len(rest)} rows: "
               f"{', '.join(_families(rest)) or 'none'}; `role` descriptive) describes the "
               "run — per-rule cells, written − unwritten gains, gains minus copy's, the "
               "known-P1 interaction, unpaired cell differences — with its interval and a "
               "Holm p over the descriptive rows; none is a claim, whatever its interval."), ""]
    return lines


def levels_read(comparisons: list[dict]) -> list[dict]:
    """The level rows a copier passes (`family.COPIER_PASSES`): tested like the family's,
    descriptive."""
    return [c for c in comparisons if c.get("role") != CONFIRMATORY_ROLE
            and c.get("test") == "one-sided vs every control"]


def _read_verdict(row: dict, against: list[str]) -> str:
    said = verdict(row, against)
    return said if said.startswith("descriptive") else "descriptive: " + said


def _table_row(r: dict, shown: list[str], said: str) -> str:
    p = number(r.get("p_holm"))
    return (f"| {row_name(r)} | {_points(r.get('model_value'))} | "
            + " | ".join(_points(r.get(f"control_estimate_{c}")) for c in shown)
            + " | " + " | ".join(_diff(r, c) for c in shown)
            + f" | {'–' if p is None else f'{p:.3g}'} | {said} |")


def row_name(row: dict) -> str:
    """A confirmatory row's name in report.md: its label, and its design where not the grid."""
    family = row.get("family") or "grid"
    return row["comparison"] if family == "grid" else f"{family}: {row['comparison']}"
