"""How many `--protocol paper` prompts equal the official code's, per task and rule.

    python bench/paper_agreement.py OFFICIAL.jsonl D1/prompts.jsonl D2/prompts.jsonl [--json]

OFFICIAL.jsonl is what bench/paper_official_prompts.py writes. Memorizing prompts are
matched by (task, template, record), reasoning prompts (both premises written) by (rule, item
order); texts compare with whitespace runs collapsed, golds as ordered lists. Prints a
Markdown table (the one in docs/fidelity.md), or with ``--json`` the same counts as one JSON line.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter


def _rows(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def ours(paths) -> dict:
    out, order = {}, Counter()
    for path in paths:
        for r in _rows(path):
            extra = r.get("extra", {})
            if r["study"] == "memorization":
                out[(r["task"], int(r["template"]), extra["record"] - 20)] = r
            elif extra.get("kind") == "reasoning" and r["p1"] and r["p2"]:
                out[(r["rule"], 0, order[r["rule"]])] = r
                order[r["rule"]] += 1
    return out


def agreement(official: str, paths) -> tuple[Counter, Counter, Counter]:
    """Per (task or rule, template): the official prompts, how many of ours have the same
    text, how many the same golds."""
    mine = ours(paths)
    total, text, gold = Counter(), Counter(), Counter()
    for r in _rows(official):
        group = (r["group"], r["template"])
        total[group] += 1
        m = mine.get((r["group"], r["template"], r["index"]))
        if m is None:
            continue
        text[group] += " ".join(m["text"].split()) == " ".join(r["text"].split())
        gold[group] += list(m["golds"]) == list(r["golds"])
    return total, text, gold


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("official", help="what bench/paper_official_prompts.py wrote")
    ap.add_argument("prompts", nargs="+", help="prompts.jsonl of `--protocol paper` runs")
    ap.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = ap.parse_args(argv)
    total, text, gold = agreement(args.official, args.prompts)
    if args.json:
        print(json.dumps({"bench": "paper_agreement", "groups": [
            {"group": g, "template": t, "official": total[(g, t)], "same_text": text[(g, t)],
             "same_golds": gold[(g, t)]} for g, t in total]}))
        return
    print("| task / rule | template | official prompts | same text | same golds |")
    print("|---|---|---|---|---|")
    for group in total:
        n = total[group]
        print(f"| {group[0]} | {group[1]} | {n} | {text[group]} ({100 * text[group] / n:.1f} %) "
              f"| {gold[group]} ({100 * gold[group] / n:.1f} %) |")


if __name__ == "__main__":
    main()
