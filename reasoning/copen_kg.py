"""CSJ and CiC items generated from the knowledge graph (the ontology model of the store).

**Taxonomy** (`copen_taxonomy`): concept chains follow the ontology's ``subClassOf`` edges,
with Person made a top-level concept as in the paper.

**Split** (`copen_split`): train/dev and test concepts are disjoint by top-level concept
(Table 16's idea); dev is a seeded fifth of the train/dev items.

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

import functools
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from tqdm import tqdm

from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    Ontology,
)
from kgprobe.ontology.verbalize import default_pattern, pattern_sentence
from kgprobe.reasoning.copen_items import CiCItem, CSJItem, lexical_overlap
from kgprobe.reasoning.copen_split import GenerationReport, split_train_dev
from kgprobe.reasoning.copen_taxonomy import (
    Taxonomy,
    instances_by_concept,
    side_of,
    sides_note,
    top_level_sides,
)
from kgprobe.reasoning.memorizing import ancestors

N_HARD, N_EASY = 5, 15

# ----------------------------------------------------------------------------- CSJ


@dataclass
class _CSJSource:
    """What CSJ draws from: the labelled instances of each concept, the concepts of each side
    of the split, each concept with its ancestors (its family), and each instance's most
    specific types (computed once: distractor checks read them millions of times)."""

    onto: Ontology
    tax: Taxonomy
    members: dict[str, list[str]]  # concept → direct instances
    by_side: dict[str, list[str]]
    family: dict[str, set[str]]
    types: dict[str, list[str]]  # instance → its most specific concepts


def generate_csj(onto: Ontology, *, seed: int = 0, per_concept: int = 10,
                 n_hard: int = N_HARD, n_easy: int = N_EASY,
                 tax: Taxonomy | None = None, progress: bool = False
                 ) -> tuple[list[CSJItem], GenerationReport]:
    """CSJ items over the instances of the ontology (see the module docstring); `progress`:
    a bar over the concepts on stderr."""
    tax = tax or Taxonomy.of(onto)
    report = GenerationReport()
    members, types = instances_by_concept(onto, tax)
    sides = top_level_sides(onto, tax, seed)
    side = {c: side_of(tax, sides, [c]) for c in members}
    by_side: dict[str, list[str]] = defaultdict(list)
    for c in sorted(members):
        if side[c]:
            by_side[side[c]].append(c)
    src = _CSJSource(onto, tax, members, by_side, {c: {c, *tax.ancestors(c)} for c in members},
                     types)
    items: list[CSJItem] = []
    for concept in tqdm(sorted(members), desc="CSJ concepts", unit="concept", leave=False,
                        disable=not progress):
        if side[concept] is None or len(members[concept]) < 2:
            report.add("concepts skipped: fewer than 2 instances" if side[concept] else
                       "concepts skipped: top-level concepts on both sides")
            continue
        rng = random.Random(f"{seed}|csj|{concept}")
        made = _concept_items(src, concept, side[concept], rng, (per_concept, n_hard, n_easy), report)
        items.extend(made)
        report.add("items", len(made))
    split_train_dev(items, seed=seed)
    for i, it in enumerate(sorted(items, key=lambda x: (x.split, x.group))):
        it.id = f"csj-{it.split}-{i:05d}"
    report.notes.append(sides_note(tax, sides))
    return items, report


def _distractor_concepts(src: _CSJSource, concept: str, side: str
                         ) -> tuple[dict[int, list[tuple[str, str]]], list[str]]:
    """(hard concepts by the distance from `concept` up to the nearest superordinate they
    share with it, easy concepts: no shared top-level concept)."""
    tax = src.tax
    anc = set(tax.ancestors(concept))
    hard_by_dist: dict[int, list[tuple[str, str]]] = defaultdict(list)
    easy: list[str] = []
    up = tax.up(concept)
    for other in src.by_side[side]:
        fam = src.family[other]
        if other == concept or other in anc or concept in fam:
            continue
        shared = [a for a in up[1:] if a in fam]
        if shared:
            hard_by_dist[up.index(shared[0])].append((other, shared[0]))
        elif not (set(tax.roots(other)) & set(tax.roots(concept))):
            easy.append(other)
    return hard_by_dist, easy


def _concept_items(src: _CSJSource, concept: str, side: str, rng: random.Random,
                   sizes: tuple[int, int, int], report: GenerationReport) -> list[CSJItem]:
    """Up to `per_concept` items whose query and answer are instances of `concept`."""
    per_concept, n_hard, n_easy = sizes
    onto, tax = src.onto, src.tax
    anc = set(tax.ancestors(concept))

    @functools.cache
    def excluded(entity: str) -> bool:
        # an instance of C, of a subconcept of C or of a superconcept of C is no distractor
        return any(t == concept or t in anc or concept in tax.ancestors(t)
                   for t in src.types[entity])

    hard_by_dist, easy = _distractor_concepts(src, concept, side)
    easy_by_rank: dict[int, list[tuple[str, str | None]]] = {0: [(c, None) for c in easy]}
    queries = list(src.members[concept])
    rng.shuffle(queries)
    out: list[CSJItem] = []
    for query in queries:
        if len(out) >= per_concept:
            break
        qlabel = onto.instances[query].label
        answer = _answer(src, concept, query, rng)
        if answer is None:
            report.add("queries skipped: every answer shares a word with the query")
            continue
        used = {qlabel, onto.instances[answer].label}
        hard = _pick(onto, hard_by_dist, n_hard, rng, src.members, excluded, used)
        easy_pick = _pick(onto, easy_by_rank, n_easy, rng, src.members, excluded, used)
        if len(hard) < n_hard or len(easy_pick) < n_easy:
            report.add("queries skipped: too few hard or easy distractors")
            continue
        cands = [(answer, concept, "answer", None)] + [(e, c, "hard", s) for e, c, s in hard] + \
                [(e, c, "easy", None) for e, c, _ in easy_pick]
        rng.shuffle(cands)
        out.append(_csj_item(src, concept, query, side, cands))
    return out


def _answer(src: _CSJSource, concept: str, query: str, rng: random.Random) -> str | None:
    """Another instance of `concept` whose label shares no content word with the query's."""
    inst = src.onto.instances
    qlabel = inst[query].label
    answers = [a for a in src.members[concept] if a != query and inst[a].label != qlabel]
    rng.shuffle(answers)
    # the first clean one: comparing the query with every member made a concept of m
    # instances cost m² comparisons when many of its queries are skipped
    return next((a for a in answers if not lexical_overlap(qlabel, inst[a].label)), None)


def _csj_item(src: _CSJSource, concept: str, query: str, side: str,
              cands: list[tuple[str, str, str, str | None]]) -> CSJItem:
    """The item of shuffled candidates (entity, concept, kind, shared superordinate)."""
    tax, inst = src.tax, src.onto.instances
    label = next(i for i, c in enumerate(cands) if c[2] == "answer")
    answer = cands[label][0]
    prov = {"rule": "query and answer are instances of the same concept; hard distractors "
                    "share a superordinate with it, easy ones do not",
            "triples": [[query, RDF_TYPE, concept], [answer, RDF_TYPE, concept]] +
                       [[e, RDF_TYPE, c] for e, c, _, _ in cands if e != answer] +
                       [[c, RDFS_SUBCLASSOF + "*", s] for _, c, k, s in cands if k == "hard"] +
                       [[concept, RDFS_SUBCLASSOF + "*", s] for s in
                        sorted({s for _, _, k, s in cands if k == "hard"})]}
    return CSJItem(
        id="", split="test" if side == "test" else "train", query=inst[query].label,
        candidates=[inst[e].label for e, *_ in cands], label=label,
        candidate_ids=[e for e, *_ in cands], kinds=[k for *_, k, _ in cands],
        concept=tax.text(concept), candidate_concepts=[tax.text(c) for _, c, _, _ in cands],
        provenance=prov, group=query)


def _pick(onto: Ontology, by_rank: dict[int, list[tuple[str, str | None]]], n: int,
          rng: random.Random, members: dict[str, list[str]], excluded: Callable[[str], bool],
          used: set[str]) -> list[tuple[str, str, str | None]]:
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


@dataclass
class _Context:
    """A fact's sentence as a context for one of its entities, before the split."""

    entity: str
    role: str  # "subject" or "object"
    fact: tuple[str, str, str]
    sentence: str
    chains: list[list[str]]
    candidates: list[str]
    gold: str
    rules: list[list[str]]  # the domain/range triples that support the gold


def _entity_chains(tax: Taxonomy, evidence: dict[str, dict[str, list]]) -> dict[str, list[list[str]]]:
    """Each entity's concept chains, from its most specific asserted or entailed types."""
    chains_of: dict[str, list[list[str]]] = {}
    for e, types in evidence.items():
        ts = set(types)
        most_specific = sorted(t for t in ts if not any(t in tax.ancestors(u) for u in ts if u != t))
        chains = [ch for t in most_specific for ch in tax.chains(t)]
        chains_of[e] = list({tuple(ch): ch for ch in chains}.values())
    return chains_of


def _supports(onto: Ontology, tax: Taxonomy, p: str, role: str) -> tuple[list[str], list[list[str]]]:
    """The concepts a fact of `p` supports for its subject (domains) or object (ranges),
    through superproperties, with the triples that say so."""
    supports, rules = [], []
    relation = RDFS_DOMAIN if role == "subject" else RDFS_RANGE
    for q in _closure_props(onto, p):
        qp = onto.properties.get(q)
        for c in ((qp.domain if role == "subject" else qp.range) if qp else []):
            if c in tax.labels:
                supports.append(c)
                rules.append([q, relation, c])
    return supports, rules


def _contexts(onto: Ontology, tax: Taxonomy, chains_of: dict[str, list[list[str]]],
              report: GenerationReport) -> list[_Context]:
    """Every (entity, sentence) context with a supported gold concept, in fact order."""
    raw: list[_Context] = []
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
            supports, rules = _supports(onto, tax, p, role)
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
            raw.append(_Context(entity, role, (s, p, o), sentence, chains, candidates, gold, rules))
    return raw


def generate_cic(onto: Ontology, *, seed: int = 0, per_entity: int = 10,
                 tax: Taxonomy | None = None) -> tuple[list[CiCItem], GenerationReport]:
    """CiC items from the facts of the ontology (see the module docstring)."""
    tax = tax or Taxonomy.of(onto)
    report = GenerationReport()
    evidence = entity_types(onto)
    raw = _contexts(onto, tax, _entity_chains(tax, evidence), report)
    sides = top_level_sides(onto, tax, seed)
    items: list[CiCItem] = []
    per: dict[str, int] = defaultdict(int)
    rng = random.Random(f"{seed}|cic")
    rng.shuffle(raw)
    for ctx in raw:
        side = side_of(tax, sides, ctx.candidates)
        if side is None:
            report.add("contexts skipped: the entity's chains span train and test top-level concepts")
            continue
        if per[ctx.entity] >= per_entity:
            report.add("contexts skipped: more than per_entity contexts for the entity")
            continue
        per[ctx.entity] += 1
        items.append(_cic_item(onto, tax, evidence, ctx, side))
    report.add("items", len(items))
    split_train_dev(items, seed=seed)
    for i, it in enumerate(sorted(items, key=lambda x: (x.split, x.group, x.sentence))):
        it.id = f"cic-{it.split}-{i:05d}"
    report.notes.append(sides_note(tax, sides))
    return items, report


def _cic_item(onto: Ontology, tax: Taxonomy, evidence: dict[str, dict[str, list]],
              ctx: _Context, side: str) -> CiCItem:
    """The item of a context, with the rules that make its gold concept the supported one."""
    context = {"rule": "rdfs2" if ctx.role == "subject" else "rdfs3",
               "triples": [list(ctx.fact), *ctx.rules]}
    direct = [r[2] for r in ctx.rules]
    if ctx.gold not in direct:  # the gold is a superconcept of what the context supports
        via = next(c for c in direct if ctx.gold in tax.up(c))
        context["then"] = {"rule": "rdfs9", "triples": [[via, RDFS_SUBCLASSOF + "*", ctx.gold]]}
    typing = {tax.text(ch[0]): evidence[ctx.entity][ch[0]][:3] for ch in ctx.chains}
    label = onto.instances[ctx.entity].label
    return CiCItem(
        id="", split="test" if side == "test" else "train", sentence=ctx.sentence,
        entity=label, mention=label,
        chains=[[tax.text(c) for c in ch] for ch in ctx.chains],
        candidates=[tax.text(c) for c in ctx.candidates], label=ctx.candidates.index(ctx.gold),
        provenance={"context": context, "chain_evidence": typing, "entity": ctx.entity,
                    "role": ctx.role,
                    "gold_level": min(ch.index(ctx.gold) for ch in ctx.chains if ctx.gold in ch)},
        group=ctx.entity)
