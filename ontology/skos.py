"""SKOS thesauri read as a taxonomy: `skos:broader` as `rdfs:subClassOf`.

A thesaurus (UNESCO, AGROVOC, EuroVoc, STW) says what it knows in `skos:broader` and its
relatives, never in `rdfs:subClassOf`, and types every term `skos:Concept`. Read as plain RDF
it gives one memorizing record per concept, "X is a concept", and no hierarchy at all. This
module is the **modelling choice** that turns it into what a user would probe:

* every `skos:Concept` is a class, and `A skos:broader B` (or `B skos:narrower A`, inverted;
  `skos:broaderTransitive`/`narrowerTransitive` likewise) is `A rdfs:subClassOf B`. The
  union is transitively reduced (a `broaderTransitive` shortcut is implied by the chain it
  summarises), so the memorizing answers stay ordered nearest first;
* `skos:Concept`, concept schemes and collections are vocabulary, not classes of things:
  their `rdf:type` statements are dropped (no "X is a concept" record);
* mode ``leaves``: a concept with no narrower concept is an individual of its broader
  concepts instead of a class, so the thesaurus also yields type (TP) records and rdfs9 items.

SKOS itself says less: `broader` is not transitive and mixes generic, partitive and instance
relations ("Paris" broader "France"), and in a *topical* thesaurus (a subject index: UNESCO,
the Unified Astronomy Thesaurus) it means "is a topic under" ("Space station" under
"Observational astronomy"). Read as subclass, such a thesaurus gives false "X is a Y"
probes, so ``auto`` maps only a scheme the data shows to be taxonomic (`scheme_kind`: ISO 25964
generic relations, or labels that specialise their broader term's head noun); a topical one
is left unmapped, named in a warning, and `generate` refuses it (`--skos classes` forces the
reading). The mapping is documented in docs/skos-and-languages.md, announced in a warning,
and switched by `--skos auto|classes|leaves|off`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.ontology.model import OWL_CLASS, RDF_TYPE, RDFS_SUBCLASSOF, SKOS, Triple, is_iri

SKOS_CONCEPT = SKOS + "Concept"
#: ISO 25964's SKOS extension, which says which kind of hierarchy a `broader` edge is.
ISO_THES = "http://purl.org/iso25964/skos-thes#"
#: predicate → whether it points up (narrower → broader) as written
_HIERARCHY = {SKOS + "broader": True, SKOS + "broaderTransitive": True,
              SKOS + "narrower": False, SKOS + "narrowerTransitive": False}
#: ISO 25964 generic (kind-of) hierarchy: the one `rdfs:subClassOf` means.
_GENERIC = {ISO_THES + "broaderGeneric": True, ISO_THES + "narrowerGeneric": False}
#: ISO 25964 part-of and instance-of hierarchies: `broader` that is no subclass.
_NOT_GENERIC = frozenset(ISO_THES + f"{d}{k}" for d in ("broader", "narrower")
                         for k in ("Partitive", "Instantial"))
#: Share of labelled `broader` edges whose narrower label specialises the broader label's head
#: noun ("Public libraries" under "Libraries") above which labels call a scheme taxonomic.
TAXONOMIC_SHARE = 2 / 3
#: Types that say what a term is in the thesaurus, not what it is about.
VOCABULARY_TYPES = frozenset({
    SKOS_CONCEPT, SKOS + "ConceptScheme", SKOS + "Collection", SKOS + "OrderedCollection",
    "http://purl.org/iso25964/skos-thes#ConceptGroup",
    "http://purl.org/iso25964/skos-thes#ThesaurusArray"})
MODES = ("auto", "classes", "leaves", "off")


@dataclass
class SkosMapping:
    """What the mapping reads into the model: subclass edges, and in ``leaves`` mode types."""

    mode: str
    concepts: set[str] = field(default_factory=set)
    #: (narrower, rdfs:subClassOf, broader) between classes; (leaf, rdf:type, broader) leaves
    triples: list[Triple] = field(default_factory=list)
    dropped_types: int = 0  # rdf:type statements of vocabulary terms taken out
    #: What the data says the scheme is (`scheme_kind`); None when the mode was forced.
    kind: "SchemeKind | None" = None
    #: subClassOf triples the RDFS closure derives beyond the mapped edges (set by `generate
    #: reasoning`; `reason` stores the same ones, so `kg query` counts them too)
    derived_subclass: int | None = None

    @property
    def topical(self) -> bool:
        """``auto`` found a topical scheme: nothing is mapped, and `generate` refuses it."""
        return self.mode == "topical"

    def summary(self) -> dict:
        """The reading, for `summary.json`: the mode used and the evidence that decided it."""
        out = {"mode": self.mode, "concepts": len(self.concepts),
               "subclass_edges": sum(t[1] == RDFS_SUBCLASSOF for t in self.triples)}
        if self.derived_subclass is not None:
            out["derived_subclass"] = self.derived_subclass
        if self.kind:
            out.update(self.kind.to_json())
        return out

    def refusal(self) -> str:
        """The one line `generate` stops with on a topical scheme."""
        return (f"a topical SKOS thesaurus ({self.kind.why}): its skos:broader means 'is a "
                "topic under', not 'is a'; give --skos classes to read it as subclass anyway, "
                "or --skos off")

    def warning(self) -> str:
        if self.topical:
            return (f"SKOS thesaurus ({len(self.concepts)} concepts) read as topical, not as a "
                    f"taxonomy: {self.kind.why}; no skos:broader edge read as rdfs:subClassOf "
                    "(--skos classes forces it)")
        edges = sum(t[1] == RDFS_SUBCLASSOF for t in self.triples)
        typed = len(self.triples) - edges
        what = f"{edges} skos:broader/narrower edges read as rdfs:subClassOf"
        if typed:
            what += f", {typed} leaf concepts as individuals of their broader concepts"
        why = f" (taxonomic: {self.kind.why})" if self.kind else ""
        return (f"SKOS thesaurus ({len(self.concepts)} concepts): {what}{why}; no 'is a "
                "concept' records (--skos off reads it as plain RDF)")


@dataclass(frozen=True)
class SchemeKind:
    """Whether a thesaurus's `broader` is a taxonomy, and the evidence (`scheme_kind`)."""

    taxonomic: bool
    evidence: str  # "iso-thes" or "labels"
    why: str  # the evidence in words, for the warning
    share: float | None = None  # labels: the share of head-noun edges

    def to_json(self) -> dict:
        out = {"taxonomic": self.taxonomic, "evidence": self.evidence, "why": self.why}
        if self.share is not None:
            out["head_noun_share"] = round(self.share, 4)
        return out


@dataclass
class _Read:
    """The hierarchy statements of a source, as `skos_mapping` collects them."""

    concepts: set[str] = field(default_factory=set)
    up: set[tuple[str, str]] = field(default_factory=set)  # (narrower, broader)
    generic: set[tuple[str, str]] = field(default_factory=set)  # iso-thes generic edges
    not_generic: int = 0  # iso-thes partitive/instantial statements
    labels: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    has_subclass: bool = False


def _read(triples: Iterable[Triple]) -> _Read:
    from kgprobe.ontology.labels import LABEL_PROPERTIES
    from kgprobe.ontology.model import is_literal, parse_literal

    out = _Read()
    for s, p, o in triples:
        if p == RDF_TYPE and o == SKOS_CONCEPT and is_iri(s):
            out.concepts.add(s)
        elif p in _HIERARCHY and is_iri(s) and is_iri(o) and s != o:
            out.up.add((s, o) if _HIERARCHY[p] else (o, s))
        elif p in _GENERIC and is_iri(s) and is_iri(o) and s != o:
            out.generic.add((s, o) if _GENERIC[p] else (o, s))
        elif p in _NOT_GENERIC:
            out.not_generic += 1
        elif p == RDFS_SUBCLASSOF:
            out.has_subclass = True
        elif p in LABEL_PROPERTIES[:2] and is_literal(o):
            out.labels.setdefault(s, []).append(parse_literal(o))
    out.up |= out.generic  # a generic edge is a broader edge too (iso-thes says so)
    return out


def skos_mapping(triples: Iterable[Triple], mode: str = "auto") -> SkosMapping | None:
    """The mapping for `mode`, or None when it does not apply.

    ``auto`` maps a concept scheme that has no `rdfs:subClassOf` of its own (an ontology
    that uses SKOS for a few labels keeps its real taxonomy) and that the data shows to be
    taxonomic (`scheme_kind`): with ISO 25964 generic relations only those are read; a
    topical scheme gets a mapping of mode ``topical`` that maps nothing (`SkosMapping.topical`).
    ``classes``/``leaves`` force the reading of every broader edge.
    """
    if mode == "off":
        return None
    read = _read(triples)
    if not read.up or (mode == "auto" and read.has_subclass):
        return None
    concepts = read.concepts | {c for pair in read.up for c in pair}
    kind, up = None, read.up
    if mode == "auto":
        kind = scheme_kind(read)
        if not kind.taxonomic:
            return SkosMapping("topical", concepts, kind=kind)
        up = read.generic or read.up
    mapping = SkosMapping("leaves" if mode == "leaves" else "classes", concepts, kind=kind)
    edges = _reduce(up)
    if mapping.mode == "leaves":
        inner = {b for _, b in edges}
        mapping.triples = sorted((a, RDFS_SUBCLASSOF if a in inner else RDF_TYPE, b)
                                 for a, b in edges)
    else:
        mapping.triples = sorted((a, RDFS_SUBCLASSOF, b) for a, b in edges)
    return mapping


def scheme_kind(read: _Read) -> SchemeKind:
    """Whether the data shows a taxonomic scheme, and why.

    ISO 25964 relations decide when present: generic ones make `broader` a subclass
    relation (and only they are read); partitive or instantial ones alone do not. Otherwise
    the labels decide: a taxonomy's narrower terms specialise their broader term's head noun
    ("Public libraries" under "Libraries", "Radioisotopes" under "Isotopes"), a topical
    scheme's do not ("Space station" under "Observational astronomy", "Technology transfer"
    under "Technology"). At least `TAXONOMIC_SHARE` of the labelled edges must, so a
    taxonomy of names ("Sulphur" under "Chemical elements") reads as topical and needs
    ``--skos classes``: a refusal costs one option, a wrong reading false probes."""
    if read.generic:
        return SchemeKind(True, "iso-thes", f"{len(read.generic)} iso-thes broaderGeneric/"
                          "narrowerGeneric edges, read as rdfs:subClassOf; other broader edges "
                          "are not")
    if read.not_generic:
        return SchemeKind(False, "iso-thes", f"{read.not_generic} iso-thes partitive/"
                          "instantial relations and no generic ones")
    heads = {iri: _heads(_english(values)) for iri, values in read.labels.items()}
    pairs = [(heads[a][0], heads[b]) for a, b in read.up if heads.get(a) and heads.get(b)]
    if not pairs:
        return SchemeKind(False, "labels", "no labels to tell a taxonomy from a topical "
                          "scheme", 0.0)
    share = sum(any(a.endswith(h) for h in b) for a, b in pairs) / len(pairs)
    taxonomic = share >= TAXONOMIC_SHARE
    return SchemeKind(taxonomic, "labels", (
        f"{share:.0%} of {len(pairs)} labelled broader edges name a kind of their broader "
        f"term (its head noun), {'at least' if taxonomic else 'below'} "
        f"{TAXONOMIC_SHARE:.0%}; no iso-thes generic relations"), share)


def _english(values: list[tuple[str, str | None]]) -> str:
    """The label the head-noun test reads: English, else untagged, else the first."""
    for want in ("en", None):
        for text, tag in values:
            if (tag or None) == want or (want and tag and tag.lower().startswith("en")):
                return text
    return values[0][0] if values else ""


def _heads(label: str) -> tuple[str, ...]:
    """The head nouns of a label's alternatives ("Rock or sediment" → rock, sediment: a
    narrower "Rock" names a kind of it); () for no head."""
    return tuple(h for h in (_head(part) for part in re.split(r"\s+or\s+", label)) if h)


def _head(label: str) -> str:
    """A label's head noun, lower case and crudely singular: the last word before a
    preposition or a qualifier ("Libraries for the blind" → "library")."""
    words = re.split(r"\s(?:of|for|in|on|and|to)\s|[,(]", label.lower())[0].split()
    if not words:
        return ""
    word = words[-1]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _reduce(up: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The transitive reduction of the broader graph (kept whole where it has a cycle)."""
    import networkx as nx

    graph = nx.DiGraph(list(up))
    if not nx.is_directed_acyclic_graph(graph):
        return up  # the model's cycle check names the cycle
    return set(nx.transitive_reduction(graph).edges())


def apply_mapping(mapping: SkosMapping, types: dict[str, set[str]],
                  edges: dict[str, list[Triple]]) -> None:
    """Put the mapping into the sorted triples the model builder reads (`_Sorted.types` and
    `.edges`): vocabulary types out, concepts typed as classes or as their broader concepts."""
    for iri in list(types):
        vocab = types[iri] & VOCABULARY_TYPES
        if vocab:
            mapping.dropped_types += len(vocab)
            types[iri] -= vocab
            if not types[iri]:
                del types[iri]
            if any(t != SKOS_CONCEPT for t in vocab):
                types.pop(iri, None)  # a scheme's or collection's own types go with it
    leaves = {s for s, p, _ in mapping.triples if p == RDF_TYPE}
    for iri in mapping.concepts - leaves:
        types.setdefault(iri, set()).add(OWL_CLASS)
    for t in mapping.triples:
        if t[1] == RDF_TYPE:
            types.setdefault(t[0], set()).add(t[2])
        else:
            edges[RDFS_SUBCLASSOF].append(t)


# --------------------------------------------------------------------------- plural labels

#: Last words inflect would wrongly singularize ("Mathematics" → "Mathematic").
_KEEP = re.compile(r"(ics|ss|us|is|series|species|news|data|media|lens)$", re.I)


def singular_label(label: str) -> str:
    """A thesaurus's English plural label as a singular noun phrase for "is a" templates
    (UNESCO's "Public libraries" → "Public library"); labels that are not plural, coordinated
    plurals ("Arts and crafts") and words ending like mass nouns ("Mathematics") stay."""
    # "Sciences of education": the head noun is before a preposition; "Carpenter, General": before
    # the comma (inflect reads that label as "False General", so only the head is inflected)
    from kgprobe.ontology.wording import HEAD_ENDS

    phrase = re.split(rf"\s(?:{'|'.join(sorted(HEAD_ENDS))})\s", label.split(",", 1)[0])[0].rstrip()
    head = phrase.split()
    if not head or " and " in f" {label.lower()} " or _KEEP.search(head[-1]):
        return label
    from kgprobe.ontology.labels import inflect_engine

    singular = inflect_engine().singular_noun(head[-1])
    if not isinstance(singular, str) or not singular:
        return label
    return label[:len(phrase) - len(head[-1])] + singular + label[len(phrase):]


def singular_labels(labels: dict[str, str | None], concepts: set[str]) -> dict[str, str | None]:
    """`labels` with every concept's label singular (English thesauri label concepts in the
    plural, the guidelines' convention for countable terms)."""
    return {iri: singular_label(text) if text and iri in concepts else text
            for iri, text in labels.items()}
