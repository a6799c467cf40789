"""The OntoProbe JSON pair (`class.json`, `property.json`) as a `Source`.

The pair is turned into triples through the model, so what the store holds is exactly
what the typed ontology says.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from kgprobe.errors import OntologyError
from kgprobe.ontology.from_triples import check_cycles
from kgprobe.ontology.model import (
    ONTOPROBE_NS,
    Instance,
    OntClass,
    Ontology,
    OntProperty,
)
from kgprobe.ontology.source import Source
from kgprobe.ontology.wording import word_labels

__all__ = ["ONTOPROBE_NS", "load_ontoprobe"]


def _mint(kind: str, label: str) -> str:
    return f"{ONTOPROBE_NS}{kind}/{quote(label.strip().replace(' ', '_'), safe='')}"


def _read_json(path: Path) -> list[dict]:
    if not path.is_file():
        raise OntologyError(f"{path}: missing; an OntoProbe ontology directory needs both "
                            "class.json and property.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise OntologyError(f"{path}: not valid JSON ({err}); fix or re-export the file") from None
    if not isinstance(data, list):
        raise OntologyError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def load_ontoprobe(directory: str | Path, name: str | None = None, word: bool = False,
                   names: tuple[str, ...] = ()) -> Source:
    """Load the OntoProbe pair (`class.json`, `property.json`).

    `class.json` lists each class's whole superclass chain, specific → general. Only the
    direct edge (the first element) is stored: the rest must follow from the parents'
    own chains, and every chain that does not is reported in `Ontology.warnings`.
    `word`: labels as an English prompt writes them (`wording.word_labels`); off by default,
    as the files write them: an OntoProbe folder is curated prompt text, and the paper's
    reference sets, its memorizing records and the score cache every study shares are
    written in those labels. `names`: phrases worded labels keep as written
    (`wording.keep_names`).
    """
    directory = Path(directory)
    classes_raw = _read_json(directory / "class.json")
    props_raw = _read_json(directory / "property.json")
    onto = Ontology(name=name or directory.name)
    try:
        class_by_label = _ontoprobe_classes(onto, classes_raw)
        _ontoprobe_properties(onto, props_raw, class_by_label)
    except (KeyError, TypeError, AttributeError) as err:
        raise OntologyError(f"{directory}: unexpected record layout ({err!r}); expected the "
                            "OntoProbe class.json/property.json schema") from None
    check_cycles(onto)
    if word:  # the triples below carry the labels as prompts write them
        word_labels(onto, names)
    return Source(onto.name, str(directory), onto, list(onto.triples()))


def _ontoprobe_classes(onto: Ontology, records: list[dict]) -> dict[str, str]:
    """Add the classes and typed instances; return the label → class IRI index."""
    by_label: dict[str, str] = {}
    for rec in records:
        iri, label = rec["rdfs:Class"], rec["rdfs:label"]
        onto.classes[iri] = OntClass(iri, label)
        by_label[label] = iri
    chains: dict[str, list[str]] = {r["rdfs:label"]: list(r["rdfs:subClassOf"] or []) for r in records}
    minted: set[str] = set()

    def class_iri(label: str) -> str:
        if label not in by_label:
            by_label[label] = _mint("class", label)
            onto.classes[by_label[label]] = OntClass(by_label[label], label)
            minted.add(label)
        return by_label[label]

    for rec in records:
        chain = chains[rec["rdfs:label"]]
        cls = onto.classes[rec["rdfs:Class"]]
        if chain:
            cls.parents.append(class_iri(chain[0]))
        # A class known only from chains gets its direct superclass from the chain too.
        for here, above in zip(chain, chain[1:]):
            if here in minted and not onto.classes[class_iri(here)].parents:
                onto.classes[class_iri(here)].parents.append(class_iri(above))
        for inst_label in rec["is rdf:type of"] or []:
            iri = _mint("instance", inst_label)
            inst = onto.instances.setdefault(iri, Instance(iri, inst_label))
            if cls.iri not in inst.types:
                inst.types.append(cls.iri)
    if minted:
        onto.warnings.append(f"{len(minted)} superclass label(s) name no class in class.json, "
                             f"minted: {', '.join(sorted(minted))}")
    # The chain the direct edges imply, compared with the one the data lists.
    for label, chain in chains.items():
        implied = _first_parent_chain(onto.classes, by_label[label])
        if implied != chain:
            onto.warnings.append(f"class '{label}': listed chain {chain} does not follow from "
                                 f"its direct superclass, which implies {implied}")
    return by_label


def _ontoprobe_properties(onto: Ontology, records: list[dict], by_label: dict[str, str]) -> None:
    prop_by_label: dict[str, OntProperty] = {}
    for rec in records:
        iris = _as_list(rec["rdf:Property"])
        # Prefer the DBpedia IRI the data carries; the others are kept as equivalents.
        iris.sort(key=lambda i: "dbpedia.org" not in i)
        prop = OntProperty(iris[0], rec["rdfs:label"], pattern=rec.get("pattern"),
                           same_as=iris[1:])
        prop_by_label[prop.label] = prop
        onto.properties[prop.iri] = prop
    minted_classes: list[str] = []
    for rec in records:
        prop = prop_by_label[rec["rdfs:label"]]
        for key, target in (("rdfs:domain", prop.domain), ("rdf:range", prop.range)):
            for label in _as_list(rec.get(key)):
                if label not in by_label:
                    by_label[label] = _mint("class", label)
                    onto.classes[by_label[label]] = OntClass(by_label[label], label)
                    minted_classes.append(label)
                target.append(by_label[label])
        # property.json gives each property the flat set of its superproperties (not a
        # chain: 'part of' follows 'affiliation' in one and precedes it in another).
        for sup_label, pattern in (rec.get("rdfs:subPropertyOf") or {}).items():
            if sup_label not in prop_by_label:
                sup = OntProperty(_mint("property", sup_label), sup_label, pattern=pattern)
                prop_by_label[sup_label] = sup
                onto.properties[sup.iri] = sup
            prop.parents.append(prop_by_label[sup_label].iri)
        for subj, obj in rec.get("example") or []:
            s, o = _mint("instance", subj), _mint("instance", obj)
            onto.instances.setdefault(s, Instance(s, subj))
            onto.instances.setdefault(o, Instance(o, obj))
            onto.facts.append((s, prop.iri, o))
    if minted_classes:
        onto.warnings.append(f"domain/range label(s) name no class in class.json, minted: "
                             f"{', '.join(sorted(set(minted_classes)))}")


def _first_parent_chain(table: dict, iri: str) -> list[str]:
    """Labels along first parents: the chain a direct edge implies."""
    implied, seen = [], set()
    while table[iri].parents and iri not in seen:
        seen.add(iri)
        iri = table[iri].parents[0]
        implied.append(table[iri].label)
    return implied
