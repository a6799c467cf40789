"""What wording the bundled ontology's labels changes in the default protocol's prompts.

    python bench/bundled_wording.py [--sample N] [--seed S] [BEFORE.jsonl AFTER.jsonl]

The bundled OntoProbe ontology is read as its files write it (`bundled_source(word=False)`:
the paper protocol, the paper's memorizing sets) and as prompts write labels
(`word=True`: `ontology.wording.word_labels`, what the premise-ablation study's default
protocol reads). Prints ONE JSON line: how many class, property and instance labels differ,
how many of the reasoning items of every rule (the whole population, paired by the triples
they are made of, so the seeded ``--limit`` draw, which follows the items' text order, does
not blur the count) have a changed premise (a memorizing prompt) or hypothesis, and, given
two ``prompts.jsonl`` a ``--dry-run`` wrote, how many distinct prompt texts of each kind
only one of them holds. ``--sample N`` also prints N changed and N/2 unchanged items (before
and after) for reading by hand.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter

from kgprobe.ontology.loaders import bundled_source
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.items import item_closure, reasoning_items
from kgprobe.reasoning.memorizing import candidate_sets


def label_changes(plain, worded) -> dict:
    """Per kind of term, how many labels wording changed."""
    out = {}
    for kind in ("classes", "properties", "instances"):
        a, b = getattr(plain, kind), getattr(worded, kind)
        out[kind] = {"n": len(a), "changed": sum(a[i].label != b[i].label for i in a if i in b)}
    return out


def _key(item) -> tuple:
    return (item.rule, tuple(tuple(p.triple) for p in item.premises),
            tuple(item.conclusion["triple"]))


def _texts(item) -> tuple:
    return tuple(p.text for p in item.premises) + tuple(item.hypotheses)


def population(source) -> dict:
    """Every rule's items (pseudoword slots, as the study asks them), keyed by their triples."""
    closure = item_closure(source.ontology, source.triples)
    items = reasoning_items(source.ontology, closure, load_templates())
    return {_key(i): i for rule_items in items.values() for i in rule_items}


def item_changes(before: dict, after: dict) -> tuple[dict, list, list]:
    """Counts of paired items whose premises or hypotheses read differently, and the pairs."""
    shared = sorted(set(before) & set(after), key=str)
    changed = [(before[k], after[k]) for k in shared if _texts(before[k]) != _texts(after[k])]
    same = [(before[k], after[k]) for k in shared if _texts(before[k]) == _texts(after[k])]
    premises = Counter()
    for b, a in changed:
        for pb, pa in zip(b.premises, a.premises):
            premises[pb.relation, pb.text != pa.text] += 1
    return ({"items": len(before), "items worded": len(after), "paired": len(shared),
             "changed": len(changed),
             "premise statements changed": {r: n for (r, c), n in sorted(premises.items()) if c},
             "hypotheses changed": sum(b.hypotheses != a.hypotheses for b, a in changed),
             "golds changed": sum(before[k].answers != after[k].answers for k in shared),
             "per rule": dict(sorted(Counter(b.rule for b, _ in changed).items()))},
            changed, same)


def prompt_file_changes(before: str, after: str) -> dict:
    """Distinct prompt texts (by kind: premise probe or reasoning prompt) in one file only."""
    def texts(path):
        out: dict[str, set] = {}
        for line in open(path, encoding="utf-8"):
            row = json.loads(line)
            out.setdefault(row["extra"].get("kind", ""), set()).add(row["text"])
        return out
    a, b = texts(before), texts(after)
    return {kind: {"before": len(a.get(kind, ())), "after": len(b.get(kind, ())),
                   "only before": len(a.get(kind, set()) - b.get(kind, set()))}
            for kind in sorted(set(a) | set(b))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="two prompts.jsonl: before and after")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    plain, worded = bundled_source(word=False), bundled_source(word=True)
    counts, changed, same = item_changes(population(plain), population(worded))
    pools = {k: (len(v), len(candidate_sets(worded.ontology)[k]))
             for k, v in candidate_sets(plain.ontology).items()}
    out = {"labels": label_changes(plain.ontology, worded.ontology),
           "candidate pools (before, after)": pools, "reasoning items": counts}
    if len(args.files) == 2:
        out["dry-run prompts"] = prompt_file_changes(*args.files)
    print(json.dumps(out))
    rng = random.Random(args.seed)
    for title, pairs, n in (("changed", changed, args.sample),
                            ("unchanged", same, args.sample // 2)):
        for b, a in rng.sample(pairs, min(n, len(pairs))):
            print(f"--- {title} {b.rule}")
            for tb, ta in zip(_texts(b) + (b.answers,), _texts(a) + (a.answers,)):
                print(f"  B: {tb}\n  A: {ta}" if tb != ta else f"  =: {tb}")


if __name__ == "__main__":
    main()
