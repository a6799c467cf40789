"""Premise/hypothesis reasoning items from the RDFS engine's one-step derivations.

Each derivation (rule, P1, P2 ⇒ conclusion) becomes a cloze item: the premises verbalized
(P1 the schema premise, P2 the instance or lower-level one), the conjunction, and the
hypothesis with its object masked. The entity reasoned about is a pseudoword slot ([X], and
[Y] for the object of a fact) so the model cannot answer from memory; with pseudowords,
derivations that read the same (same premises, same answer) are one item.

Every premise records the memorizing question it answers (relation, subject, answer), so the
premise-ablation study can test whether a model knows it without regenerating items.
"""

from __future__ import annotations

import functools
import pickle
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from kgprobe.ontology.model import Ontology, Triple, is_literal, parse_literal
from kgprobe.ontology.verbalize import (
    TemplateSet,
    capitalize,
    normalize_label,
    pattern_middle,
    pattern_sentence,
)
from kgprobe.reasoning.homonyms import OUTSIDE, drop_homonyms
from kgprobe.reasoning.rdfs import RULES, Closure, Derivation, UnknownRuleError
from kgprobe.reasoning.rdfs import closure as rdfs_closure
from kgprobe.seeds import seed_key

SLOT_X, SLOT_Y = "[X]", "[Y]"

#: rule → (relation of P1, relation of P2, relation of the hypothesis)
RULE_RELATIONS = {
    "rdfs2": ("domain", "property", "type"),
    "rdfs3": ("range", "property", "type"),
    "rdfs5": ("subPropertyOf", "subPropertyOf", "subPropertyOf"),
    "rdfs7": ("subPropertyOf", "property", "property"),
    "rdfs9": ("subClassOf", "type", "type"),
    "rdfs11": ("subClassOf", "subClassOf", "subClassOf"),
}
#: What each rule needs in the data, for the summary of rules that produced nothing.
RULE_NEEDS = {
    "rdfs2": "rdfs:domain with a fact using that property",
    "rdfs3": "rdfs:range with a fact using that property",
    "rdfs5": "chain of two rdfs:subPropertyOf edges",
    "rdfs7": "rdfs:subPropertyOf edge with a fact using the subproperty",
    "rdfs9": "rdfs:subClassOf edge with an instance of the subclass",
    "rdfs11": "chain of two rdfs:subClassOf edges",
}


@dataclass
class PremiseText:
    role: str  # "P1" | "P2"
    triple: Triple
    text: str
    relation: str  # the memorizing relation that asks for this premise
    subject: str  # as written in the prompt (a label or a slot)
    answer: str  # the candidate that completes it
    asserted: bool  # in the source data, or itself derived


@dataclass
class ReasoningItem:
    id: str
    rule: str
    premises: list[PremiseText]
    conclusion: dict  # {"triple": [s,p,o], "text": hypothesis with [MASK]}
    answers: list[str]
    candidates_key: str
    split: str = "test"
    #: slot → the IRI it stands for; both slots always present ("" when a rule has one
    #: entity: Arrow types a column of nulls as null, and will not read a string into it),
    #: so every rule's file has one shape and `datasets` loads them all at once
    slots: dict[str, str] = field(default_factory=dict)
    hypotheses: list[str] = field(default_factory=list)  # the hypothesis under every manual template
    relation: str = ""  # the hypothesis relation (names its templates)
    count: int = 1  # how many derivations read as this item

    def to_json(self) -> dict:
        """`asdict`, premise triples as lists (its deep copy: 1/3 of generating, by pickle)."""
        premises = [{**vars(p), "triple": list(p.triple)} for p in self.premises]
        return {**pickle.loads(pickle.dumps({**vars(self), "premises": None})), "premises": premises}


class Verbalizer:
    """Renders premises and hypotheses of one ontology with one template set."""

    def __init__(self, onto: Ontology, templates: TemplateSet, pseudowords: bool = True):
        self.onto, self.templates, self.pseudowords = onto, templates, pseudowords
        # The same few labels and patterns are read for every derivation (millions for rdfs9).
        self.label = functools.lru_cache(maxsize=None)(self.label)
        self.pattern = functools.lru_cache(maxsize=None)(self.pattern)

    def label(self, iri: str) -> str:
        return normalize_label(self.onto.label(iri))

    def pattern(self, prop: str) -> str:
        p = self.onto.properties.get(prop)
        return (p.pattern if p and p.pattern else None) or self.templates.default_pattern(
            self.label(prop))

    def name(self, iri: str, slot: str) -> str:
        """An entity as written: its slot with pseudowords, else its label."""
        if self.pseudowords:
            return slot
        # A literal is written as its value ("555-0100"), never as a label of its syntax.
        return parse_literal(iri)[0] if is_literal(iri) else self.onto.label(iri)

    def property_meta(self, prop: str) -> dict[str, str]:
        p = self.onto.properties.get(prop)
        return self.templates.property_meta(self.pattern(prop),
                                            self.label(p.domain[0]) if p and p.domain else None,
                                            self.label(p.range[0]) if p and p.range else None)

    def statement(self, relation: str, subject: str, answer: str, subject_iri: str = "") -> str:
        """A premise: the relation's first manual template with the answer filled in."""
        tmpl = self.templates[relation].premise
        meta = self.property_meta(subject_iri) if relation in ("domain", "range") else None
        return tmpl.fill(answer, text_a=subject, meta=meta)

    def hypotheses(self, relation: str, subject: str, obj: str = "") -> list[str]:
        return [capitalize(t.render(text_a=subject, text_b=obj))
                for t in self.templates[relation].manual]


#: Exclusion reasons whose terms take their triples out of the closure items are drawn from:
#: what is said with an annotation property, about a deprecated term or about the ontology
#: document is not knowledge to reason with (their conclusions would be items about them).
NOT_KNOWLEDGE = frozenset({"annotation", "deprecated", "ontology header"})


def knowledge_triples(onto: Ontology, triples: Iterable[Triple]) -> list[Triple]:
    """The triples items are reasoned from: none about the ontology header, none using an
    annotation property or naming a deprecated term (`Ontology.excluded`)."""
    gone = {iri for iri, why in onto.excluded.items() if why in NOT_KNOWLEDGE} | onto.header
    if not gone:
        return list(triples)
    return [t for t in triples if t[0] not in gone and t[1] not in gone and t[2] not in gone]


def item_closure(onto: Ontology, triples: Iterable[Triple], rules: Sequence[str] = RULES) -> Closure:
    """The RDFS closure items are drawn from: the source's `knowledge_triples` and the edges
    its model kept from OWL expressions (`Ontology.closure_edges`), so their consequences (a
    defined class's instances typed by its named conjuncts) become items too."""
    return rdfs_closure(knowledge_triples(onto, triples) + onto.closure_edges, rules)


#: Why an item that could be written is still dropped (counted per rule in `skipped`).
RESTATED = "answer in its own premise"
UNWORDED = "IRI or underscore in the text"
NAMED = "answer in the property's wording"


def restates_premise(item: ReasoningItem) -> bool:
    """Whether the item's answer can be read off its other premise without the inference
    step: it is the answer P2 already gives (DCAT's ``dcat:hasVersion ⊑ dcterms:hasVersion``,
    both "has version"; "B is a B" in rdfs9/11), or a premise of two terms with one label says
    nothing (CIDOC-CRM's "Participated in implies participated in"). P1 stating the answer is
    the point of an item; P2 stating it is not. (The property "architect" with the range
    "architect" names two terms: P2 gives no class, so it stays.)"""
    said = {_norm(p.answer) for p in item.premises if p.role == "P2"}
    return any(_norm(a) in said for a in item.answers) or any(_norm(p.subject) == _norm(
        p.answer) for p in item.premises if p.relation in ("subClassOf", "subPropertyOf"))


def named_by_property(item: ReasoningItem) -> bool:
    """Whether an rdfs3 item's answer is the last words of the property its fact uses, the
    noun that names what the property points to: QUDT's "[X] has prefix [Y]" with the range
    "prefix" asks "[Y] is a particular [MASK]", which the fact's own words answer without
    the range premise. (A domain is no such noun: "[X] has wine descriptor [Y]" does not say
    that [X] is a wine, so rdfs2 items stay.)"""
    if item.rule != "rdfs3":
        return False
    # `ontology.wording`'s conservative 'stands in the relation "prefix" to' quotes the label
    said = [f" {_norm(p.answer.split(chr(34))[1] if p.answer.count(chr(34)) == 2 else p.answer)}"
            for p in item.premises if p.role == "P2"]
    return any(s.endswith(f" {_norm(a)}") for a in item.answers for s in said)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def unworded(item: ReasoningItem) -> bool:
    """A text that would show an IRI or an underscore to the model (a label fallback gone
    wrong): never written."""
    texts = [p.text for p in item.premises] + item.hypotheses + item.answers
    return any("://" in t or "_" in t for t in texts)


def reasoning_items(onto: Ontology, closure: Closure, templates: TemplateSet, *,
                    rules: Iterable[str] = RULES, pseudowords: bool = True,
                    skipped: Counter | None = None,
                    asserted: set | None = None) -> dict[str, list[ReasoningItem]]:
    """Items per rule, in a deterministic order (sorted by their text).

    A derivation that would write an excluded term (a datatype, a top class, a term with
    no label usable as words: `Ontology.excluded`) is skipped and counted in `skipped`
    under "RULE: REASON" (per distinct item shape with pseudowords). `asserted`: the triples
    a premise counts as asserted in (default: the closure's input; narrower when that input
    also holds OWL-reasoner conclusions).
    """
    skipped = Counter() if skipped is None else skipped
    verb = Verbalizer(onto, templates, pseudowords)
    asserted = closure.asserted if asserted is None else asserted
    out: dict[str, list[ReasoningItem]] = {}
    for rule in rules:
        if rule not in RULE_RELATIONS:
            raise UnknownRuleError(rule)
        items = _rule_items(onto, verb, closure.derivations(rule), asserted, pseudowords, skipped)
        for n, item in enumerate(items):
            item.id = f"{rule}-{n:05d}"
        out[rule] = items
    return out


def _rule_items(onto: Ontology, verb: Verbalizer, derivations: Iterable[Derivation], asserted,
                pseudowords: bool, skipped: Counter) -> list[ReasoningItem]:
    """One rule's items, sorted by their text; items that read the same are one, counted."""
    by_text: dict[tuple, ReasoningItem] = {}
    by_shape: dict[tuple, ReasoningItem | None] = {}
    for d in derivations:
        if any(t[0].startswith('"') for t in (d.conclusion, *d.premises)):
            continue  # generalized triples (a literal subject) have no words
        if onto.namespaces and not in_namespace(onto, d):
            skipped[f"{d.rule}: {OUTSIDE}"] += 1
            continue
        if pseudowords:
            # Derivations that differ only in the entity behind a slot read the same:
            # count them without rendering each one again.
            shape = _shape(d)
            if shape in by_shape:
                if by_shape[shape] is not None:
                    by_shape[shape].count += 1
                continue
        item, reason = _written(onto, verb, d, asserted, pseudowords)
        if reason:
            skipped[f"{d.rule}: {reason}"] += 1
        if pseudowords:
            by_shape[shape] = item
        if item is not None:
            count_by_text(by_text, item)
    drop_homonyms(by_text, skipped)
    return sorted_by_text(by_text)


def in_namespace(onto: Ontology, d: Derivation) -> bool:
    """Whether a derivation's conclusion is about one of the ontology's own terms and
    answers with one (`--namespace`); its premises may go through imported ones."""
    s, p, o = d.conclusion
    return onto.in_namespace(s) and onto.in_namespace(p if d.rule == "rdfs7" else o)


def count_by_text(by_text: dict[tuple, ReasoningItem], item: ReasoningItem) -> None:
    """Add `item` to `by_text`, or count it on the item that reads the same: a probe asks its
    words, so derivations that read alike are one item (its `count` says how many)."""
    key = (tuple(p.text for p in item.premises), item.conclusion["text"], tuple(item.answers))
    if key in by_text:
        by_text[key].count += 1
    else:
        by_text[key] = item


def sorted_by_text(by_text: dict[tuple, ReasoningItem]) -> list[ReasoningItem]:
    """The items in the order of their words (conclusion, answers, premises): stable across
    runs whatever order the derivations came in."""
    return sorted(by_text.values(), key=lambda i: (i.conclusion["text"], i.answers,
                                                  [p.text for p in i.premises]))


def derivation_item(onto: Ontology, verb: Verbalizer, d: Derivation, asserted,
                    pseudowords: bool = True) -> tuple[ReasoningItem | None, str | None]:
    """One derivation as the item `reasoning_items` would write (or why not): the first step
    of a chained item (`reasoning.chains`) is written exactly like a depth-1 item."""
    return _written(onto, verb, d, asserted, pseudowords)


def _written(onto: Ontology, verb: Verbalizer, d: Derivation, asserted,
             pseudowords: bool) -> tuple[ReasoningItem | None, str | None]:
    """(the item of `d`, None), or (None, why it is not written) — or (None, None) for a
    derivation that says nothing in words (`_item`)."""
    reason = _unspeakable(onto, d, pseudowords)
    item = None if reason else _item(verb, d, asserted)
    if item is None:
        return None, reason
    reason = (RESTATED if restates_premise(item) else NAMED if named_by_property(item)
              else UNWORDED if unworded(item) else None)
    return (None, reason) if reason else (item, None)


def _unspeakable(onto: Ontology, d: Derivation, pseudowords: bool) -> str | None:
    """Why the item of `d` cannot be written (an excluded term it would name), or None."""
    (p1, p2) = d.premises
    if d.rule in ("rdfs2", "rdfs3", "rdfs7"):
        named = [p2[1], p1[2]]
        entities = [p2[0], p2[2]]
    else:
        named = [p1[0], p1[2]]
        entities = [p2[0]]
    if not pseudowords:
        named += [e for e in entities if not e.startswith('"')]
    for term in named:
        reason = onto.excluded.get(term)
        if reason:
            return reason
    return None


def _shape(d: Derivation) -> tuple:
    """A derivation with the slotted entities replaced by their slot names."""
    (p1, p2), c = d.premises, d.conclusion
    if d.rule in ("rdfs2", "rdfs3", "rdfs7"):
        swap = {p2[0]: SLOT_X, p2[2]: SLOT_Y} if p2[0] != p2[2] else {p2[0]: SLOT_X}
    else:
        swap = {p2[0]: SLOT_X}
    return (d.rule, *(tuple(swap.get(t, t) for t in triple) for triple in (p1, p2, c)))


def _item(verb: Verbalizer, d: Derivation, asserted) -> ReasoningItem | None:
    (p1, p2), (cs, _, co) = d.premises, d.conclusion
    if any(t.startswith(('"', "_:")) for t in (cs, co)) or cs == co:
        return None  # literals, blank nodes and reflexive edges say nothing in words
    label = verb.label
    rel1, rel2, hyp_rel = RULE_RELATIONS[d.rule]
    slots: dict[str, str] = {}
    if d.rule in ("rdfs2", "rdfs3", "rdfs7"):
        (u, prop, v) = p2
        x, y = verb.name(u, SLOT_X), verb.name(v, SLOT_Y)
        slots = {SLOT_X: u, SLOT_Y: v}
        fact = PremiseText("P2", p2, pattern_sentence(verb.pattern(prop), x, y), "property",
                           x, pattern_middle(verb.pattern(prop)), p2 in asserted)
        if d.rule == "rdfs7":
            sup = p1[2]
            # P1 names the superproperty by its label, a paraphrase of the gold (the
            # superproperty's pattern): the paper's §4.2 reads rdfs7 as a test of whether a
            # model maps a property's name to its wording. Writing the pattern here would put
            # the gold verbatim into the prompt.
            first = PremiseText("P1", p1, verb.statement("subPropertyOf", label(prop), label(sup)),
                                "subPropertyOf", label(prop), label(sup), p1 in asserted)
            answer = pattern_middle(verb.pattern(sup))
            hyps = verb.hypotheses("property", x, y)
        else:
            rel = "domain" if d.rule == "rdfs2" else "range"
            first = PremiseText("P1", p1, verb.statement(rel, label(prop), label(p1[2]), prop),
                                rel, label(prop), label(p1[2]), p1 in asserted)
            answer = label(co)
            hyps = verb.hypotheses("type", x if d.rule == "rdfs2" else y)
        premises = [first, fact]
    else:
        # rdfs5/9/11: P2's subject is the entity (or class/property) reasoned about.
        subj = p2[0]
        x = verb.name(subj, SLOT_X)
        slots = {SLOT_X: subj, SLOT_Y: ""}
        mid, top = p1[0], p1[2]
        premises = [
            PremiseText("P1", p1, verb.statement(rel1, label(mid), label(top)), rel1,
                        label(mid), label(top), p1 in asserted),
            PremiseText("P2", p2, verb.statement(rel2, x, label(mid)), rel2, x, label(mid),
                        p2 in asserted),
        ]
        answer = label(top)
        hyps = verb.hypotheses(hyp_rel, x)
    hyp_index = verb.templates[hyp_rel].hypothesis
    return ReasoningItem(
        id="", rule=d.rule, premises=premises,
        conclusion={"triple": list(d.conclusion), "text": hyps[hyp_index]},
        answers=[answer], candidates_key=verb.templates[hyp_rel].candidates,
        slots=slots, hypotheses=hyps, relation=hyp_rel)


def rule_summary(items: dict[str, list[ReasoningItem]],
                 skipped: Counter | None = None) -> dict[str, dict]:
    """Counts per rule; a rule that produced nothing says what it would need."""
    out = {}
    for rule, rule_items in items.items():
        entry = {"items": len(rule_items), "derivations": sum(i.count for i in rule_items)}
        gone = {k.split(": ", 1)[1]: n for k, n in sorted((skipped or {}).items())
                if k.startswith(rule + ": ")}
        if gone:
            entry["skipped"] = gone
        if not rule_items:
            entry["note"] = f"no items: the data has no {RULE_NEEDS[rule]}"
        out[rule] = entry
    return out


def sample_items(items: Sequence[ReasoningItem], rule: str, limit: int | None,
                 seed: int) -> list[ReasoningItem]:
    """A seeded sample of `limit` items of a rule, in item order: the premise-ablation study's
    draw, which `kgprobe export lm-eval` repeats so an export probes the same items."""
    if limit is None or len(items) <= limit:
        return list(items)
    keep = sorted(random.Random(seed_key(seed, rule)).sample(range(len(items)), limit))
    return [items[i] for i in keep]
