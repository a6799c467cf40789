"""The reference `ontology.prune` is tested against: the walk of every path it used before
`ontology.hierarchy` (exponential on deep hierarchies, so only for small ones) and the
repeated passes that spread datatypes. Kept verbatim in behaviour, so that a test can
check the polynomial algorithms give the very same model, order included."""

from __future__ import annotations


def bypass(iri: str, parents: dict[str, list[str]], excluded, seen: frozenset[str] = frozenset()
           ) -> list[str]:
    """The nearest kept ancestors of `iri` (itself when kept), by walking every path."""
    if iri not in excluded:
        return [iri]
    if iri in seen:
        return []
    out: list[str] = []
    for parent in parents.get(iri, []):
        out.extend(p for p in bypass(parent, parents, excluded, seen | {iri}) if p not in out)
    return out


def lift(iris: list[str], parents: dict[str, list[str]], excluded, own: str = "") -> list[str]:
    return list(dict.fromkeys(p for i in iris for p in bypass(i, parents, excluded) if p != own))


def reconnect(onto, excluded: dict[str, str]) -> None:
    """`prune._reconnect` as it was: every edge lifted by walking every path."""
    class_parents = {i: c.parents for i, c in onto.classes.items()}
    prop_parents = {i: p.parents for i, p in onto.properties.items()}
    emptied = onto.emptied
    for c in onto.classes.values():
        had = bool(c.parents)
        c.parents = lift(c.parents, class_parents, excluded, c.iri)
        emptied["subClassOf"] += had and not c.parents and c.iri not in excluded
    for p in onto.properties.values():
        had = (bool(p.domain), bool(p.range))
        p.parents = lift(p.parents, prop_parents, excluded, p.iri)
        p.domain, p.range = lift(p.domain, class_parents, excluded), lift(p.range, class_parents, excluded)
        if p.iri not in excluded:
            emptied["domain"] += had[0] and not p.domain
            emptied["range"] += had[1] and not p.range
    for i in onto.instances.values():
        i.types = sorted(lift(i.types, class_parents, excluded))
        emptied["type"] += not i.types and i.iri not in excluded


def spread_datatypes(onto, out: dict[str, str]) -> None:
    """`prune._spread_datatypes` as it was: a pass over every class until nothing changes."""
    datatypes = {i for i, r in out.items() if r == "datatype"}
    changed = True
    while changed:
        changed = False
        for iri, c in onto.classes.items():
            if iri not in datatypes and datatypes.intersection(c.parents):
                datatypes.add(iri)
                out[iri] = "datatype"
                changed = True
