"""What every study's ``--answers generate`` shares: the prompt a model continues and a grade table.

A cloze becomes a *generation prompt* (`generation_prompt`): the statement up to the slot, so
the continuation is the answer; where the statement goes on after the slot with more than
punctuation ("One has to be a particular [MASK] if …", "[X] [MASK] [Y] ."), the whole
statement with the slot blanked comes first, on its own line, so what follows the slot is read
before the answer is written. The answers are graded by `reasoning.grading` (exact / entailed
/ wrong / unmapped), and a cell's row (`grade_row`) holds each rate with its 95 % bootstrap
interval over items (a prompt's pseudoword pairs stay inside their item: `studies.stats`).
The memorization and premise-ablation studies both read this module, so they write one table.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from kgprobe.ontology.verbalize import MASK

#: The metrics of a row, each with ``_lo`` and ``_hi`` beside it in results.csv.
METRICS = ("accuracy", "exact", "entailed", "wrong", "unmapped", "specificity")
#: The grades whose rates sum to 1.
RATES = ("exact", "entailed", "wrong", "unmapped")
#: Only punctuation after the slot: the prompt ends at the slot.
_PUNCTUATION = set(" .,;:!?")
BLANK = "___"


def generation_prompt(cloze: str) -> str:
    """The text a model continues to answer `cloze` (one ``[MASK]``): see the module docstring."""
    before, _, after = cloze.partition(MASK)
    head = before.rstrip()
    if set(after) <= _PUNCTUATION:
        return head
    return f"{before}{BLANK}{after}".strip() + "\n" + head


def grade_values(grades: Sequence) -> dict[str, list[float]]:
    """metric → one 0/1 (specificity: 0…1) value per graded answer."""
    from kgprobe.reasoning.grading import specificity

    return {"accuracy": [float(g.grade in ("exact", "entailed")) for g in grades],
            **{name: [float(g.grade == name) for g in grades] for name in RATES},
            "specificity": [specificity(g) for g in grades]}


def grade_row(grades: Sequence, *, seed: int, key: Sequence,
              items: Sequence[Hashable] | None = None) -> dict:
    """A cell's rates over its answers, each with its 95 % bootstrap interval: over answers
    (`items` None: one answer an item), or over `items` (the item of each answer: several
    answers of one item — its pseudoword pairs — are resampled together)."""
    from kgprobe.studies.stats import Clustered, bootstrap_interval

    items = list(range(len(grades))) if items is None else list(items)
    row: dict = {"n": len(grades)}
    nan = float("nan")
    for name, column in grade_values(grades).items():
        iv = (bootstrap_interval(Clustered.from_prompts(items, column), seed=seed,
                                 key=(*key, name)) if column else None)
        row[name] = float(iv.estimate[0]) if iv else nan
        row[f"{name}_lo"] = float(iv.lo[0]) if iv else nan
        row[f"{name}_hi"] = float(iv.hi[0]) if iv else nan
    distances = [g.distance for g in grades if g.grade == "entailed"]
    row["mean_distance"] = sum(distances) / len(distances) if distances else nan
    return row


def number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def pct(row: dict, metric: str) -> str:
    """``12.0 [4.0, 26.0]``: a row's rate and interval in percent; "no items" when empty."""
    est, lo, hi = (number(row.get(f"{metric}{s}")) for s in ("", "_lo", "_hi"))
    if math.isnan(est):
        return "no items"
    return f"{100 * est:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


NOTE = ("\n\nGrades: exact (the gold), entailed (a true superclass or superproperty of the gold: "
        "right, less specific; distance = steps above the gold), wrong (a term of the ontology "
        "that is not true of the subject), unmapped (no term named). accuracy = exact + "
        "entailed; specificity = 1 for exact, 1/(1+distance) for entailed, 0 otherwise; 95 % "
        "bootstrap intervals over records in brackets.")
