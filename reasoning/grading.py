"""Open answers graded by the ontology: a model's own words → ontology terms → a grade.

A generated answer ("a baseball league in Oregon.") is no candidate index: to say whether it is
right, it is first *mapped* to the ontology's terms and then *graded* against the item by the
RDFS closure, so that an answer the ranking protocol could not express — a true but less
specific class — is told apart from a wrong one.

Mapping (`Taxonomy.map`): the answer and every term's names (its label, its synonyms —
``skos:altLabel``, ``oboInOwl:hasExactSynonym`` … where the source has them) are folded the same
way: lower case, punctuation dropped, a leading article dropped, each word also as its spaCy
lemma (so "leagues" is "league"). The longest run of the answer's words that is some term's name
wins (the earliest among equally long runs): "a sports league" names *sports league*, not
*league*. A name shared by several terms maps to all of them, and the grade takes the best.

Grading (`grade`) against the item's gold (its most specific answer) and what the closure
makes true of the item's subject:

* **exact** — the gold itself;
* **entailed** — a true superclass (superproperty) of the gold: right but less specific, with
  its *distance*, the fewest ``subClassOf`` (``subPropertyOf``) steps from the gold. A record's
  other answers (a type chain, a superclass chain) count as entailed too, at their place in the
  chain where the ontology at hand does not know them;
* **wrong** — a term of the ontology that is neither;
* **unmapped** — no term's name occurs in the answer (counted and shown, never guessed).

Two kinds of answer name the gold without asserting it, and are graded **wrong** whatever they
name (`Grade.note` says why): a *negated* one ("not a soccer player", "isn't a city": a
negation word anywhere in it denies rather than names), and a *list* of several different
terms ("a footballer, an athlete and a person": parts split at commas, semicolons, slashes,
"and", "or" that each name a term, and not all the same term), which hedges across classes and
commits to none.

No models here: the grader reads text and the ontology only.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from kgprobe.ontology.labels import MAX_LABEL_CHARS

__all__ = ["GRADES", "MAX_ANSWER_CHARS", "Grade", "Taxonomy", "fold", "grade", "prefold",
           "specificity", "synonyms_from_triples", "taxonomy_from_ontology"]

#: How much of a generated answer is graded: its first 10,000 characters. An answer is a
#: phrase (a few tokens, `--max-new-tokens`); what a model writes past this is no answer to
#: the question, and reading it would cost time in proportion (a 2.1 MB answer crashed
#: spaCy, which refuses texts over 1,000,000 characters).
MAX_ANSWER_CHARS = 10_000

#: The grades, in the order reports list them; every graded answer has exactly one.
GRADES = ("exact", "entailed", "wrong", "unmapped")
ARTICLES = frozenset({"a", "an", "the"})
#: "a type of plant" names a plant: a classifier noun before "of" is read past, so that the
#: longest-match rule meets the head noun after it (unless the whole run is a term's name).
CLASSIFIERS = frozenset({"type", "kind", "sort", "form", "variety"})
#: Words that deny what follows them: an answer holding one asserts no class.
NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "non", "nothing", "none",
                       "cannot"})
#: Where a list of answers splits (the parts are mapped one by one).
_LIST_SPLIT = re.compile(r"[,;/&]|\band\b|\bor\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
#: Synonym annotations read from a source's triples (beside its chosen label).
SYNONYM_PROPERTIES = (
    "http://www.w3.org/2004/02/skos/core#altLabel",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.geneontology.org/formats/oboInOwl#hasExactSynonym",
    "http://purl.obolibrary.org/obo/IAO_0000118",
)


@lru_cache(maxsize=1)
def _lemmatizer():
    """spaCy's small English pipeline with its lemmatizer (no parser, no entities), loaded once:
    the same pinned package `ontology.wording` tags labels with."""
    import importlib

    from kgprobe.ontology.nlp_imports import spacy_imports
    from kgprobe.ontology.wording import PIPELINE

    with spacy_imports():
        return importlib.import_module(PIPELINE).load(exclude=["parser", "senter", "ner"])


#: text → (surface words, lemmas): each text lemmatized once per process.
_FOLDED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _surface(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(text.replace("-", " ").replace("_", " ")))


def _lemmas(surface: tuple[str, ...], doc) -> tuple[str, ...]:
    lemmas = tuple(t.lemma_.lower() for t in doc if _WORD.fullmatch(t.text))
    return lemmas if len(lemmas) == len(surface) else surface


def prefold(texts: Iterable[str]) -> None:
    """Lemmatize many texts in one batch (an ontology's names: several times faster than one
    by one); `_words` then reads the cache. A text of more than `MAX_LABEL_CHARS` characters
    (a name that is a whole text) is matched by its words as written: spaCy refuses texts
    over 1,000,000 characters and tagging costs time in proportion."""
    todo = [t for t in dict.fromkeys(texts) if t not in _FOLDED]
    surfaces = [_surface(t) for t in todo]
    joined = [" ".join(s) for s in surfaces]
    read = [0 < len(j) <= MAX_LABEL_CHARS for j in joined]
    docs = _lemmatizer().pipe(j for j, r in zip(joined, read) if r)
    for text, surface, r in zip(todo, surfaces, read):
        _FOLDED[text] = (surface, _lemmas(surface, next(docs)) if r else surface)


def _words(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(surface words, lemmas) of `text`, lower case, punctuation dropped."""
    if text not in _FOLDED:
        prefold([text])
    return _FOLDED[text]


def fold(text: str) -> tuple[str, ...]:
    """A name's lemma words without a leading article: the key names are matched by."""
    _, lemmas = _words(text)
    while lemmas and lemmas[0] in ARTICLES:
        lemmas = lemmas[1:]
    return lemmas


@dataclass
class Taxonomy:
    """Named terms and their direct parents (``subClassOf`` / ``subPropertyOf``).

    `names[term]` are the term's names as written (label first); `parents[term]` its direct
    parents. Built from an `Ontology` by `taxonomy_from_ontology`, or by hand in a test."""

    names: dict[str, list[str]]
    parents: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        prefold(n for names in self.names.values() for n in names)
        self._index: dict[tuple[str, ...], list[str]] = {}
        self._surface: dict[tuple[str, ...], list[str]] = {}
        for term, names in self.names.items():
            for name in names:
                self.add_name(term, name)
        self._longest = max((len(k) for k in (*self._index, *self._surface)), default=0)

    def add_name(self, term: str, name: str) -> None:
        """Index `term` under `name` (folded, and as written in lower case). A name over
        `MAX_LABEL_CHARS` characters (an altLabel holding a whole text) is no name: it is
        not indexed, as such a label leaves its term out of the model (`prune`), and the
        longest-name search would otherwise try runs that long in every answer."""
        if len(name) > MAX_LABEL_CHARS:
            return
        surface, _ = _words(name)
        for table, key in ((self._index, fold(name)), (self._surface, surface)):
            if key and term not in table.setdefault(key, []):
                table[key].append(term)
        self._longest = max(getattr(self, "_longest", 0), len(surface))

    def label(self, term: str) -> str:
        return (self.names.get(term) or [term])[0]

    def lookup(self, name: str) -> list[str]:
        """The terms one whole name names (no partial match)."""
        return list(dict.fromkeys(self._index.get(fold(name), [])
                                  + self._surface.get(_words(name)[0], [])))

    def map(self, text: str) -> tuple[list[str], str]:
        """(terms, matched words) of the longest run of `text`'s words that is a term's name
        (earliest among the longest); ([], "") when none is. Only the first
        `MAX_ANSWER_CHARS` characters are read."""
        surface, lemmas = _words(text[:MAX_ANSWER_CHARS])
        found = self._longest_run(surface, lemmas)
        keep = [i for i in range(len(surface)) if not (
            surface[i] in CLASSIFIERS and surface[i + 1:i + 2] == ("of",)
            or surface[i] == "of" and i and surface[i - 1] in CLASSIFIERS)]
        if len(keep) < len(surface):  # a classifier read past: its head noun, unless a longer
            past = self._longest_run(tuple(surface[i] for i in keep),  # name holds it
                                     tuple(lemmas[i] for i in keep))
            if past[0] and (not found[0] or len(past[1].split()) >= len(found[1].split())
                            or found[1] in CLASSIFIERS):
                return past
        return found

    def _longest_run(self, surface: tuple[str, ...], lemmas: tuple[str, ...]) -> tuple[list[str], str]:
        for width in range(min(self._longest, len(surface)), 0, -1):
            for start in range(0, len(surface) - width + 1):
                terms = (self._surface.get(surface[start:start + width], [])
                         + self._index.get(lemmas[start:start + width], []))
                if terms and not all(w in ARTICLES for w in surface[start:start + width]):
                    return list(dict.fromkeys(terms)), " ".join(surface[start:start + width])
        return [], ""

    def distances(self, term: str) -> dict[str, int]:
        """Every ancestor of `term` (itself at 0) with its fewest parent steps (cycles end)."""
        seen = {term: 0}
        queue = deque([term])
        while queue:
            node = queue.popleft()
            for parent in self.parents.get(node, []):
                if parent not in seen:
                    seen[parent] = seen[node] + 1
                    queue.append(parent)
        return seen


@dataclass(frozen=True)
class Grade:
    """One answer's grade: `grade` in `GRADES`, the term it mapped to (its label), the words
    that named it, and for *entailed* the distance from the gold (0 for *exact*)."""

    grade: str
    term: str | None = None
    label: str | None = None
    matched: str = ""
    distance: int | None = None
    note: str = ""  # why a named term is graded wrong regardless: "negated", "a list of N terms"

    def to_json(self) -> dict:
        out = {"grade": self.grade, "term": self.term, "label": self.label,
               "matched": self.matched, "distance": self.distance}
        return {**out, "note": self.note} if self.note else out


def specificity(g: Grade) -> float:
    """How specific a right answer is: 1 for the gold, 1 / (1 + d) for a superclass d steps
    above it, 0 for a wrong or unmapped answer (so its mean is at most the accuracy, and equals
    the exact rate when no answer is merely entailed)."""
    if g.grade == "exact":
        return 1.0
    if g.grade == "entailed" and g.distance is not None:
        return 1.0 / (1.0 + g.distance)
    return 0.0


def grade(answer: str, golds: Sequence[str], taxonomy: Taxonomy) -> Grade:
    """Grade a generated `answer` against an item whose true answers are `golds` (labels,
    specific → general: the first is the gold, the rest are true and less specific)."""
    terms, matched = taxonomy.map(answer)
    if not terms:
        return Grade("unmapped")
    refused = _asserts_nothing(answer, taxonomy)
    if refused:  # it names a term without asserting it: wrong, whatever the term
        return Grade("wrong", terms[0], taxonomy.label(terms[0]), matched, note=refused)
    true_at = _true_terms(golds, taxonomy)
    best = None
    for term in terms:
        d = true_at.get(term)
        candidate = (Grade("exact" if d == 0 else "entailed", term, taxonomy.label(term), matched, d)
                     if d is not None else Grade("wrong", term, taxonomy.label(term), matched))
        rank = (0, candidate.distance) if d is not None else (1, 0)
        if best is None or rank < best[0]:
            best = (rank, candidate)
    return best[1]


def _asserts_nothing(answer: str, taxonomy: Taxonomy) -> str:
    """Why `answer` asserts no one term although it names one: "negated" (a negation word in
    it), "a list of N terms" (several parts that name different terms); "" when it does."""
    surface, _ = _words(answer)
    if any(w in NEGATIONS or w.endswith("n't") for w in surface):
        return "negated"
    if {"and", "or"} & set(taxonomy.map(answer)[1].split()):
        return ""  # one name holds the word ("arts and crafts"): no list
    named = [frozenset(taxonomy.map(part)[0]) for part in _LIST_SPLIT.split(answer)]
    named = [terms for terms in named if terms]
    if len(named) > 1 and not frozenset.intersection(*named):
        return f"a list of {len(named)} terms"
    return ""


def _true_terms(golds: Sequence[str], taxonomy: Taxonomy) -> dict[str, int]:
    """term → its distance from the gold, for the gold (0), its ancestors in the closure, and
    the item's other answers (their closure distance, else their place in the chain)."""
    true_at: dict[str, int] = {}
    for place, label in enumerate(golds):
        for term in taxonomy.lookup(label):
            if place == 0:
                for ancestor, d in taxonomy.distances(term).items():
                    true_at[ancestor] = min(d, true_at.get(ancestor, d))
            else:
                true_at.setdefault(term, max(1, place))
    return true_at


def taxonomy_from_ontology(onto, *, relation_kind: str = "class",
                           synonyms: Mapping[str, Iterable[str]] | None = None,
                           extra: Iterable[str] = ()) -> Taxonomy:
    """The classes (`relation_kind` "class") or properties ("property") of an `Ontology`
    with their direct parents, named by their label, their label in candidate form and
    `synonyms` (IRI → other names); `extra` names (a set's candidates the ontology lacks)
    become terms of their own, so every gold can be looked up."""
    from kgprobe.ontology.verbalize import normalize_label
    from kgprobe.reasoning.memorizing import direct_parents

    table = onto.classes if relation_kind == "class" else onto.properties
    synonyms = synonyms or {}
    names: dict[str, list[str]] = {}
    for iri, term in table.items():
        own = [term.label, normalize_label(term.label), *synonyms.get(iri, ())]
        names[iri] = list(dict.fromkeys(n for n in own if n))
    parents = direct_parents({iri: [p for p in t.parents if p in table] for iri, t in table.items()})
    taxonomy = Taxonomy(names, parents)
    for name in extra:
        if not taxonomy.lookup(name):
            taxonomy.names[name] = [name]
            taxonomy.add_name(name, name)
    return taxonomy


def synonyms_from_triples(triples: Iterable[tuple[str, str, str]]) -> dict[str, list[str]]:
    """IRI → every label-like literal a source gives it (``skos:altLabel`` and the like, in
    English or untagged): the other names an answer may use."""
    from kgprobe.ontology.model import is_literal, parse_literal

    out: dict[str, list[str]] = {}
    for s, p, o in triples:
        if p in SYNONYM_PROPERTIES and is_literal(o):
            text, lang = parse_literal(o)
            if lang in (None, "en") or (lang or "").startswith("en-"):
                out.setdefault(s, []).append(text)
    return out
