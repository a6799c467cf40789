"""The premise-ablation study's cells and the columns of its files: the premise settings,
the metrics, the rows of the unit files, results.csv and comparisons.csv, and the chained
cells a depth design adds. What a run's files hold is decided here, apart from the settings
that decide which cells a run asks (`config`)."""

from __future__ import annotations

SETTINGS = ("not", "implicit", "explicit")
METRICS = ("R@1", "R@5", "MRR", "MRRa")
#: A unit's row: one cell under one template ("variant": its index among the relation's manual
#: templates; the soft kind has one).
UNIT_COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", *METRICS, "protocol", "ranking"]
#: results.csv: the unit rows, the template averages (variant "mean") and the rule averages
#: (rule "mean"), each with its item and prompt counts and 95 % interval; `n` counts prompts.
COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", "n_items", "n_prompts",
           *[f"{m}{suffix}" for m in METRICS for suffix in ("", "_lo", "_hi")], "low_n",
           "protocol", "study_protocol", "ranking"]
#: the key columns chained cells add (`depth.py`); only a run with those options has them
DEPTH_COLUMNS = ("depth", "distractors")


def with_depth(columns: list[str]) -> list[str]:
    """`columns` with `DEPTH_COLUMNS` after ``variant``."""
    i = columns.index("variant") + 1
    return [*columns[:i], *DEPTH_COLUMNS, *columns[i:]]


def with_premises(columns: list[str]) -> list[str]:
    """`columns` with ``premises`` after the cell's key (``variant``, or ``distractors``)."""
    i = columns.index("distractors" if "distractors" in columns else "variant") + 1
    return [*columns[:i], "premises", *columns[i:]]


#: how a chained cell writes its premises: every needed one, or none
WRITTEN, UNWRITTEN = "explicit", "unwritten"


def chained_cells(depths, distractors) -> list[tuple[int, int, str]]:
    """(depth, distractors, written) of every chained cell (`depth.py`): all premises written
    beside each number of distractors, and once none written (distractors 0)."""
    out = []
    for depth in depths:
        out += [(int(depth), int(n), WRITTEN) for n in distractors]
        out.append((int(depth), 0, UNWRITTEN))
    return out


COMPARISON_COLUMNS = ["template", "rule", "comparison", "test", "n_items", "difference",
                      "difference_lo", "difference_hi", "p", "p_holm", "finding"]
