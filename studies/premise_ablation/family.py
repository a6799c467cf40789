"""The confirmatory family: the few rows of comparisons.csv a premise-ablation run may claim.

A claim is that the model ranks the gold higher than **every** control does on the very
prompts it was asked: one paired, one-sided test of model − control per control
(`comparisons.one_sided`: items resampled, with several pseudoword pairs items × pairs as
crossed random factors), joined by the intersection–union test (`comparisons.beyond_every`:
the row's p is the largest of its per-control p's, and every control's lower bound must be
above 0). A level against a control on the same prompts holds the text fixed, so a selection
effect (which items land in the cell) reaches the control too and cancels.

Which rows are tested is declared here, before any data are seen, as data (`CONFIRMATORY`):
the cells where a model that uses the written (or known) premises must beat a model that
cannot, rules averaged, manual templates (the paper's protocol). Holm's adjustment runs over
these rows only — the run's rows among them: a run without chained or counterfactual cells
has a smaller family. Every other row of comparisons.csv (per-rule rows, written − unwritten
gains, "minus copy" contrasts, the interaction, unpaired rows) is descriptive: read, never
claimed.

Besides the controls, each row is tested against the model's own prompts of the same items
with the row's premises left out (`UNWRITTEN`), as one more component of the
intersection–union test: a claim also needs the written premises to raise the model's own
rank of the gold. A control that ignores the prompt (frequency: the same ranking whatever is
written) can exceed the other controls where naming distractors pull copy off the gold, and
without this component its own run would be claimed there; with it, a model has to use what
is written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kgprobe.studies import comparisons, stats

from .cells import Prompt, sample
from .columns import METRICS
from .settings import ReportSettings

#: comparisons.csv's ``role`` of a row in the family, and of every other row.
CONFIRMATORY_ROLE, DESCRIPTIVE_ROLE = "confirmatory", "descriptive"
#: The templates the family reads (the paper's protocol); soft-template rows are descriptive.
TEMPLATE = "manual"
#: The reference every row is also tested against besides the controls: the model itself on
#: the same items (pair, template) with the row's written premises left out (`Declared.unwritten`).
UNWRITTEN = "unwritten"


@dataclass(frozen=True)
class Declared:
    """One confirmatory row: the model's level in one cell (`family`'s cell `p1`, `p2`; depth
    rows: all premises written, at each depth and each number of naming distractors > 0 the run
    has), against every control on the same prompts; `reads` what a claim on it shows."""

    family: str  # grid | depth | counterfactual
    label: str
    p1: str
    p2: str
    reads: str
    #: the cells that ask the same items with the row's written premises left out (the
    #: model's own `UNWRITTEN` reference); depth rows: none written at the same depth
    unwritten: tuple[tuple[str, str], ...] = ()
    #: whether the row can claim; a level row that a copier passes (`COPIER_PASSES`) is
    #: computed the same way and read descriptively
    confirmatory: bool = True


BOTH = "both premises written, model − control"
KNOWN_P1 = "P1 known (implicit) × P2 written, model − control"
P1_ONLY = "P1 written (P2 not given), model − control"
P2_ONLY = "P2 written (P1 not given), model − control"
CHAIN = "every premise written, naming distractors, model − control"
FALSE_P1 = "false P1 written (P2 written), model − control"

#: Why only the cells with naming distractors are confirmatory rows: copy run as the model
#: (bench/claim_power.py, `tests/test_claim_validation.py`) ranks the gold above every other
#: control in the written cells without them (98.9 MRR with both premises or P1 written, the
#: other controls at most 69.6; a written false P1 it follows as readily), and in the cell of
#: a P1 it "knows" with P2 written (90.0 against at most 35.3, on 9 items whose P2 label
#: holds the gold: "Christian bishop" names "bishop"), so a claim there could not tell
#: reasoning from copying. Beside naming distractors copy falls to 63-80 and a reasoner can
#: show itself. The other level rows are computed the same way and read descriptively.
COPIER_PASSES = ("a copier passes these cells: the copy control, run as the model, is above "
                 "every other control in them, so they cannot separate reasoning from copying")

#: The level rows, in report.md's order: the confirmatory family and the level rows read
#: descriptively (`Declared.confirmatory`).
CONFIRMATORY = (
    Declared("grid", BOTH, "explicit", "explicit",
             "with both premises written the model ranks the entailed answer above every "
             "control on the same prompts",
             (("not", "not"), ("not", "implicit"), ("implicit", "not"),
              ("implicit", "implicit")), confirmatory=False),
    Declared("grid", KNOWN_P1, "implicit", "explicit",
             "with P2 written and a P1 it knows left unwritten, the model ranks the entailed "
             "answer above every control on the same prompts: it combines a recalled premise "
             "with a written one", (("implicit", "not"),), confirmatory=False),
    Declared("grid", P1_ONLY, "explicit", "not",
             "with P1 written alone the model ranks the gold above every control on the same "
             "prompts", (("not", "not"), ("implicit", "not")), confirmatory=False),
    Declared("grid", P2_ONLY, "not", "explicit",
             "with P2 written alone the model ranks the gold above every control on the same "
             "prompts", (("not", "not"), ("not", "implicit")), confirmatory=False),
    Declared("depth", CHAIN, "explicit", "explicit",
             "with the whole chain and distractors that name other candidates written, the "
             "model picks the entailed candidate more often than every control on the same "
             "prompts; it does not show which derivation steps it takes"),
    Declared("counterfactual", FALSE_P1, "explicit", "explicit",
             "the model follows a written false P1 to the term it entails more than every "
             "control on the same prompts: it uses the premise, not only its recall",
             (("not", "explicit"),), confirmatory=False),
)


def declared(family: str) -> list[Declared]:
    """The family's declared rows of one design (grid, depth, counterfactual)."""
    return [d for d in CONFIRMATORY if d.family == family]


def depth_label(depth: int, distractors: int) -> str:
    """comparisons.csv's ``comparison`` of the depth row at `depth`, `distractors`."""
    return f"{CHAIN} (depth {depth}, {distractors} distractors)"


def is_confirmatory(label: str) -> bool:
    """Whether the level row `label` (a depth row: with its cell in brackets) can claim."""
    return any(d.confirmatory for d in CONFIRMATORY
               if label == d.label or label.startswith(f"{d.label} ("))


def reads(label: str) -> str:
    """What a claim on the row `label` shows (a depth row: its cell in brackets)."""
    for d in CONFIRMATORY:
        if label == d.label or label.startswith(f"{d.label} ("):
            return d.reads + label[len(d.label):]
    return label


#: One confirmatory row's key columns (family, template, rule, comparison, and depth and
#: distractors for a depth row), the prompts of its cell and those of the same items with its
#: premises unwritten.
Level = tuple[dict, list[Prompt], list[Prompt]]
#: A design's declared cells, from one model's data: `Family.levels`.
Levels = Callable[[object], list[Level]]


def _mrr(prompts: list[Prompt]) -> stats.Clustered:
    s = sample(prompts, stratified=True)
    return stats.Clustered(s.sums[:, [METRICS.index("MRR")]], s.counts, s.strata)


def level(prompts: list[Prompt]) -> float:
    """A cell's MRR, rules averaged (NaN when empty)."""
    return float(_mrr(prompts).estimate()[0]) if prompts else math.nan


def against(name: str, mine: list[Prompt], theirs: list[Prompt],
            config: ReportSettings) -> tuple[comparisons.Comparison, float]:
    """model − control on the prompts both scored (same rule, item, pair, template), rules
    averaged, one-sided (`comparisons.one_sided`); → the test and the control's MRR on them."""
    other = {p.match: p for p in theirs}
    pairs = [(p, other[p.match]) for p in mine if p.match in other]
    a, b = _mrr([p for p, _ in pairs]), _mrr([q for _, q in pairs])
    crossed = None
    if (config.pairs or 1) > 1 and len({p.pair for p, _ in pairs}) > 1:
        mrr = METRICS.index("MRR")
        crossed = stats.Crossed.from_prompts([(p.rule, p.item) for p, _ in pairs],
                                             [p.pair for p, _ in pairs],
                                             [p.values[mrr] - q.values[mrr] for p, q in pairs],
                                             [p.rule for p, _ in pairs])
    test = comparisons.one_sided(name, a, b, seed=config.seed, crossed=crossed,
                                 resamples=config.resamples)
    return test, level([q for _, q in pairs])


def confirmatory_rows(levels: Sequence[tuple[dict, list[Prompt], list[Prompt],
                                             Mapping[str, list[Prompt]]]],
                      controls: Sequence[str], config: ReportSettings) -> list[dict]:
    """comparisons.csv's confirmatory rows: for each (key, the model's prompts of the cell,
    its prompts of the same items unwritten, each control's prompts of the cell), the model's
    MRR, each control's (``control_estimate_C``; C also ``unwritten``: the model's own
    unwritten prompts, tested like a control),
    the paired one-sided test against each (``control_diff_C``, ``control_lo_C``: the
    one-sided 95 % lower bound, ``control_p_C``), the intersection–union p (``p``), Holm's
    adjustment over the confirmatory rows only (``p_holm``) and ``claimed``: Holm p below 0.05
    and every control's lower bound above 0. A level row a copier passes
    (`Declared.confirmatory` false) gets the same columns, ``role`` descriptive, a Holm p
    over those rows, and is never claimed. `controls`: the controls to test against (never the
    model itself). ``estimate``/``lo``/``hi`` are the test of the control that binds (the
    largest p)."""
    rows, ps = [], []
    references = [*controls, UNWRITTEN] if controls else []
    for key, mine, unwritten, theirs in levels:
        theirs = {**theirs, UNWRITTEN: unwritten}
        tests, values = {}, {}
        for c in references:
            if c in theirs:
                tests[c], values[c] = against(f"{key['comparison']} vs {c}", mine, theirs[c],
                                              config)
        p, stopping = comparisons.beyond_every(tests)
        binding = max(tests, key=lambda c: (_finite(tests[c].p), -_finite(tests[c].lo, 1e9)),
                      default=None)
        best = tests[binding] if binding else comparisons.Comparison("", "", *[math.nan] * 4, "0")
        role = CONFIRMATORY_ROLE if is_confirmatory(key["comparison"]) else DESCRIPTIVE_ROLE
        row = {**key, "role": role, "test": "one-sided vs every control",
               "n_items": sample(mine).n_items, "model_value": level(mine),
               "difference": best.estimate, "difference_lo": best.lo, "difference_hi": best.hi,
               "estimate": best.estimate, "lo": best.lo, "hi": best.hi, "p": p,
               "stopped_by": ",".join(stopping) if tests else "no control"}
        for c in references:
            t = tests.get(c)
            row[f"control_estimate_{c}"] = values.get(c, math.nan)
            row[f"control_diff_{c}"] = math.nan if t is None else t.estimate
            row[f"control_lo_{c}"] = math.nan if t is None else t.lo
            row[f"control_p_{c}"] = math.nan if t is None else t.p
        rows.append(row)
        ps.append(p)
    for role in (CONFIRMATORY_ROLE, DESCRIPTIVE_ROLE):  # Holm within each role
        mine = [i for i, row in enumerate(rows) if row["role"] == role]
        for i, adjusted in zip(mine, comparisons.holm([ps[i] for i in mine])):
            row = rows[i]
            row["p_holm"] = float(adjusted)
            supported = math.isfinite(adjusted) and adjusted < 1 - stats.CONFIDENCE
            row["claimed"] = bool(role == CONFIRMATORY_ROLE and supported
                                  and not row["stopped_by"])
            row["finding"] = "yes" if supported and not row["stopped_by"] else "no"
    return rows


def _finite(value: float, fallback: float = 2.0) -> float:
    return value if math.isfinite(value) else fallback


def verdict(row: Mapping, controls: Sequence[str]) -> str:
    """One line on a confirmatory row (`confirmatory_rows`, or its comparisons.csv row):
    "beyond every control", "not beyond copy (+1.2, lower bound −3.0)" naming the controls
    that stop it, or why it cannot be tested."""
    def num(key: str) -> float:
        try:
            return float(row.get(key))
        except (TypeError, ValueError):
            return math.nan

    if not math.isfinite(num("model_value")):
        return "not testable: no prompts"
    if not controls or row.get("stopped_by") == "no control":
        return "not testable: no control scored these prompts"
    stopping = [c for c in str(row.get("stopped_by") or "").split(",") if c]
    if str(row.get("claimed")).lower() == "true":
        return "beyond every control"
    if not stopping and row.get("role") == DESCRIPTIVE_ROLE:  # a level row a copier passes
        return f"descriptive: above every control (p = {num('p_holm'):.3g})"
    if not stopping:
        return (f"beyond each control on its own, but not after Holm over the family "
                f"(p = {num('p_holm'):.3g})")
    parts = []
    for c in stopping:
        diff, lo = num(f"control_diff_{c}"), num(f"control_lo_{c}")
        name = "its own unwritten prompts" if c == UNWRITTEN else c
        parts.append(f"{name} ({100 * diff:+.1f}, lower bound {100 * lo:+.1f})"
                     if math.isfinite(diff) else f"{name} (no prompts matched)")
    return "not beyond " + ", ".join(parts)


__all__ = ["BOTH", "CHAIN", "CONFIRMATORY", "CONFIRMATORY_ROLE", "DESCRIPTIVE_ROLE",
           "Declared", "FALSE_P1", "KNOWN_P1", "P1_ONLY", "P2_ONLY", "TEMPLATE", "UNWRITTEN", "against",
           "confirmatory_rows", "declared", "depth_label", "level", "reads", "verdict"]
