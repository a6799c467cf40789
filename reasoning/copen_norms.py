"""CPJ items generated from semantic feature norms in the McRae et al. (2005) format.

The norms (``CONCS_FEATS_concstats_brm.txt``: one row per concept and feature with its
production frequency and ``BR_Label`` feature class) give what the paper took from
GenericsKB: properties of concepts.

* **Positives**: each non-taxonomic feature of a concept, verbalized as a generic statement
  ("Dogs have fur ."). Example features (``eg_-_…``) are not properties and are skipped.
* **Negatives**: the same statement with the concept swapped for another concept that lacks
  the feature and shares no top-level category with the original (so that "Cats have fur"
  is never produced as a false statement just because cat's norms omit fur). Seeded.
* **Chains** come from the taxonomic features: a category S (``a_mammal``) sits below T
  (``an_animal``) when most concepts listing S also list T and T is bigger; a concept's chain
  is the longest path through the categories it lists (dog → mammal → animal). For the
  chain-level evaluation a property of the concept is stated for every concept of its chain;
  a category's label is read from the norms: true when at least `TRUE_SHARE` of its member
  concepts list the feature, false when fewer than `FALSE_SHARE` do. A chain whose labels
  are undecided in between, or not monotone (true above a false), is left out.

Every item records the norm rows it was built from.

The file is read by the shared loader (`kgprobe.ontology.norms.load_mcrae`); this module
indexes its rows the way CPJ generation walks them (`NormIndex`).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from kgprobe.ontology.labels import inflect_engine
from kgprobe.ontology.norms import PARTICIPLES, Feature, Norms, concept_word
from kgprobe.reasoning.copen_items import CPJItem
from kgprobe.reasoning.copen_split import (
    GenerationReport,
    split_top_levels,
    split_train_dev,
)

TRUE_SHARE, FALSE_SHARE = 0.5, 0.2
MIN_MEMBERS = 3  # a category needs this many member concepts to anchor a chain
#: Nouns that take a singular verb in a generic statement ("Clothing is worn by people").
MASS_NOUNS = frozenset("clothing furniture jewelry jewellery seafood food rice corn asparagus "
                       "garlic celery spinach broccoli cauliflower lettuce parsley cheese bread "
                       "equipment".split())
#: First words of features that take "is/are": the norms' participles and two nouns
#: ("is part of", "is seen in"; "is a symbol of" is handled on its own).
_IS_FIRST = PARTICIPLES | {"part", "seen"}


def row_json(row: Feature) -> dict:
    """A norm row as an item's provenance records it (the McRae column names)."""
    return {"concept": row.concept, "feature": row.feature, "BR_Label": row.category,
            "Prod_Freq": row.pf}


@dataclass
class NormIndex:
    """The loaded norms as CPJ generation reads them: property features and category
    memberships per concept, in file order (the seeded generation walks that order)."""

    features: dict[str, dict[str, Feature]] = field(default_factory=dict)  # concept → feature → row
    categories: dict[str, dict[str, Feature]] = field(default_factory=dict)  # concept → category → row

    @classmethod
    def of(cls, norms: Norms) -> "NormIndex":
        index = cls()
        for f in sorted(norms.features, key=lambda f: f.order):
            if f.category == "taxonomic":
                cat = category_name(f.feature)
                if cat:
                    index.categories.setdefault(f.concept, {})[cat] = f
                continue
            if f.feature.startswith("eg_"):
                continue
            index.features.setdefault(f.concept, {})[f.feature] = f
        return index


def category_name(feature: str) -> str | None:
    """``a_musical_instrument`` → ``musical instrument``; examples and attributes → None."""
    if feature.startswith(("eg_", "is_", "has_")):
        return None
    name = re.sub(r"^(an?)_", "", feature)
    return name.replace("_", " ").strip() or None


@lru_cache(maxsize=None)
def plural(noun: str) -> tuple[str, bool]:
    """(subject form, takes a plural verb) of a concept in a generic statement."""
    eng = inflect_engine()
    last = noun.split()[-1]
    if last in MASS_NOUNS:
        return noun, False
    singular = eng.singular_noun(last)
    if singular == last:  # sheep, scissors
        return noun, True
    if singular and last.endswith("s") and not last.endswith("us"):  # beans, pants
        return noun, True
    return eng.plural_noun(noun), True


@lru_cache(maxsize=None)
def predicate(feature: str, plural_verb: bool) -> str:
    """The verb phrase of a feature: ``has_fur`` → ``have fur`` (plural) / ``has fur``."""
    text = re.sub(r"^(in)?beh_-_", "", feature)
    words = [w for w in text.replace("/", "_or_").replace(">", "more_than").split("_") if w and w != "-"]
    if not words:
        return feature
    first, rest = words[0], words[1:]
    if first == "different":
        return " ".join(["come" if plural_verb else "comes", "in", *words])
    if first in ("like", "a", "an"):
        return " ".join(["are" if plural_verb else "is", *words])
    if first == "symbol":
        return " ".join(["are" if plural_verb else "is", "a", *words])
    if first in _IS_FIRST or (first.endswith("ed") and first not in ("needed", "used")) or first == "used":
        return " ".join(["are" if plural_verb else "is", *words])
    if not plural_verb:
        return " ".join(words)
    irregular = {"is": "are", "has": "have", "was": "were", "does": "do"}
    head = irregular.get(first) or (inflect_engine().plural_verb(first) if first.endswith("s") else first)
    return " ".join([head, *rest])


def statement(concept: str, feature: str) -> tuple[str, tuple[int, int]]:
    """("Dogs have fur .", word span of the concept)."""
    subject, pl = plural(concept)
    text = f"{subject[:1].upper()}{subject[1:]} {predicate(feature, pl)} ."
    return text, (0, len(subject.split()))


def category_parents(norms: NormIndex) -> tuple[dict[str, set[str]], dict[str, str]]:
    """(members per category, the parent of each category with enough members)."""
    members: dict[str, set[str]] = defaultdict(set)
    for concept, cats in norms.categories.items():
        for cat in cats:
            members[cat].add(concept)
    parent: dict[str, str] = {}
    for cat, mem in members.items():
        if len(mem) < MIN_MEMBERS:
            continue
        best: tuple[float, int, str] | None = None
        for other, omem in members.items():
            if other == cat or len(omem) <= len(mem):
                continue
            share = len(mem & omem) / len(mem)
            if share >= 0.5 and (best is None or (share, len(omem), other) > best):
                best = (share, len(omem), other)
        if best:
            parent[cat] = best[2]
    return members, parent


def concept_chain(concept: str, norms: NormIndex, members: dict[str, set[str]],
                  parent: dict[str, str]) -> list[str]:
    """The longest path through the categories `concept` lists: [concept, S1, S2, …]; among
    equally long ones the one whose first category has most members (dog → mammal → animal
    rather than dog → pet → animal)."""
    own = {c for c in norms.categories.get(concept, {}) if len(members[c]) >= MIN_MEMBERS}
    best: list[str] = []
    best_key: tuple = ()
    for start in sorted(own):
        path = [start]
        while parent.get(path[-1]) in own and parent[path[-1]] not in path:
            path.append(parent[path[-1]])
        key = (len(path), len(members[path[0]]), [-ord(ch) for ch in path[0]])
        if not best or key > best_key:
            best, best_key = path, key
    return [concept, *best]


def _chain_labels(concept: str, feature: str, chain: list[str], norms: NormIndex,
                  members: dict[str, set[str]]) -> list[tuple[str, int, dict]] | None:
    """(category, label, provenance) for each category of `concept`'s chain, read from the
    share of its member concepts that list `feature`; None when a label is undecided or the
    labels are not monotone (true above a false)."""
    rows: list[tuple[str, int, dict]] = []
    labels = [1]
    for cat in chain[1:]:
        mem = sorted(members[cat])
        having = [m for m in mem if feature in norms.features.get(m, {})]
        share = len(having) / len(mem)
        lab = 1 if share >= TRUE_SHARE else 0 if share < FALSE_SHARE else None
        if lab is None or (lab == 1 and labels[-1] == 0):
            return None
        labels.append(lab)
        rows.append((cat, lab, {"category": cat, "members": len(mem),
                                "members_with_feature": having[:10], "share": round(share, 3),
                                "membership": [row_json(norms.categories[concept][cat])]}))
    return rows


def generate_cpj(loaded: Norms, *, seed: int = 0) -> tuple[list[CPJItem], GenerationReport]:
    """CPJ items from the norms (see the module docstring)."""
    norms = NormIndex.of(loaded)
    members, parent = category_parents(norms)
    concepts = sorted(norms.features)
    chains = {c: concept_chain(c, norms, members, parent) for c in concepts}
    top = _top_levels(chains, parent)
    weights: dict[str, int] = defaultdict(int)
    for c in concepts:
        weights[top[c]] += 1
    sides = split_top_levels(weights, seed=seed)
    by_side: dict[str, list[str]] = defaultdict(list)
    for c in concepts:
        by_side[sides[top[c]]].append(c)
    run = _CpjRun(norms, members)
    for c in concepts:
        side = sides[top[c]]
        rng = random.Random(f"{seed}|cpj|{c}")
        # negatives: concepts of another top-level category on the same side of the split
        peers = [o for o in by_side[side] if o != c and top[o] != top[c]]
        for feature, row in sorted(norms.features[c].items()):
            run.feature_items(c, feature, row, chains[c], side, peers, rng)
    items, report = run.items, run.report
    split_train_dev(items, seed=seed)
    for i, it in enumerate(items):
        it.id = f"cpj-{it.split}-{i:05d}"
    report.add("items", len(items))
    report.add("positives", sum(it.label == 1 for it in items))
    report.notes.append("top-level categories: " + ", ".join(
        f"{k}={v}" for k, v in sorted(sides.items(), key=lambda x: (x[1], x[0]))))
    report.notes.append("category parents: " + ", ".join(f"{k} < {v}" for k, v in sorted(parent.items())))
    return items, report


def _top_levels(chains: dict[str, list[str]], parent: dict[str, str]) -> dict[str, str]:
    """Each concept's split unit: the root of the category hierarchy above its chain, even
    where the concept does not list it (a bird that lists only a_bird still falls under
    animal)."""
    def root(cat: str) -> str:
        seen = {cat}
        while parent.get(cat) and parent[cat] not in seen:
            cat = parent[cat]
            seen.add(cat)
        return cat

    return {c: (root(chain[-1]) if len(chain) > 1 else "(no category)")
            for c, chain in chains.items()}


@dataclass
class _CpjRun:
    """The items and report of one `generate_cpj` run, filled one listed feature at a time."""

    norms: NormIndex
    members: dict[str, set[str]]
    items: list[CPJItem] = field(default_factory=list)
    report: GenerationReport = field(default_factory=GenerationReport)

    def add(self, text_concept: str, feature: str, label: int, group: str, chain_ids: list[str],
            prov: dict, split: str) -> None:
        text, span = statement(text_concept, feature)
        self.items.append(CPJItem("", split, text, span, label, chain_ids, text_concept, prov, group))

    def feature_items(self, c: str, feature: str, row: Feature, chain: list[str], side: str,
                      peers: list[str], rng: random.Random) -> None:
        """The statement that `c` has `feature`, the same of each category in its chain
        (labelled by how many members list it), and a negative: a peer that lacks it."""
        norms, report = self.norms, self.report
        chain_rows = _chain_labels(c, feature, chain, norms, self.members) if len(chain) > 1 else None
        chain_id = ">".join(chain) + "|" + feature if chain_rows is not None else ""
        if chain_rows is None:
            if len(chain) > 1:
                report.add("chains left out: a category's label is undecided or not monotone")
            chain_rows = []
        group = f"{c}|{feature}"  # the statement, its chain and its negative go together
        self.add(concept_word(c), feature, 1, group, [chain_id] if chain_id else [],
                 {"rule": "feature listed in the norms", "norm_rows": [row_json(row)]}, side)
        for cat, lab, info in chain_rows:
            rule = (f"{int(TRUE_SHARE * 100)}%+ of the category's concepts list the feature" if lab
                    else f"under {int(FALSE_SHARE * 100)}% of the category's concepts list it")
            self.add(cat, feature, lab, group, [chain_id], {"rule": rule, "norm_rows": [row_json(row)],
                                                           **info}, side)
        if chain_id:
            report.add("chains")
        others = [o for o in peers if feature not in norms.features.get(o, {})]
        if not others:
            report.add("negatives skipped: no concept of another category lacks the feature")
            return
        other = rng.choice(others)
        self.add(concept_word(other), feature, 0, group, [],
                 {"rule": "concept swapped for one that lacks the feature",
                  "norm_rows": [row_json(row)], "swapped_from": c, "swapped_to": other,
                  "lacking_concept_features": len(norms.features.get(other, {}))}, side)
