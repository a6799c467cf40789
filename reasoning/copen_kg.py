"""CSJ and CiC items generated from the knowledge graph (the ontology model of the store).

**Taxonomy.** Concept chains follow the ontology's ``subClassOf`` edges, specific → general.
Like the paper (§2.1: "following Schema.org, we set Person as a top-level concept"), the
edges above the classes in `TOP_LEVEL_CUTS` are dropped, so a person's chain ends at *person*
instead of climbing through *animal*, *eukaryote*, *species*.

**Split.** Train/dev and test concepts are disjoint by top-level concept (Table 16's idea):
`split_top_levels` keeps the paper's side for the top-level concepts Table 16 names and
assigns the others with the seed; dev is a seeded fifth of the train/dev items.

**CSJ** (§2.2). For a query entity of concept C: one answer of C with no content word in
common with the query (the artifact filter of Appendix C.3), 5 hard distractors (entities of
concepts that share a superordinate with C, nearest shared superordinate first) and 15 easy
ones (entities whose concepts share no superordinate with C). No distractor is an instance of
C, of a subconcept of C or of a superconcept of C. Candidates are shuffled with the seed.

**CiC** (§2.4). Every fact (s, p, o) gives a context sentence through p's pattern. For the
subject the context supports p's domain (rdfs2), for the object p's range (rdfs3), and every
superconcept of it (rdfs9/rdfs11); superproperties' domains and ranges count too (rdfs7).
The entity's concept chains come from its asserted types plus the types *all* its facts
entail; the gold is the most specific concept of those chains that *this* context supports,
so "[X]'s spouse is …" supports *person*, not *politician*. Entities whose chains have a
single concept are skipped (the paper keeps chains with more than one concept), as are items
whose gold concept shares a content word with the sentence (Appendix C.3).

Every item records its provenance: the triples it was built from and the rule that links them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    Ontology,
)
from kgprobe.ontology.verbalize import (
    default_pattern,
    normalize_label,
    pattern_sentence,
)
from kgprobe.reasoning.copen_items import (
    CiCItem,
    CSJItem,
    lexical_overlap,
    split_top_levels,
    split_train_dev,
)
from kgprobe.reasoning.memorizing import ancestors

#: Classes made top-level concepts by cutting their superclass edges (the paper's §2.1).
TOP_LEVEL_CUTS = ("http://dbpedia.org/ontology/Person",)
N_HARD, N_EASY = 5, 15


@dataclass
class Taxonomy:
    """Concept labels and (cut) direct superclasses, with chain helpers."""

    labels: dict[str, str]
    parents: dict[str, list[str]]
    _anc: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, onto: Ontology, cuts: Iterable[str] = TOP_LEVEL_CUTS) -> "Taxonomy":
        cut = set(cuts)
        parents = {c: ([] if c in cut else [p for p in v.parents if p in onto.classes])
                   for c, v in onto.classes.items()}
        return cls({c: v.label for c, v in onto.classes.items()}, parents)

    def ancestors(self, c: str) -> list[str]:
        hit = self._anc.get(c)
        if hit is None:
            hit = self._anc[c] = ancestors(c, self.parents)
        return hit

    def up(self, c: str) -> list[str]:
        """`c` and its ancestors, specific → general."""
        return [c, *self.ancestors(c)]

    def roots(self, c: str) -> list[str]:
        tops = [a for a in self.up(c) if not self.parents.get(a)]
        return sorted(tops) or [c]

    def chains(self, c: str, limit: int = 8) -> list[list[str]]:
        """Every path from `c` up to a top-level concept (at most `limit`)."""
        out: list[list[str]] = []
        stack = [[c]]
        while stack and len(out) < limit:
            path = stack.pop()
            ups = [p for p in self.parents.get(path[-1], []) if p not in path]
            if not ups:
                out.append(path)
            stack.extend(path + [p] for p in sorted(ups, reverse=True))
        return out

    def text(self, c: str) -> str:
        """A concept as a prompt word: normalized label, lower-cased except acronyms."""
        return concept_text(self.labels.get(c, c))


def concept_text(label: str) -> str:
    """``Supreme Court of the United States case`` → ``supreme court of the united states
    case``; acronyms (``COVID``) keep their case. COPEN lower-cases concepts in prompts."""
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower()
                    for w in normalize_label(label).split())


def top_level_sides(onto: Ontology, tax: Taxonomy, seed: int) -> dict[str, str]:
    """train/test per top-level concept, weighted by the instances under it (each class counts
    at least once). CSJ and CiC share this split, as the paper's tasks share Table 16's."""
    weights: dict[str, int] = defaultdict(int)
    for c in tax.labels:
        for r in tax.roots(c):
            weights[r] += 1
    for inst in onto.instances.values():
        for t in inst.types:
            if t in tax.labels:
                for r in tax.roots(t):
                    weights[r] += 1
    names = {r: tax.labels.get(r, r) for r in weights}
    return split_top_levels(weights, seed=seed, names=names)


def _side(tax: Taxonomy, sides: dict[str, str], concepts: Iterable[str]) -> str | None:
    found = {sides.get(r) for c in concepts for r in tax.roots(c)}
    return found.pop() if len(found) == 1 else None


# ----------------------------------------------------------------------------- CSJ


@dataclass
class GenerationReport:
    """Counts of what a generator kept and skipped, and why (written to summary.json)."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def to_json(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "notes": self.notes}


def generate_csj(onto: Ontology, *, seed: int = 0, per_concept: int = 10,
                 n_hard: int = N_HARD, n_easy: int = N_EASY,
                 tax: Taxonomy | None = None) -> tuple[list[CSJItem], GenerationReport]:
    """CSJ items over the instances of the ontology (see the module docstring)."""
    tax = tax or Taxonomy.of(onto)
    report = GenerationReport()
    members: dict[str, list[str]] = defaultdict(list)  # concept → direct instances
    for iri, inst in sorted(onto.instances.items()):
        if inst.label.strip():
            for t in inst.types:
                if t in tax.labels:
                    members[t].append(iri)
    sides = top_level_sides(onto, tax, seed)
    side_of = {c: _side(tax, sides, [c]) for c in members}
    by_side: dict[str, list[str]] = defaultdict(list)
    for c in sorted(members):
        if side_of[c]:
            by_side[side_of[c]].append(c)
    family = {c: {c, *tax.ancestors(c)} for c in members}
    items: list[CSJItem] = []
    for concept in sorted(members):
        side = side_of[concept]
        pool = members[concept]
        if side is None or len(pool) < 2:
            report.add("concepts skipped: fewer than 2 instances" if side else
                       "concepts skipped: top-level concepts on both sides")
            continue
        rng = random.Random(f"{seed}|csj|{concept}")
        anc = set(tax.ancestors(concept))
        near = {c: family[c] for c in by_side[side]}

        def excluded(entity: str) -> bool:
            # an instance of C, of a subconcept of C or of a superconcept of C is no distractor
            return any(t == concept or t in anc or concept in tax.ancestors(t)
                       for t in onto.instances[entity].types)

        # Hard concepts by the distance from C up to the nearest shared superordinate.
        hard_by_dist: dict[int, list[tuple[str, str]]] = defaultdict(list)
        easy: list[str] = []
        up = tax.up(concept)
        for other, fam in near.items():
            if other == concept or other in anc or concept in fam:
                continue
            shared = [a for a in up[1:] if a in fam]
            if shared:
                hard_by_dist[up.index(shared[0])].append((other, shared[0]))
            elif not (set(tax.roots(other)) & set(tax.roots(concept))):
                easy.append(other)
        queries = list(pool)
        rng.shuffle(queries)
        made = 0
        for query in queries:
            if made >= per_concept:
                break
            qlabel = onto.instances[query].label
            answers = [a for a in pool if a != query and onto.instances[a].label != qlabel]
            rng.shuffle(answers)
            clean = [a for a in answers if not lexical_overlap(qlabel, onto.instances[a].label)]
            if not clean:
                report.add("queries skipped: every answer shares a word with the query")
                continue
            answer = clean[0]
            used = {qlabel, onto.instances[answer].label}
            hard = _pick(onto, hard_by_dist, n_hard, rng, members, excluded, used)
            easy_pick = _pick(onto, {0: [(c, None) for c in easy]}, n_easy, rng, members, excluded, used)
            if len(hard) < n_hard or len(easy_pick) < n_easy:
                report.add("queries skipped: too few hard or easy distractors")
                continue
            cands = [(answer, concept, "answer", None)] + [(e, c, "hard", s) for e, c, s in hard] + \
                    [(e, c, "easy", None) for e, c, _ in easy_pick]
            rng.shuffle(cands)
            label = next(i for i, c in enumerate(cands) if c[2] == "answer")
            prov = {"rule": "query and answer are instances of the same concept; hard distractors "
                            "share a superordinate with it, easy ones do not",
                    "triples": [[query, RDF_TYPE, concept], [answer, RDF_TYPE, concept]] +
                               [[e, RDF_TYPE, c] for e, c, _, _ in cands if e != answer] +
                               [[c, RDFS_SUBCLASSOF + "*", s] for _, c, k, s in cands if k == "hard"] +
                               [[concept, RDFS_SUBCLASSOF + "*", s] for s in
                                sorted({s for _, _, k, s in cands if k == "hard"})]}
            items.append(CSJItem(
                id="", split="test" if side == "test" else "train", query=qlabel,
                candidates=[onto.instances[e].label for e, *_ in cands], label=label,
                candidate_ids=[e for e, *_ in cands], kinds=[k for *_, k, _ in cands],
                concept=tax.text(concept), candidate_concepts=[tax.text(c) for _, c, _, _ in cands],
                provenance=prov, group=query))
            made += 1
        report.add("items", made)
    split_train_dev(items, seed=seed)
    for i, it in enumerate(sorted(items, key=lambda x: (x.split, x.group))):
        it.id = f"csj-{it.split}-{i:05d}"
    report.notes.append(_sides_note(tax, sides))
    return items, report


def _pick(onto: Ontology, by_rank: dict[int, list[tuple[str, str | None]]], n: int,
          rng: random.Random, members: dict[str, list[str]], excluded, used: set[str]):
    """`n` entities of distinct concepts, lowest rank first (seeded within a rank); when the
    concepts run out, a second round takes further entities of the same concepts."""
    order: list[tuple[str, str | None]] = []
    for rank in sorted(by_rank):
        group = sorted(by_rank[rank])
        rng.shuffle(group)
        order.extend(group)
    picked: list[tuple[str, str, str | None]] = []
    progress = True
    while progress and len(picked) < n:
        progress = False
        for concept, shared in order:
            if len(picked) >= n:
                break
            options = [e for e in members[concept]
                       if onto.instances[e].label not in used and not excluded(e)]
            if options:
                e = rng.choice(options)
                used.add(onto.instances[e].label)
                picked.append((e, concept, shared))
                progress = True
    return picked


# ----------------------------------------------------------------------------- CiC


def _closure_props(onto: Ontology, p: str) -> list[str]:
    parents = {q: v.parents for q, v in onto.properties.items()}
    return [p, *ancestors(p, parents)]


def entity_types(onto: Ontology) -> dict[str, dict[str, list]]:
    """For each entity: type → evidence (asserted ``rdf:type`` triples, or the fact and the
    domain/range triple that entail it by rdfs2/rdfs3, through superproperties by rdfs7)."""
    evidence: dict[str, dict[str, list]] = defaultdict(dict)
    for iri, inst in onto.instances.items():
        for t in inst.types:
            if t in onto.classes:
                evidence[iri].setdefault(t, []).append({"rule": "asserted", "triples": [[iri, RDF_TYPE, t]]})
    for s, p, o in onto.facts:
        if p not in onto.properties:
            continue
        for q in _closure_props(onto, p):
            prop = onto.properties.get(q)
            if prop is None:
                continue
            for d in prop.domain:
                if d in onto.classes:
                    evidence[s].setdefault(d, []).append(
                        {"rule": "rdfs2", "triples": [[s, p, o], [q, RDFS_DOMAIN, d]]})
            for r in prop.range:
                if r in onto.classes and o in onto.instances:
                    evidence[o].setdefault(r, []).append(
                        {"rule": "rdfs3", "triples": [[s, p, o], [q, RDFS_RANGE, r]]})
    return evidence


def supported_concept(tax: Taxonomy, supports: list[str], candidates: list[str]) -> str | None:
    """The most specific candidate the context entails: the first candidate met walking up
    from the concepts the context supports (nearest first)."""
    best: tuple[int, str] | None = None
    for s in supports:
        for dist, c in enumerate(tax.up(s)):
            if c in candidates:
                if best is None or dist < best[0]:
                    best = (dist, c)
                break
    return best[1] if best else None


def generate_cic(onto: Ontology, *, seed: int = 0, per_entity: int = 10,
                 tax: Taxonomy | None = None) -> tuple[list[CiCItem], GenerationReport]:
    """CiC items from the facts of the ontology (see the module docstring)."""
    tax = tax or Taxonomy.of(onto)
    report = GenerationReport()
    evidence = entity_types(onto)
    chains_of: dict[str, list[list[str]]] = {}
    for e, types in evidence.items():
        ts = set(types)
        most_specific = sorted(t for t in ts if not any(t in tax.ancestors(u) for u in ts if u != t))
        chains = [ch for t in most_specific for ch in tax.chains(t)]
        chains_of[e] = list({tuple(ch): ch for ch in chains}.values())
    raw: list[tuple] = []
    seen: set[tuple[str, str]] = set()
    for s, p, o in onto.facts:
        prop = onto.properties.get(p)
        if prop is None or s not in onto.instances or o not in onto.instances:
            continue
        pattern = prop.pattern or default_pattern(prop.label)
        sentence = pattern_sentence(pattern, onto.instances[s].label, onto.instances[o].label)
        for entity, role in ((s, "subject"), (o, "object")):
            chains = chains_of.get(entity, [])
            if not any(len(ch) > 1 for ch in chains):
                report.add("contexts skipped: the entity has no chain of two or more concepts")
                continue
            supports, rules = [], []
            for q in _closure_props(onto, p):
                qp = onto.properties.get(q)
                for c in ((qp.domain if role == "subject" else qp.range) if qp else []):
                    if c in tax.labels:
                        supports.append(c)
                        rules.append([q, RDFS_DOMAIN if role == "subject" else RDFS_RANGE, c])
            candidates = list(dict.fromkeys(c for ch in chains for c in ch))
            gold = supported_concept(tax, supports, candidates)
            if gold is None:
                report.add("contexts skipped: the context supports no concept of the entity's chains")
                continue
            if (entity, sentence) in seen:
                continue
            seen.add((entity, sentence))
            if lexical_overlap(tax.text(gold), sentence):
                report.add("contexts skipped: the gold concept shares a word with the sentence")
                continue
            raw.append((entity, role, (s, p, o), sentence, chains, candidates, gold, rules))
    sides = top_level_sides(onto, tax, seed)
    items: list[CiCItem] = []
    per: dict[str, int] = defaultdict(int)
    rng = random.Random(f"{seed}|cic")
    rng.shuffle(raw)
    for entity, role, fact, sentence, chains, candidates, gold, rules in raw:
        side = _side(tax, sides, candidates)
        if side is None:
            report.add("contexts skipped: the entity's chains span train and test top-level concepts")
            continue
        if per[entity] >= per_entity:
            report.add("contexts skipped: more than per_entity contexts for the entity")
            continue
        per[entity] += 1
        context = {"rule": "rdfs2" if role == "subject" else "rdfs3",
                   "triples": [list(fact), *rules]}
        direct = [r[2] for r in rules]
        if gold not in direct:  # the gold is a superconcept of what the context supports
            via = next(c for c in direct if gold in tax.up(c))
            context["then"] = {"rule": "rdfs9", "triples": [[via, RDFS_SUBCLASSOF + "*", gold]]}
        typing = {tax.text(ch[0]): evidence[entity][ch[0]][:3] for ch in chains}
        items.append(CiCItem(
            id="", split="test" if side == "test" else "train", sentence=sentence,
            entity=onto.instances[entity].label, mention=onto.instances[entity].label,
            chains=[[tax.text(c) for c in ch] for ch in chains],
            candidates=[tax.text(c) for c in candidates], label=candidates.index(gold),
            provenance={"context": context, "chain_evidence": typing, "entity": entity,
                        "role": role, "gold_level": min(ch.index(gold) for ch in chains if gold in ch)},
            group=entity))
    report.add("items", len(items))
    split_train_dev(items, seed=seed)
    for i, it in enumerate(sorted(items, key=lambda x: (x.split, x.group, x.sentence))):
        it.id = f"cic-{it.split}-{i:05d}"
    report.notes.append(_sides_note(tax, sides))
    return items, report


def _sides_note(tax: Taxonomy, sides: dict[str, str]) -> str:
    order = sorted(sides, key=lambda r: (sides[r], tax.labels.get(r, r).lower()))
    return "top-level concepts: " + ", ".join(f"{tax.labels.get(r, r)}={sides[r]}" for r in order)
