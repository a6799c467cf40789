"""Taking excluded terms out of a built model: which terms go, and the edges around them.

`from_triples.build_ontology` builds every class, property and instance it finds, then asks
this module to remove those that are not words or answers (the reasons are `exclusions`'),
reconnecting each edge to a removed term to its nearest kept ancestors, so that no entailment
is lost, and counting what went, so that `kg load` and both `generate` commands report one count.
"""

from __future__ import annotations

from collections import defaultdict, deque

from kgprobe.ontology.exclusions import (
    ADJECTIVE,
    GROUPING,
    ANNOTATION,
    DEPRECATED,
    ID_LIKE,
    LONG_LABEL,
    ROOT,
    VOCABULARY_CLASS,
    WHY,
    Exclusions,
    share_roots,
    vocabulary_classes,
)
from kgprobe.ontology.hierarchy import nearest_kept
from kgprobe.ontology.labels import MAX_LABEL_CHARS, is_adjective_label, is_grouping_label
from kgprobe.ontology.model import OWL_OBJECT_PROPERTY, Ontology
from kgprobe.ontology.skos import VOCABULARY_TYPES

#: A property declared an object property is a relation, even when it is an annotation
#: property too (punning: PROV-O's wasRevisionOf). A datatype property the list calls an
#: annotation stays one: its values are texts about a term (QUDT declares dcterms:description
#: an owl:DatatypeProperty, and "description" was a property candidate).
RELATIONS = frozenset({OWL_OBJECT_PROPERTY})
_PLURAL = {"class": "classes", "property": "properties"}


def exclude_terms(onto: Ontology, types: dict[str, set[str]], exclusions: Exclusions,
                  deprecated: set[str], kept: frozenset[str], adjectives: bool) -> None:
    """Take excluded terms out of the model, reconnecting around them, and count them.
    Facts using an excluded property or naming an excluded term go too (an annotation
    property's values are not facts about things)."""
    excluded = _excluded_terms(onto, types, exclusions, deprecated, kept, adjectives)
    if not excluded:
        return
    onto.facts = [t for t in onto.facts
                  if t[0] not in excluded and t[1] not in excluded and t[2] not in excluded]
    _reconnect(onto, excluded)
    _remove(onto, excluded)


def _excluded_terms(onto: Ontology, types: dict[str, set[str]], exclusions: Exclusions,
                    deprecated: set[str], kept: frozenset[str],
                    adjectives: bool) -> dict[str, str]:
    """iri → reason for every class, property and instance that is not a word or answer."""
    out: dict[str, str] = {}
    for table in (onto.classes, onto.properties, onto.instances):
        for iri, term in table.items():
            reason = exclusions.reason(iri, types.get(iri, set()))
            if reason in kept or (reason == ANNOTATION and (
                    table is not onto.properties or types.get(iri, set()) & RELATIONS)):
                # dcterms:Location is a class, dcterms:title an annotation; PROV-O's
                # wasRevisionOf, an object property too, a relation
                reason = None
            if reason is None:
                reason = _unusable(iri, term.label, deprecated, adjectives and (
                    table is onto.classes or table is onto.instances and _phrase(term.label)))
            if reason is None and _grouping(table, onto, term.label, adjectives):
                reason = GROUPING
            if reason is not None:
                out.setdefault(iri, reason)
    _spread_datatypes(onto, out)
    parents = {i: c.parents for i, c in onto.classes.items()}
    for iri in vocabulary_classes(parents, VOCABULARY_TYPES):
        out.setdefault(iri, VOCABULARY_CLASS)
    if ROOT not in kept:  # a root above nearly every class answers nearly every question
        labels = {i: c.label for i, c in onto.classes.items() if c.label}
        listed = {i for i, why in out.items() if why == ROOT}
        for iri in share_roots(parents, out, labels, listed):
            out[iri] = ROOT
    return out


def _phrase(label: str | None) -> bool:
    """An individual's label written as a phrase, not a name: lower case throughout or after
    its first word (BIBO's status "peer reviewed", never a title such as "Frozen"), so an
    adjective there is no subject of "[X] is a ___"."""
    words = (label or "").split()
    return bool(words) and (label.islower() or len(words) > 1 and words[-1].islower())


def _unusable(iri: str, label: str, deprecated: set[str], adjectives: bool) -> str | None:
    """Why a term the exclusion list keeps is still no word or answer, if it is not."""
    if iri in deprecated:
        return DEPRECATED
    if not label:
        return ID_LIKE
    if len(label) > MAX_LABEL_CHARS:
        return LONG_LABEL
    if adjectives and is_adjective_label(label):
        return ADJECTIVE
    return None


def _grouping(table, onto: Ontology, label: str | None, adjectives: bool) -> bool:
    """An English class label of a grouping class (`labels.is_grouping_label`)."""
    return adjectives and table is onto.classes and bool(label) and is_grouping_label(label)


def _spread_datatypes(onto: Ontology, out: dict[str, str]) -> None:
    """Subclasses of a datatype are datatypes (schema:URL ⊑ schema:Text).

    They are marked in the order that repeated passes over the classes would mark them (a
    class in the same pass as its datatype parent when that parent comes first, else in the
    next pass), found by one 0-1 breadth-first search instead of a pass per level."""
    datatypes = {i for i, r in out.items() if r == "datatype"}
    if not datatypes:
        return
    position = {iri: n for n, iri in enumerate(onto.classes)}
    children: dict[str, list[str]] = defaultdict(list)
    for iri, c in onto.classes.items():
        if iri not in datatypes:
            for parent in dict.fromkeys(c.parents):
                children[parent].append(iri)
    passes = {v: 1 for d in datatypes for v in children.get(d, ())}
    queue = deque((1, v) for v in passes)
    while queue:
        n, u = queue.popleft()
        if n > passes[u]:
            continue
        for v in children.get(u, ()):
            later = position[u] > position[v]
            if n + later < passes.get(v, n + 2):
                passes[v] = n + later
                (queue.append if later else queue.appendleft)((n + later, v))
    for iri in sorted(passes, key=lambda i: (passes[i], position[i])):
        out[iri] = "datatype"


def _lifted(iris: list[str], nearest: dict[str, tuple[str, ...]], excluded: dict[str, str],
            own: str = "") -> list[str]:
    """`iris` with each excluded term replaced by its nearest kept ancestors, each once."""
    return list(dict.fromkeys(p for i in iris
                              for p in (nearest.get(i, ()) if i in excluded else (i,))
                              if p != own))


def _reconnect(onto: Ontology, excluded: dict[str, str]) -> None:
    """Every edge to an excluded term lifted to its kept ancestors (`hierarchy.nearest_kept`,
    each excluded term's found once: 150k instances share a few classes, and a deep hierarchy
    has exponentially many paths); a kept term whose relation this leaves empty is counted in
    `onto.emptied`."""
    classes = nearest_kept({i: c.parents for i, c in onto.classes.items()}, excluded)
    props = nearest_kept({i: p.parents for i, p in onto.properties.items()}, excluded)
    emptied = onto.emptied
    for c in onto.classes.values():
        had = bool(c.parents)
        c.parents = _lifted(c.parents, classes, excluded, c.iri)
        emptied["subClassOf"] += had and not c.parents and c.iri not in excluded
    for p in onto.properties.values():
        had = (bool(p.domain), bool(p.range))
        p.parents = _lifted(p.parents, props, excluded, p.iri)
        p.domain = _lifted(p.domain, classes, excluded)
        p.range = _lifted(p.range, classes, excluded)
        if p.iri not in excluded:
            emptied["domain"] += had[0] and not p.domain
            emptied["range"] += had[1] and not p.range
    for i in onto.instances.values():
        i.types = sorted(_lifted(i.types, classes, excluded))
        emptied["type"] += not i.types and i.iri not in excluded


def _remove(onto: Ontology, excluded: dict[str, str]) -> None:
    """The excluded terms deleted from the model, recorded, and counted in one warning per
    reason."""
    counts: dict[str, dict[str, int]] = {}
    for kind, table in (("class", onto.classes), ("property", onto.properties),
                        ("instance", onto.instances)):
        for iri in [i for i in table if i in excluded]:
            onto.excluded_terms[iri] = (kind, table[iri].label)  # listed in excluded.tsv
            del table[iri]
            reason = counts.setdefault(excluded[iri], {})
            reason[kind] = reason.get(kind, 0) + 1
    onto.excluded.update(excluded)
    onto.excluded_counts.update(counts)
    for reason, by_kind in sorted(counts.items()):
        what = ", ".join(f"{n} {_PLURAL.get(k, k + 's') if n > 1 else k}"
                         for k, n in by_kind.items())
        onto.warnings.append(f"skipped {what}: {WHY.get(reason, reason + ' terms')}")
