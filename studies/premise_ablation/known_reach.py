"""What "implicitly known" means in a run: the rule that decided it and how far down the ranks
it reached, from ``memorized.json`` (the report's paragraph on the P1/P2 split)."""

from __future__ import annotations

import json
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
    return ("A premise is *implicitly given* when the model's memorizing probe ranks it in the "
            f"top {100 * config.memorized_fraction:.0f}% of every premise of its relation "
            "in the ontology" + (" (estimated from a sample: below)." if config.memorized_sample
                                 else "."))


def known_reach(out: Path) -> list[str]:
    """How far down "known" reaches: per premise relation (per rule and role under the paper
    protocol), the largest rank still counted as known, from OUT/memorized.json. The top-half
    rule is relative to the other premises, so a premise ranked 15th among ~36 candidates can
    be "known"; the report says so rather than leave "known" to be read as "ranked first"."""
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
