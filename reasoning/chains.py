"""Chained reasoning items: conclusions that need k one-step derivations (depth k).

A depth-1 item is one RDFS derivation (`reasoning.items`): a schema premise P1 and a premise
P2 about the pseudoword entail the hypothesis. A depth-k item is a chain of k one-step
derivations of the engine (`Closure.derivations`, its provenance): the first step is a
derivation of the item's rule, each later step one of the rule that carries its conclusion
further (`FOLLOW`: type inheritance after rdfs2, rdfs3 and rdfs9, subclass and subproperty
transitivity, property inheritance), whose P2 is the previous step's conclusion. The item
writes k + 1 premises: the k schema premises, one consumed by each step, in chain order,
then the one premise about the pseudoword ([X] is a dog. Dog ⊑ mammal, mammal ⊑ animal ⊢
[X] is an animal: depth 2). Every schema premise and the pseudoword premise are asserted in
the source, and the conclusion *needs* k steps: no shorter chain of asserted premises from
the same pseudoword premise reaches it, and every intermediate conclusion is reached first at
its own step (the chain is a shortest one), so the depth is not inflated by a shortcut the
ontology states.

Distractors (`DistractorPool`) are true statements of the ontology, written with the same
premise templates, that share no term with the item nor with anything above its terms (their
superclasses and superproperties), and do not name its answer: irrelevant to its conclusion.
Given the prompt's candidates, those that name one of them (other than a true answer) are
drawn first (``--distractor-kind naming``): true premises about other candidates, so the gold
is not the only candidate the premises name.
`arrange` writes the needed premises in chain order with the distractors at seeded places,
or all of them in a seeded shuffled order.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import replace
from typing import Iterable, Sequence

from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    Ontology,
    Triple,
)
from kgprobe.ontology.verbalize import TemplateSet, pattern_middle
from kgprobe.reasoning.items import (
    SLOT_X,
    count_by_text,
    sorted_by_text,
    SLOT_Y,
    PremiseText,
    ReasoningItem,
    Verbalizer,
    derivation_item,
    restates_premise,
    unworded,
)
from kgprobe.reasoning.rdfs import Closure, Derivation

#: rule of a chain's first step → the rule of every later step
FOLLOW = {"rdfs2": "rdfs9", "rdfs3": "rdfs9", "rdfs9": "rdfs9", "rdfs11": "rdfs11",
          "rdfs5": "rdfs5", "rdfs7": "rdfs7"}
#: the premise relation of a later step's schema premise
FOLLOW_RELATION = {"rdfs9": "subClassOf", "rdfs11": "subClassOf", "rdfs5": "subPropertyOf",
                   "rdfs7": "subPropertyOf"}
ORDERS = ("ordered", "shuffled")
#: schema predicates a distractor is drawn from, by the premise relation that writes them
SCHEMA = {"subClassOf": RDFS_SUBCLASSOF, "subPropertyOf": RDFS_SUBPROPERTYOF,
          "domain": RDFS_DOMAIN, "range": RDFS_RANGE}
VOCABULARY = frozenset({RDF_TYPE, *SCHEMA.values()})


def _fact_shape(rule: str, fact: Triple) -> tuple:
    """The pseudoword premise with its entities as slots: facts that read the same."""
    s, p, o = fact
    if rule in ("rdfs2", "rdfs3", "rdfs7"):
        swap = {s: SLOT_X, o: SLOT_Y} if s != o else {s: SLOT_X}
    else:
        swap = {s: SLOT_X}
    return tuple(swap.get(t, t) for t in fact)


def _steps(closure: Closure, rule: str, asserted, subjects: set[str] | None = None,
           ) -> dict[Triple, list[Derivation]]:
    """The engine's one-step derivations of `rule` whose schema premise is asserted, by their
    P2 (for the first step also asserted; `subjects`: only P2s about these entities)."""
    out: dict[Triple, list[Derivation]] = {}
    for d in closure.derivations(rule):
        p1, p2 = d.premises
        if p1 not in asserted or (subjects is not None and p2[0] not in subjects):
            continue
        if subjects is None and p2 not in asserted:
            continue
        out.setdefault(p2, []).append(d)
    return out


def derivation_chains(closure: Closure, rule: str, depth: int) -> list[tuple[Derivation, ...]]:
    """Every shortest chain of `depth` derivations (see the module) from one asserted premise
    about an entity per reading (facts that read the same with pseudowords: the first)."""
    asserted = closure.asserted
    first = _steps(closure, rule, asserted)
    facts: dict[tuple, Triple] = {}
    for fact in sorted(first):
        facts.setdefault(_fact_shape(rule, fact), fact)
    subjects = {t for fact in facts.values() for t in (fact[0], fact[2])}
    later = _steps(closure, FOLLOW[rule], asserted, subjects) if depth > 1 else {}
    chains: list[tuple[Derivation, ...]] = []
    for fact in facts.values():
        levels = _levels(fact, first, later, depth)
        if len(levels) > depth:
            chains += _paths(fact, first, later, levels)
    return chains


def _levels(fact: Triple, first, later, depth: int) -> list[set[Triple]]:
    """Breadth-first: the conclusions first reached at each step from `fact`."""
    levels = [{fact}]
    seen = {fact}
    frontier = {d.conclusion for d in first.get(fact, ())} - seen
    while frontier and len(levels) <= depth:
        levels.append(frontier)
        seen |= frontier
        frontier = {d.conclusion for c in frontier for d in later.get(c, ())} - seen
    return levels


def _paths(fact: Triple, first, later, levels) -> list[tuple[Derivation, ...]]:
    """The chains through the levels, each step into the next level, in a fixed order."""
    paths = [(d,) for d in first.get(fact, ()) if d.conclusion in levels[1]]
    for level in levels[2:]:
        paths = [(*p, d) for p in paths for d in later.get(p[-1].conclusion, ())
                 if d.conclusion in level]
    return sorted(paths, key=lambda p: [d.premises[0] for d in p])


def chain_items(onto: Ontology, closure: Closure, templates: TemplateSet, rule: str,
                depth: int) -> list[ReasoningItem]:
    """Depth-`depth` items of `rule`'s family (ids ``RULE-dK-NNNNN``), sorted by their text;
    chains that read the same are one item (`count`). Premises: the k schema premises in
    chain order, then the pseudoword premise (P2)."""
    verb = Verbalizer(onto, templates)
    by_text: dict[tuple, ReasoningItem] = {}
    for chain in derivation_chains(closure, rule, depth):
        item = _chain_item(onto, verb, chain, closure.asserted)
        if item is not None:
            count_by_text(by_text, item)
    items = sorted_by_text(by_text)
    for n, item in enumerate(items):
        item.id = f"{rule}-d{depth}-{n:05d}"
    return items


def _chain_item(onto: Ontology, verb: Verbalizer, chain: Sequence[Derivation],
                asserted) -> ReasoningItem | None:
    """The first step written as its depth-1 item, the later steps' schema premises added
    and the answer moved to the chain's end; None when a term has no words."""
    item, _ = derivation_item(onto, verb, chain[0], asserted)
    if item is None:
        return None
    follow = FOLLOW[chain[0].rule]
    relation = FOLLOW_RELATION[follow]
    added, ends = [], [item.answers[0]]
    for d in chain[1:]:
        low, _, high = d.premises[0]
        if any(onto.excluded.get(t) or t.startswith(('"', "_:")) for t in (low, high)):
            return None
        added.append(PremiseText("P1", d.premises[0], verb.statement(relation, verb.label(low),
                                 verb.label(high)), relation, verb.label(low), verb.label(high),
                                 True))
        ends.append(pattern_middle(verb.pattern(high)) if follow == "rdfs7" else verb.label(high))
    if len(set(ends)) < len(ends):
        return None  # an earlier step's answer reads as the gold: fewer steps than it seems
    p1, p2 = item.premises
    chained = replace(item, premises=[p1, *added, p2], answers=[ends[-1]],
                      conclusion={"triple": list(chain[-1].conclusion),
                                  "text": item.conclusion["text"]})
    return None if restates_premise(chained) or unworded(chained) else chained


class DistractorPool:
    """True statements of an ontology to write beside an item's premises, none of them
    relevant to it (see the module)."""

    def __init__(self, onto: Ontology, closure: Closure, templates: TemplateSet):
        self.verb = Verbalizer(onto, templates)
        self.above: dict[str, set[str]] = {}
        for s, p, o in [*closure.asserted, *closure.inferred]:
            if p in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF):
                self.above.setdefault(s, set()).add(o)
        self.statements: dict[str, list[PremiseText]] = {}
        self._picked: dict[tuple, list[PremiseText]] = {}
        for relation, predicate in SCHEMA.items():
            found = [t for t in closure.asserted if t[1] == predicate]
            self.statements[relation] = [p for t in sorted(found)
                                         if (p := self._written(onto, relation, t)) is not None]

    def _written(self, onto: Ontology, relation: str, triple: Triple) -> PremiseText | None:
        s, _, o = triple
        if s == o or any(onto.excluded.get(t) or t.startswith(('"', "_:")) for t in (s, o)):
            return None
        verb = self.verb
        meta_iri = s if relation in ("domain", "range") else ""
        text = verb.statement(relation, verb.label(s), verb.label(o), meta_iri)
        if "://" in text or "_" in text:
            return None
        return PremiseText("D", triple, text, relation, verb.label(s), verb.label(o), True)

    def near(self, item: ReasoningItem) -> set[str]:
        """The item's terms and everything above them: what a distractor may not name."""
        terms = {t for p in item.premises for t in p.triple if t not in VOCABULARY}
        terms |= {t for t in item.conclusion["triple"] if t not in VOCABULARY}
        terms |= {v for v in item.slots.values() if v}
        return terms | {a for t in terms for a in self.above.get(t, ())}

    def pick(self, item: ReasoningItem, n: int, seed: int,
             names: Sequence[str] = ()) -> list[PremiseText]:
        """`n` distractors for `item` (seeded; the first `n` of one seeded order, so a larger
        `n` keeps the smaller one's), of the relations its schema premises use.

        `names`: the prompt's candidates that are no true answer of the item. Distractors
        that name one of them (`Names`) come first in the order, so a prompt names other
        candidates than its gold and copying a named candidate no longer finds it; the
        others follow only where too few statements name one.

        The pick is kept per (item, n, seed, names): the model's cell and each control's ask
        the same prompts, and finding naming statements in a pool of thousands is the costly
        part of writing a chained prompt."""
        if n <= 0:
            return []
        key = (item.id, tuple(p.text for p in item.premises), n, seed, tuple(names))
        if key not in self._picked:
            self._picked[key] = self._pick(item, n, seed, names)
        return list(self._picked[key])

    def _pick(self, item: ReasoningItem, n: int, seed: int,
              names: Sequence[str]) -> list[PremiseText]:
        near = self.near(item)
        words = {p.subject for p in item.premises} | {p.answer for p in item.premises}
        words |= set(item.answers)
        relations = sorted({p.relation for p in item.premises if p.role == "P1"})
        pool = [p for r in relations for p in self.statements.get(r, ())
                if p.triple[0] not in near and p.triple[2] not in near
                and p.subject not in words and p.answer not in words]
        order = list(range(len(pool)))
        random.Random(f"{seed}:{item.id}:distractors").shuffle(order)
        if not names:
            return [pool[i] for i in order[:n]]
        # the first n of a stable sort that puts the naming statements first: the naming
        # ones in the seeded order, then as many of the others as are still missing
        found = Names(names)
        chosen: list[int] = []
        others: list[int] = []
        for i in order:
            if found.in_text(pool[i].text):
                chosen.append(i)
                if len(chosen) == n:
                    break
            elif len(others) < n:
                others.append(i)
        return [pool[i] for i in (chosen + others)[:n]]


class Names:
    """Candidate names to find in statements as whole words (any case), each normalised and
    compiled once for a whole pool of statements."""

    def __init__(self, names: Sequence[str]):
        self.names = [(" ".join(name.lower().split()), _whole_words(name))
                      for name in names if name.split()]

    def in_text(self, text: str) -> bool:
        low = " ".join(text.lower().split())
        return any(plain in low and pattern.search(text) for plain, pattern in self.names)


@functools.lru_cache(maxsize=4096)
def _whole_words(name: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, name.split())) + r"(?!\w)",
                      re.IGNORECASE)


def arrange(item: ReasoningItem, distractors: Iterable[PremiseText], order: str,
            seed: int) -> list[PremiseText]:
    """The premises as written: the needed ones in chain order with the distractors at seeded
    places (``ordered``), or that list in a seeded order (``shuffled``)."""
    written = list(item.premises)
    extra = list(distractors)
    rng = random.Random(f"{seed}:{item.id}:{len(extra)}:places")
    for d in extra:
        written.insert(rng.randint(0, len(written)), d)
    if order == "shuffled":
        random.Random(f"{seed}:{item.id}:{len(extra)}:order").shuffle(written)
    return written
