"""How many `--protocol paper` prompts equal the official code's, per task and rule.

    python bench/paper_agreement.py OFFICIAL.jsonl D1/prompts.jsonl D2/prompts.jsonl

OFFICIAL.jsonl is what bench/paper_official_prompts.py writes. Memorizing prompts are
matched by (task, template, record), reasoning prompts (both premises written) by (rule, item
order); texts compare with whitespace runs collapsed, golds as ordered lists. Prints a
Markdown table (the one in docs/fidelity.md).
"""

from __future__ import annotations

import json
import sys
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


def main(official: str, *paths: str) -> None:
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
    print("| task / rule | template | official prompts | same text | same golds |")
    print("|---|---|---|---|---|")
    for group in total:
        n = total[group]
        print(f"| {group[0]} | {group[1]} | {n} | {text[group]} ({100 * text[group] / n:.1f} %) "
              f"| {gold[group]} ({100 * gold[group] / n:.1f} %) |")


if __name__ == "__main__":
    main(*sys.argv[1:])
