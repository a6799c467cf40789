"""What "implicitly known" means in a run: the rule that decided it, how many premises of each
relation it found known and (under the paper protocol's relative split) how far down the
ranks it reached, from ``memorized.json`` (the report's paragraph on the P1/P2 split)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .settings import ReportSettings


def known_rule(config: ReportSettings) -> str:
    """How the run decided that a premise is known (the paper protocol's rules: paper.py)."""
    if config.protocol == "paper":
        p1 = ("ranks its gold first" if config.memorized == "rank1"
              else "ranks its gold in the top half of the relation's test set")
        return ("Protocol **paper** (the OntoProbe paper as its official code implements it; "
                f"docs/fidelity.md): P1 is *implicitly given* when its memorizing probe {p1}, P2 "
                "when its probe ranks in the top half.")
    return ("A premise is *implicitly given* when the model's memorizing probe ranks its gold "
            "**first** (a gold tied with another candidate at the top is not first) and the "
            "frequency control, asked the same probe with the same candidates, ranks it lower: "
            "a premise the answer distribution alone ranks first is not counted as known, "
            "whatever the model ranks. Each premise is decided on its own probe, so the count "
            "of known premises is absolute, not a share fixed in advance" +
            (" (a sample of them classified: below)." if config.memorized_sample else "."))


@dataclass(frozen=True)
class KnownCount:
    """How many premises of one kind (role, relation) are known, and why the others are not:
    `first` the model ranks first, `prior_first` of those the frequency control ranks first
    too (explained by the answer distribution, so not known)."""

    role: str
    relation: str
    n: int
    known: int
    first: int
    prior_first: int


def known_counts(out: Path) -> list[KnownCount]:
    """Per premise kind, the known counts of OUT/memorized.json under the absolute rule (its
    records carry the frequency control's rank); empty for another file or none. The data the
    report's lines on the split are written from (`known_reach`)."""
    try:
        cached = json.loads((Path(out) / "memorized.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    records = cached.get("premises") if isinstance(cached, dict) else None
    if not isinstance(records, list) or not records or any("null_rank" not in m for m in records):
        return []
    kinds: dict[tuple[str, str], list[dict]] = {}
    for m in records:
        kinds.setdefault((m["role"], m["relation"]), []).append(m)
    return [KnownCount(role, relation, len(ms), sum(bool(m["known"]) for m in ms),
                       sum(m["rank"] == 1 for m in ms),
                       sum(m["rank"] == 1 and m["null_rank"] == 1 for m in ms))
            for (role, relation), ms in sorted(kinds.items())]


def _count_lines(counts: list[KnownCount]) -> list[str]:
    lines = ["How many premises are *known* (classified by the rule above):", ""]
    for c in counts:
        lines.append(f"- {c.role} {c.relation}: {c.known} of {c.n} known; the model ranks the gold "
                     f"first on {c.first}, {c.prior_first} of them ranked first by the frequency "
                     "control too (not counted)")
    return lines + [""]


def known_reach(out: Path) -> list[str]:
    """The report's lines on the split, from OUT/memorized.json: under the absolute rule how
    many premises of each relation are known (`known_counts`); under a relative split (the
    paper protocol's, or a file written before the absolute rule) how far down "known" reaches,
    the largest rank still counted as known per relation (per rule and role under the paper
    protocol): a relative rule can call a premise ranked 15th among ~36 candidates "known", and
    the report says so rather than leave "known" to be read as "ranked first"."""
    counts = known_counts(out)
    if counts:
        return _count_lines(counts)
    try:
        cached = json.loads((out / "memorized.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    groups: dict[str, list[tuple[float, bool]]] = {}
    if cached.get("protocol") == "paper":
        for rule, entry in sorted(cached.get("rules", {}).items()):
            for role, splits in (("P1", [entry["P1"]]), ("P2", entry["P2"][:1])):
                for split in splits:
                    known = set(split["memorized"])
                    groups[f"{rule} {role}"] = [(rr, rec in known) for rec, rr in
                                                zip(split["records"], split["rr"])]
    else:
        for m in cached.get("premises", []):
            groups.setdefault(f"{m['role']} {m['relation']}", []).append((m["rr"], m["known"]))
    lines = []
    for name, outcomes in sorted(groups.items()):
        ranks = [round(1 / rr) for rr, known in outcomes if known and rr > 0]
        reach = f"down to rank {max(ranks)}" if ranks else "no premise"
        lines.append(f"- {name}: known {reach} ({len(ranks)} of {len(outcomes)} known)")
    return (["How far down *known* reaches (the largest rank of a gold counted as known):", ""]
            + lines + [""]) if lines else []
