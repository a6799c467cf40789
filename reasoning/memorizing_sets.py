"""Memorizing probe sets ready to score: records, their candidate labels, template metas.

The paper's bundled sets, sets written by `kgprobe generate memorizing`, and sets generated
from any ontology. Shared by the memorization study and premise classification in the
premise-ablation study (so neither study imports the other).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from kgprobe.errors import KgprobeError
from kgprobe.ontology.languages import prompt_language
from kgprobe.ontology.loaders import bundled_source
from kgprobe.ontology.model import Ontology
from kgprobe.ontology.verbalize import (
    default_pattern,
    load_templates,
    normalize_label,
    property_meta,
)
from kgprobe.reasoning.memorizing import (
    RELATIONS,
    MemorizingRecord,
    candidate_sets,
    generate_memorizing,
    load_reference,
    relation_name,
)

#: The paper evaluates TP and SCO on test records 20–519 and the other tasks on all of them.
PAPER_LIMITS = {"type": 500, "subClassOf": 500}


@dataclass
class MemorizingSet:
    relation: str
    records: list[MemorizingRecord]
    candidates: list[str]
    metas: Mapping[str, Mapping]  # record id → meta fields for its template (domain/range prompts)
    lang: str = "en"  # the language its labels are in, so its prompts use that language's templates


class LazyMetas(Mapping):
    """Record id → its meta fields, computed for the whole set when a template first reads a
    field. Why lazy: only the domain and range templates read them, and computing them words
    every record's subject as a property (spaCy's tagger, loaded for it); a subClassOf set
    of 3,000 class labels loaded and ran the tagger for nothing. `get(id)` hands out a view
    whose first read computes every record's fields in one batch, as computing them at once
    did; the values are the same."""

    def __init__(self, compute: Callable[[], dict[str, dict]], ids: Sequence[str]) -> None:
        self._compute: Callable[[], dict[str, dict]] | None = compute
        self._ids = list(dict.fromkeys(ids))
        self._known = set(self._ids)
        self._metas: dict[str, dict] = {}

    def computed(self) -> dict[str, dict]:
        """Every record's fields (computed now if no template has read one yet)."""
        if self._compute is not None:
            self._metas, self._compute = self._compute(), None
        return self._metas

    def __getitem__(self, rid: str) -> Mapping:
        if rid not in self._known:
            raise KeyError(rid)
        return _RecordMetas(self, rid)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class _RecordMetas(Mapping):
    """One record's meta fields, read from `LazyMetas.computed` on first use."""

    def __init__(self, metas: LazyMetas, rid: str) -> None:
        self._metas, self._rid = metas, rid

    def __getitem__(self, key: str) -> str:
        return self._metas.computed()[self._rid][key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._metas.computed()[self._rid])

    def __len__(self) -> int:
        return len(self._metas.computed()[self._rid])


def lazy_property_metas(records: Sequence[MemorizingRecord], onto: Ontology) -> LazyMetas:
    """`_property_metas`, computed when a template first reads a field (`LazyMetas`)."""
    return LazyMetas(lambda: _property_metas(records, onto), [r.id for r in records])


def _property_metas(records: Sequence[MemorizingRecord], onto: Ontology) -> dict[str, dict]:
    from kgprobe.ontology.wording import normalize_spaces, tag_all

    by_label = {normalize_label(p.label): p for p in onto.properties.values()}
    # `default_pattern` tags each subject's label; one batch for all of them is several
    # times faster than one tagger call per record (thousands in the paper's sets)
    tag_all(normalize_spaces(rec.subject) for rec in records if not rec.pattern)
    metas = {}
    for rec in records:
        prop = by_label.get(normalize_label(rec.subject))
        dom = onto.label(prop.domain[0]) if prop and prop.domain else None
        rng = onto.label(prop.range[0]) if prop and prop.range else None
        metas[rec.id] = property_meta(rec.pattern or default_pattern(rec.subject),
                                      dom and normalize_label(dom), rng and normalize_label(rng))
    return metas


def reference_sets(tasks: Sequence[str] = RELATIONS) -> dict[str, MemorizingSet]:
    """The paper's sets over the bundled ontology's candidate labels, as its files write
    them (not worded: the paper's records name them so)."""
    onto = bundled_source(word=False).ontology
    cands, kinds = candidate_sets(onto), load_templates()
    out = {}
    for relation in (relation_name(t) for t in tasks):
        records = load_reference(relation)
        base = cands[kinds[relation].candidates]
        # A few gold labels of the paper's files name no class of class.json ('Legal Case'):
        # they join the candidates so every item stays answerable.
        known = set(base)
        extra = [a for r in records for a in r.answers if a not in known]
        out[relation] = MemorizingSet(relation, records, base + list(dict.fromkeys(extra)),
                                      lazy_property_metas(records, onto))
    return out


def worded_reference_sets(tasks: Sequence[str] = RELATIONS) -> dict[str, MemorizingSet]:
    """The paper's sets in the labels the default protocol writes the bundled ontology in
    (`bundled_source(word=True)`): each subject, gold and candidate that names a class or
    property by its label as the files write it is renamed to its worded label, term by
    term, so soft templates train on the words the items ask about and the frequency
    baseline counts the golds under the names its candidates carry."""
    from dataclasses import replace

    plain, worded = bundled_source(word=False).ontology, bundled_source(word=True).ontology
    rename = {normalize_label(term.label): normalize_label(other[iri].label)
              for terms, other in ((plain.classes, worded.classes),
                                   (plain.properties, worded.properties))
              for iri, term in terms.items() if term.label and iri in other}

    def new(label: str) -> str:
        return rename.get(label, label)

    out = {}
    for relation, mset in reference_sets(tasks).items():
        records = [replace(r, subject=r.subject if relation == "type" else new(r.subject),
                           answers=[new(a) for a in r.answers]) for r in mset.records]
        out[relation] = replace(mset, records=records,
                                candidates=list(dict.fromkeys(new(c) for c in mset.candidates)),
                                metas=lazy_property_metas(records, worded))
    return out


def generated_sets(directory: str | Path, tasks: Sequence[str] = RELATIONS) -> dict[str, MemorizingSet]:
    """Sets written by `kgprobe generate memorizing`."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise KgprobeError(f"{directory}: is a file, not a folder of probe sets; pass the folder "
                           "`kgprobe generate memorizing --out DIR` wrote")
    try:
        cands = json.loads((directory / "candidates.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KgprobeError(f"{directory}: no candidates.json; write the set with "
                           "`kgprobe generate memorizing --out DIR`") from None
    kinds = load_templates(lang=_set_language(directory))
    out = {}
    for relation in (relation_name(t) for t in tasks):
        path = directory / f"{relation}.jsonl"
        if not path.exists():
            continue
        records = [MemorizingRecord(**json.loads(line))
                   for line in path.read_text(encoding="utf-8").splitlines()]
        metas = LazyMetas(functools.partial(_template_metas, kinds, records),
                          [r.id for r in records])
        out[relation] = MemorizingSet(relation, records, cands[kinds[relation].candidates], metas,
                                      kinds.lang)
    return out


def _template_metas(kinds, records: Sequence[MemorizingRecord]) -> dict[str, dict]:
    """A written set's meta fields: each record's pattern (or its subject worded as one)."""
    return {r.id: kinds.property_meta(r.pattern or kinds.default_pattern(r.subject), None, None)
            for r in records}


def _set_language(directory: Path) -> str:
    """The language a generated set's labels are in (its summary's `--lang`; English for a
    set written before languages, or without a summary)."""
    try:
        langs = json.loads((directory / "summary.json").read_text(encoding="utf-8"))["lang"]
    except (FileNotFoundError, KeyError, TypeError, ValueError):
        return "en"
    return prompt_language(tuple(langs), False)


def generated_memorizing_sets(onto: Ontology, tasks: Sequence[str] = RELATIONS, *,
                              seed: int = 0, lang: str = "en") -> dict[str, MemorizingSet]:
    """Sets generated from any ontology (seeded split), over its own candidate labels; `lang`:
    the language its labels were read in (`--lang`), whose templates its prompts use."""
    cands, kinds = candidate_sets(onto), load_templates(lang=lang)
    out = {}
    for relation, records in generate_memorizing(onto, tasks, seed=seed).items():
        out[relation] = MemorizingSet(relation, records, cands[kinds[relation].candidates],
                                      lazy_property_metas(records, onto), lang)
    return out
