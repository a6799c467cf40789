"""A researcher's reading of a probe folder's sentences: a seeded sample sheet, read back as a
defect rate with its interval (`kgprobe review sample|read`).

Generated probes from an unfamiliar ontology carry defects no check foresaw ("[X] is a
viscous", a gold written in its own prompt, a prompt about the file's metadata). Counting them
needs a person to read a sample, so the sample must be drawn without choosing (seeded), cover
every relation and rule (stratified by kind), and its count must come back as a rate over the
prompts read, with an interval (Wilson's, over prompts: each prompt is read once and judged
fine or not). What the reviewer marks to exclude goes to an exclusion list the next `generate`
reads (`review_exclusions.py`), so a review improves the probes instead of only scoring them.
"""

from __future__ import annotations

import csv
import io
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.seeds import seed_key

from .probe_prompts import GOLD_SEPARATOR, ProbePrompt

#: The defect codes a reviewer writes in `codes` (several in one cell: "GC"; empty: fine).
CODES = {
    "G": "wording or grammar",
    "C": "case (capitals)",
    "T": "a top or vocabulary category among the golds",
    "F": "a false sentence",
    "D": "the same prompt text with different gold sets",
    "A": "a gold written in the prompt",
    "M": "metadata (about the file or the term, not the world)",
}
#: The sheet's columns; the last three are the reviewer's.
SHEET_COLUMNS = ("id", "kind", "prompt", "golds", "codes", "exclude_term", "note")
#: Between several terms in one `exclude_term` cell.
TERM_SEPARATOR = ";"
#: Characters allowed between codes ("G C", "G,C", "G+C" read as "GC").
_CODE_SEPARATORS = " ,;+/"


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many prompts each kind gives to a sample of `n`: in proportion to its size
    (largest remainders), at least one per kind while `n` allows (a small relation's defects
    are seen, at the price of a slight over-weight), never more than it has. Ties go to the
    kind first by name, so the allocation is the same on every machine."""
    kinds = sorted(k for k, s in sizes.items() if s > 0)
    total = sum(sizes[k] for k in kinds)
    if n >= total:
        return {k: sizes[k] for k in kinds}
    quota = {k: n * sizes[k] / total for k in kinds}
    alloc = {k: int(quota[k]) for k in kinds}
    if n >= len(kinds):
        alloc = {k: max(1, a) for k, a in alloc.items()}
    while sum(alloc.values()) > n:  # the minimum of one overshot: take from the most over quota
        k = max((k for k in kinds if alloc[k] > 1), key=lambda k: (alloc[k] - quota[k], k))
        alloc[k] -= 1
    while sum(alloc.values()) < n:
        k = max((k for k in kinds if alloc[k] < sizes[k]),
                key=lambda k: (quota[k] - alloc[k], -kinds.index(k)))
        alloc[k] += 1
    return {k: a for k, a in alloc.items() if a}


def sample_prompts(prompts: Sequence[ProbePrompt], n: int, seed: int) -> list[ProbePrompt]:
    """A seeded sample of `n` prompts stratified by kind (`allocate`), each kind's drawn with
    its own seed (``seed:review:KIND``, so adding a relation leaves the others' draws as
    they were), in (kind, file) order."""
    if n < 1:
        raise KgprobeError(f"--size {n}: give the number of prompts to read (1 or more)")
    by_kind: dict[str, list[ProbePrompt]] = {}
    for p in prompts:
        by_kind.setdefault(p.kind, []).append(p)
    if not by_kind:
        raise KgprobeError("the probe folder has no prompts to sample (its prompts.tsv is empty)")
    out = []
    for kind, k in sorted(allocate({k: len(v) for k, v in by_kind.items()}, n).items()):
        rows = by_kind[kind]
        picked = set(random.Random(seed_key(seed, "review", kind)).sample(range(len(rows)), k))
        out += [rows[i] for i in sorted(picked)]
    return out


def sheet_tsv(prompts: Sequence[ProbePrompt]) -> str:
    """The sheet: one row per sampled prompt, the reviewer's columns empty."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    writer.writerows([p.id, p.kind, p.prompt, GOLD_SEPARATOR.join(p.golds), "", "", ""]
                     for p in prompts)
    return buf.getvalue()


@dataclass(frozen=True)
class Verdict:
    """One filled row of a sheet: its line number (for messages), the prompt's id and its
    probe file's stem (`stratum`: a relation or rule, the sample's strata), the defect codes
    (sorted, "" for fine), the terms to exclude, the note."""

    line: int
    id: str
    stratum: str
    codes: str
    exclude: tuple[str, ...]
    note: str


def parse_codes(cell: str, where: str) -> str:
    """`cell`'s codes, upper-cased and sorted ("cg" → "CG"); any other letter is one line
    naming `where` and the codes there are."""
    letters = [c for c in cell.upper() if c not in _CODE_SEPARATORS]
    bad = sorted({c for c in letters if c not in CODES})
    if bad:
        allowed = ", ".join(f"{c} {why}" for c, why in CODES.items())
        raise KgprobeError(f"{where}: code {''.join(bad)!r} is not one of {''.join(CODES)} "
                           f"({allowed}; empty: fine)")
    return "".join(sorted(set(letters)))


def read_sheet(path: str | Path, known: dict[str, ProbePrompt]) -> list[Verdict]:
    """The verdicts of a filled sheet; `known`: the probe folder's prompts by id. A sheet
    whose header lacks a column, a row of another folder, a row twice or a bad code is one
    line naming the row and what to fix."""
    path = Path(path)
    if not path.is_file():
        raise KgprobeError(f"{path}: no such sheet; write one with `kgprobe review sample "
                           "PROBES --out SHEET`")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's export may start with a BOM
    except UnicodeDecodeError:
        raise KgprobeError(f"{path}: not UTF-8 text; save the sheet as UTF-8 tab-separated "
                           "values") from None
    rows = list(csv.reader(io.StringIO(text), delimiter="\t"))
    header = [h.strip().lower() for h in rows[0]] if rows else []
    missing = [c for c in ("id", "codes", "exclude_term") if c not in header]
    if missing:
        raise KgprobeError(f"{path}: the sheet has no {', '.join(missing)} column (its header "
                           f"must name {' '.join(SHEET_COLUMNS)}, tab-separated)")
    col = {name: header.index(name) for name in header}
    out, seen = [], {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line a spreadsheet left

        def cell(name: str, row: list = row) -> str:
            i = col.get(name)
            return row[i].strip() if i is not None and i < len(row) else ""

        pid = cell("id")
        where = f"{path.name} line {line} (id {pid or '?'})"
        if pid not in known:
            raise KgprobeError(f"{where}: no prompt of the probe folder has this id; review "
                               "a sheet sampled from this --probes folder")
        if pid in seen:
            raise KgprobeError(f"{where}: the prompt is on line {seen[pid]} already; keep one "
                               "verdict per prompt")
        seen[pid] = line
        terms = tuple(t.strip() for t in cell("exclude_term").split(TERM_SEPARATOR) if t.strip())
        out.append(Verdict(line, pid, known[pid].kind, parse_codes(cell("codes"), where),
                           terms, cell("note")))
    if not out:
        raise KgprobeError(f"{path}: the sheet has no rows; sample one with `kgprobe review "
                           "sample`")
    return out


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of k in n (scipy.stats.binomtest): it stays inside
    [0, 1] and keeps its coverage at 0 or n defects, where a normal interval collapses."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"defects": k, "n": n, "rate": k / n, "ci95": [lo, hi]}


def defect_rates(verdicts: Sequence[Verdict]) -> dict:
    """The share of read prompts with any defect, and with each code, each with its count and
    95 % Wilson interval over prompts; then the same per kind (relation or rule)."""
    n = len(verdicts)
    out = {"any": _rate(sum(bool(v.codes) for v in verdicts), n)}
    out.update({c: _rate(sum(c in v.codes for v in verdicts), n) for c in CODES})
    kinds = Counter(v.stratum for v in verdicts)
    out["by_kind"] = {kind: _rate(sum(bool(v.codes) for v in verdicts if v.stratum == kind), m)
                      for kind, m in sorted(kinds.items())}
    return out


def rate_line(name: str, entry: dict) -> str:
    """``any  7/60 = 11.7 % [5.8, 22.2]``."""
    lo, hi = entry["ci95"]
    return (f"{name:12s} {entry['defects']:>4}/{entry['n']:<4} = {100 * entry['rate']:5.1f} % "
            f"[{100 * lo:.1f}, {100 * hi:.1f}]")
