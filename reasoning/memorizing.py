"""Memorizing tasks (TP, SCO, SPO, DM, RG) from an ontology, and the paper's reference sets.

Every task is a cloze: a subject, a masked relation, gold answers ordered specific → general,
ranked among a candidate set (every class label, or every property label).
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable

from kgprobe.errors import KgprobeError
from kgprobe.ontology.model import Ontology
from kgprobe.ontology.verbalize import default_pattern, normalize_label, pattern_middle
from kgprobe.reasoning.homonyms import HOMONYM, OUTSIDE, contradicting, prompt_key

#: Task name → the relation it probes (file names follow the paper's relation names).
TASKS = {"TP": "type", "SCO": "subClassOf", "SPO": "subPropertyOf", "DM": "domain", "RG": "range"}
RELATIONS = tuple(TASKS.values())
CANDIDATES = {"type": "class", "subClassOf": "class", "subPropertyOf": "property",
              "domain": "class", "range": "class"}
#: The paper keeps 10 training and 10 development records per task.
TRAIN, DEV = 10, 10


@dataclass
class MemorizingRecord:
    id: str
    task: str  # relation name: type, subClassOf, subPropertyOf, domain, range
    subject: str
    subject_iri: str | None
    answers: list[str]  # candidate-normalized labels, specific → general
    split: str
    answer_iris: list[str] = field(default_factory=list)
    pattern: str | None = None  # for property subjects: how the property is verbalized
    #: the subject label's parenthetical ("unit of temporal duration"), never in the prompt
    disambiguator: str | None = None

    def to_json(self) -> dict:
        # "" for no disambiguator: every file has the same string column (datasets reads them
        # as one table; a column null in one file and a string in another cannot be joined).
        out = {k: v for k, v in asdict(self).items() if v is not None}
        return {**out, "disambiguator": self.disambiguator or ""}


def relation_name(task: str) -> str:
    """Accept both the paper's task names (TP, SCO, …) and relation names (type, …)."""
    if task in TASKS:
        return TASKS[task]
    if task in RELATIONS:
        return task
    raise KgprobeError(f"unknown memorizing task '{task}'; use one of "
                       f"{', '.join(list(TASKS) + list(RELATIONS))}")


def ancestors(start: str, parents: dict[str, list[str]]) -> list[str]:
    """Every ancestor of `start`, specific → general (cycles terminate).

    Nearer ancestors come first. A store keeps no order among the several direct parents
    of one term (RDF has none), so ancestors at the same distance are ordered by IRI.
    """
    depth: dict[str, int] = {}
    queue = deque((p, 1) for p in parents.get(start, []))
    while queue:
        node, d = queue.popleft()
        if node in depth or node == start:
            continue
        depth[node] = d
        queue.extend((p, d + 1) for p in parents.get(node, []))
    return sorted(depth, key=lambda n: (depth[n], n))


def direct_parents(parents: dict[str, list[str]]) -> dict[str, list[str]]:
    """The parents that no other parent lies below: a store holding the RDFS closure lists
    every ancestor as a parent, and without this they would all read as "nearest".

    A parent p of n is dropped when another parent q has p as an ancestor (and p is not in
    turn an ancestor of q: members of a cycle are kept).
    """
    @functools.cache
    def above(node: str) -> frozenset[str]:
        seen: set[str] = set()
        queue = deque(parents.get(node, []))
        while queue:
            x = queue.popleft()
            if x not in seen:
                seen.add(x)
                queue.extend(parents.get(x, []))
        return frozenset(seen)

    out = {}
    for node, ps in parents.items():
        if len(ps) < 2:
            out[node] = list(ps)
            continue
        out[node] = [p for p in ps if p != node and not any(
            q != p and q != node and p in above(q) and q not in above(p) for q in ps)]
    return out


def candidate_sets(onto: Ontology) -> dict[str, list[str]]:
    """The candidate labels per kind, normalized and deduplicated, in a stable order."""
    def unique(labels: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(normalize_label(x) for x in labels if normalize_label(x)))

    return {
        "class": unique(sorted(c.label for c in onto.classes.values())),
        "property": unique(sorted(p.label for p in onto.properties.values())),
        "property_pattern": unique(sorted(
            pattern_middle(p.pattern or default_pattern(p.label)) for p in onto.properties.values())),
    }


def _type_rows(onto: Ontology, class_ancestors, *, seed: int,
               instances_per_class: int | None, skipped: Counter) -> list[tuple]:
    """TP rows: one per instance and most specific type; instances sharing a label are one
    (the first by IRI), and at most `instances_per_class` seeded instances per type."""
    rows: list[tuple[str, str, list[str], str | None]] = []
    seen: set[str] = set()
    for inst in sorted(onto.instances.values(), key=lambda i: (i.label, i.iri)):
        if inst.label in seen:
            skipped["type: instance sharing another's label"] += 1
            continue
        seen.add(inst.label)
        types = set(inst.types)
        implied = {a for t in types for a in class_ancestors(t)}
        for t in sorted(types - implied, key=onto.label):
            rows.append((inst.label, inst.iri, [t, *class_ancestors(t)], None))
    if instances_per_class is None:
        return rows
    by_class: dict[str, list[int]] = {}
    for n, row in enumerate(rows):
        by_class.setdefault(row[2][0], []).append(n)
    rng = random.Random(seed)
    keep = sorted(n for cls in sorted(by_class) for n in (
        by_class[cls] if len(by_class[cls]) <= instances_per_class
        else rng.sample(by_class[cls], instances_per_class)))
    skipped["type: beyond --instances-per-class"] += len(rows) - len(keep)
    return [rows[n] for n in keep]


def generate_memorizing(onto: Ontology, tasks: Iterable[str] = RELATIONS, *, seed: int = 0,
                        train: float = TRAIN, dev: float = DEV,
                        instances_per_class: int | None = None,
                        skipped: Counter | None = None) -> dict[str, list[MemorizingRecord]]:
    """Records per relation, with a seeded train/dev/test split (train/dev sizes, or
    fractions below 1, configurable).

    Types and superclasses come from the model's edges, reduced to the direct ones, so a
    store holding the inferred graph and one without give the same answers in the same
    order. An instance with several most specific types yields one TP record per type
    chain, as the paper's files do. What is left out is counted in `skipped`.
    """
    skipped = Counter() if skipped is None else skipped
    for relation, n in onto.emptied.items():
        if n:
            skipped[f"{relation}: only excluded answers"] += n
    class_parents = direct_parents({iri: c.parents for iri, c in onto.classes.items()})
    prop_parents = direct_parents({iri: p.parents for iri, p in onto.properties.items()})
    class_ancestors = functools.cache(lambda c: tuple(ancestors(c, class_parents)))
    out: dict[str, list[MemorizingRecord]] = {}
    for relation in (relation_name(t) for t in tasks):
        if relation == "type":
            rows = _type_rows(onto, class_ancestors, seed=seed,
                              instances_per_class=instances_per_class, skipped=skipped)
        elif relation in ("subClassOf", "subPropertyOf"):
            rows = (_hierarchy_rows(onto.classes, class_parents) if relation == "subClassOf"
                    else _hierarchy_rows(onto.properties, prop_parents))
        else:
            rows = _domain_range_rows(onto, relation)
        if onto.namespaces:
            rows = _namespaced(onto, relation, rows, skipped)
        records = _records(relation, rows, onto.label, skipped)
        records = _without_homonyms(relation, records, skipped)
        for r in records:
            term = onto.classes.get(r.subject_iri) or onto.instances.get(r.subject_iri)
            r.disambiguator = getattr(term, "disambiguator", None)
        assign_splits(records, seed=seed, train=train, dev=dev)
        out[relation] = records
    return out


def _namespaced(onto: Ontology, relation: str, rows: list[tuple],
                skipped: Counter) -> list[tuple]:
    """`--namespace`: rows about the ontology's own terms, each with its own answers only (an
    imported superclass is left out of the chain); a row left with none is counted."""
    out = []
    for subject, iri, chain, pattern in rows:
        chain = [a for a in chain if onto.in_namespace(a)]
        if onto.in_namespace(iri) and chain:
            out.append((subject, iri, chain, pattern))
    if len(out) < len(rows):
        skipped[f"{relation}: {OUTSIDE}"] += len(rows) - len(out)
    return out


def _without_homonyms(relation: str, records: list[MemorizingRecord],
                      skipped: Counter) -> list[MemorizingRecord]:
    """The records less those whose prompt reads as another term's with other answers
    (`reasoning.homonyms`): the subject's label is a prompt's words, and a domain or range
    prompt's its wording too ("One has to be a [MASK] if one has member something .")."""
    keys = [lambda r: prompt_key(r.subject)]
    if relation in ("domain", "range"):
        keys.append(lambda r: prompt_key(pattern_middle(r.pattern or default_pattern(r.subject))))
    gone = {id(r) for key in keys for r in contradicting(
        records, prompt=key, gold=lambda r: tuple(r.answers), term=lambda r: r.subject_iri)}
    if not gone:
        return records
    skipped[f"{relation}: {HOMONYM}"] += len(gone)
    kept = [r for r in records if id(r) not in gone]
    for n, r in enumerate(kept):
        r.id = f"{relation}-{n:05d}"
    return kept


def _hierarchy_rows(table: dict, parents: dict[str, list[str]]) -> list[tuple]:
    """SCO / SPO rows: each term with its (direct, then further) ancestors."""
    rows = []
    for iri in sorted(table, key=lambda i: (table[i].label, i)):
        chain = ancestors(iri, parents)
        if chain:
            rows.append((table[iri].label, iri, chain, getattr(table[iri], "pattern", None)))
    return rows


def _domain_range_rows(onto: Ontology, relation: str) -> list[tuple]:
    """Domain or range rows: each property with its declared classes."""
    rows = []
    for prop in sorted(onto.properties.values(), key=lambda p: (p.label, p.iri)):
        targets = prop.domain if relation == "domain" else prop.range
        if targets:
            rows.append((prop.label, prop.iri, list(targets), prop.pattern))
    return rows


def _records(relation: str, rows: list[tuple], label: Callable[[str], str],
             skipped: Counter) -> list[MemorizingRecord]:
    """The records of `rows`, less those left without an answer (a superterm written as its
    own subject) or with text that is no words; both counted in `skipped`."""
    records = [
        MemorizingRecord(
            id=f"{relation}-{n:05d}", task=relation, subject=subject, subject_iri=iri,
            answers=list(dict.fromkeys(normalize_label(label(a)) for a in chain)),
            split="test", answer_iris=chain,
            pattern=(pattern or default_pattern(subject)) if relation in
            ("subPropertyOf", "domain", "range") else None)
        for n, (subject, iri, chain, pattern) in enumerate(rows)
    ]
    if relation in ("subClassOf", "subPropertyOf"):
        _drop_selfsame(records, label)
    selfsame = sum(not r.answers for r in records)
    if selfsame:
        skipped[f"{relation}: answer is its own subject"] += selfsame
    worded = [r for r in records if r.answers and not any(
        "://" in t or "_" in t for t in (r.subject, *r.answers))]
    if len(worded) < len(records):  # a safety net: labels are made hygienic when read
        skipped[f"{relation}: IRI or underscore in the text"] += \
            len(records) - len(worded) - selfsame
        records = worded
        for n, r in enumerate(records):
            r.id = f"{relation}-{n:05d}"
    return records


def _drop_selfsame(records: list[MemorizingRecord], label: Callable[[str], str]) -> None:
    """A superterm written as its own subject is no answer ("first implies first"). Only
    in the hierarchies: the property "architect" with the range "architect" is two terms."""
    for r in records:
        subject = normalize_label(r.subject)
        if subject in r.answers:
            r.answers = [a for a in r.answers if a != subject]
            r.answer_iris = [a for a in r.answer_iris if normalize_label(label(a)) != subject]


def split_sizes(n: int, train: float, dev: float) -> tuple[int, int]:
    """Train and dev sizes for `n` records: counts, or fractions of `n` when below 1.

    Counts scale down where they would leave fewer test records than train and dev ones
    (a 15-class ontology's 14 SCO records under 10,10 leave no test split at all): then
    train and dev are each at most ``n // 4``, so the test split keeps at least half of the
    records. A relation with ``2 * (train + dev)`` records or more is split as asked (every
    relation of the bundled ontology is)."""
    def size(x: float) -> int:
        return int(round(x * n)) if 0 < x < 1 else int(x)

    sizes = size(train), size(dev)
    if max(train, dev) >= 1 and n < 2 * sum(sizes):
        sizes = tuple(min(x, n // 4) for x in sizes)
    return sizes


def scaled_splits(records: dict[str, list], train: float, dev: float) -> dict[str, list[int]]:
    """relation → [train, dev] for the relations whose counts `split_sizes` scaled down."""
    asked = split_sizes(10 ** 9, train, dev)
    return {relation: list(got) for relation, recs in records.items()
            if recs and (got := split_sizes(len(recs), train, dev)) != asked
            and not any(0 < x < 1 for x in (train, dev))}


def empty_splits(records: dict[str, list[MemorizingRecord]]) -> dict[str, list[str]]:
    """relation → the splits that got no record (a test split of 0 measures nothing)."""
    out = {}
    for relation, recs in records.items():
        empty = [s for s in ("train", "dev", "test") if not any(r.split == s for r in recs)]
        if empty and recs:
            out[relation] = empty
    return out


def assign_splits(records: list[MemorizingRecord], *, seed: int, train: float,
                  dev: float) -> None:
    """Seeded split: `train` records for training, `dev` for development, the rest test."""
    train, dev = split_sizes(len(records), train, dev)
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    for rank, idx in enumerate(order):
        records[idx].split = "train" if rank < train else "dev" if rank < train + dev else "test"


# ------------------------------------------------------------------ the paper's reference sets


def reference_dir() -> Path:
    return Path(str(resources.files("kgprobe.ontology") / "data" / "memorizing"))


def load_reference(relation: str) -> list[MemorizingRecord]:
    """The OntoProbe paper's memorizing set for a relation, in file order.

    Records 0–9 are train, 10–19 dev and the rest test: the paper's split, which cannot be
    derived from the ontology because the files are a shuffle of it.
    """
    relation = relation_name(relation)
    return [MemorizingRecord(id=f"{relation}-ref-{n:05d}", task=relation, subject=subject,
                             subject_iri=None, answers=list(answers), split=split, pattern=pattern)
            for n, (subject, answers, split, pattern) in enumerate(_reference_rows(relation))]


@functools.lru_cache(maxsize=None)
def _reference_rows(relation: str) -> tuple[tuple[str, tuple[str, ...], str, str | None], ...]:
    """(subject, normalized answers, split, pattern) of each line of a bundled set: the files
    never change, so a process parses each once (a test session asks them dozens of times);
    `load_reference` builds new records from them on every call, which callers may change."""
    rows = []
    path = reference_dir() / f"{relation}.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        rec = json.loads(line)
        subject, answers, pattern = rec["uuu"], rec["xxx"], None
        if isinstance(subject, dict):  # property subjects: {label: pattern}
            (subject, pattern), = subject.items()
        if isinstance(answers, dict):  # SPO answers: {label: pattern}
            answers = list(answers)
        split = "train" if n < TRAIN else "dev" if n < TRAIN + DEV else "test"
        rows.append((subject, tuple(normalize_label(a) for a in answers), split, pattern))
    return tuple(rows)
