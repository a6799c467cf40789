"""Human-readable labels for IRIs, and the articles that go in front of them."""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import unquote

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def local_name(iri: str) -> str:
    """The part of an IRI after its last '#', '/' or ':' (percent-decoded)."""
    for sep in ("#", "/", ":"):
        if sep in iri.rstrip(sep):
            iri = iri.rstrip(sep).rsplit(sep, 1)[1]
    return unquote(iri)


def local_name_label(iri: str) -> str:
    """Fallback label: the local name split at camelCase and underscores, lower-cased.

    ``SoccerPlayer`` → ``soccer player``; ``has_topping`` → ``has topping``.
    Acronyms survive as words (``HTTPServer`` → ``http server``).
    """
    name = local_name(iri)
    words = re.sub(r"[_\-\s]+", " ", _CAMEL.sub(" ", name)).strip()
    return re.sub(r"\s+", " ", words).lower() or iri


#: The longest label read as words: a name, not a text. A longer one (a file's whole text in a
#: label) is never tagged (spaCy refuses texts over 1,000,000 characters, and tagging costs
#: time in proportion) and its term is left out, counted (`exclusions.LONG_LABEL`). Ten times
#: the longest names of released ontologies (ChEBI's longest IUPAC names, about 1,000).
MAX_LABEL_CHARS = 10_000
#: Label properties, most preferred first: a term's label is the first one found in the
#: first language of the `--lang` order that has any (see `pick_label`).
LABEL_PROPERTIES = (
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://purl.obolibrary.org/obo/IAO_0000111",  # editor preferred term
    "http://www.geneontology.org/formats/oboInOwl#shorthand",
    "http://purl.obolibrary.org/obo/IAO_0000118",  # alternative term
    "http://www.geneontology.org/formats/oboInOwl#hasExactSynonym",
    "http://www.w3.org/2004/02/skos/core#altLabel",
    # a name where a vocabulary gives no label: GeoNames' "Marc Wick" (foaf:name), not the
    # local name "Marc-Wick" read as "marc wick"
    "http://xmlns.com/foaf/0.1/name",
    "http://schema.org/name",
    "https://schema.org/name",
)

_DIGIT_EDGE = re.compile(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
#: An identifier rather than a word: letters then digits (DOID_4006, C20921, uberon_0001062,
#: IAO:0000115, Q42), or letters and digits interleaved (R7Cq1QvDx7dMLhEm).
_ID_LIKE = re.compile(r"[A-Za-z]{0,12}(?:[_:.\-]?[A-Za-z]{1,12})?[_:.\-]?([0-9]{2,})[A-Za-z]?")


def is_id_like(name: str) -> bool:
    """Whether a label or local name is an identifier that must never be used as a word."""
    name = name.strip()
    if " " in name or not any(c.isalpha() for c in name):
        return False  # a year ("1031") is a word; a bare number as a local name is not
    m = _ID_LIKE.fullmatch(name)
    if m:  # ICD10, COVID19 are names; DOID_4006, Q42, C20921 are not
        return len(m.group(1)) >= 3 or sum(c.isalpha() for c in name) <= 2
    return len(_DIGIT_EDGE.findall(name)) >= 4


def name_words(name: str) -> str:
    """A name written as an identifier, as words: split at camelCase, underscores and
    digits, lower-cased except acronyms (``EUEnergyEfficiency`` → ``EU energy efficiency``,
    ``Procedure_Has_Imaged_Anatomy`` → ``procedure has imaged anatomy``, ``Tier3Team`` →
    ``tier 3 team``)."""
    spaced = _DIGIT_EDGE.sub(" ", _CAMEL.sub(" ", name))
    words = re.sub(r"[_\-\s]+", " ", spaced).split()
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in words)


def looks_like_identifier(label: str) -> bool:
    """A label written as an identifier (schema.org's ``EUEnergyEfficiencyEnumeration``,
    NCIt's ``Procedure_Has_Imaged_Anatomy``): one token with an underscore or an inner
    lower→upper case change."""
    return " " not in label.strip() and bool(
        "_" in label or re.search(r"[a-z][A-Z]", label))


def is_iri_like(text: str) -> bool:
    """A label that is an IRI or a CURIE-like reference, never a word ("http://purl…")."""
    t = text.strip()
    return "://" in t or t.startswith(("urn:", "www.", "_:"))


@lru_cache(maxsize=1)
def all_lemmas():
    """lemminflect's part-of-speech lexicon (shipped inside its wheel, MIT licence): word →
    the parts of speech it can be. Loaded on first use only, without the spaCy it would
    import to register token extensions (`nlp_imports`)."""
    from kgprobe.ontology.nlp_imports import hidden

    with hidden("spacy", "torch"):
        from lemminflect import getAllLemmas

    return getAllLemmas


@lru_cache(maxsize=65536)
def parts_of_speech(word: str) -> frozenset[str]:
    """The parts of speech an English word can be ({"NOUN", "VERB"} for "influence"); empty
    for a word the lexicon does not know (proper names: Loire, Burgundy; acronyms)."""
    return frozenset(all_lemmas()(word.lower()))


def is_adjective_label(label: str) -> bool:
    """Whether a class label is an adjective or participle rather than a noun phrase
    ("viscous", "Verifiable", "decreased", "adjacent to"): its head word (the
    last, before any trailing preposition) is never a noun in the lexicon and is an
    adjective there, or a participle it lists only as a verb; a word the lexicon does not
    know counts when it has an adjective's ending ("striated", "actinomorphic"). Such a
    class does not fit "[X] is a ___". (A word listed only as a verb, "bar", is not enough.)"""
    words = label.split()
    while len(words) > 1 and words[-1].lower() in FUNCTION_WORDS:
        words.pop()
    if not words or not words[-1].isalpha():
        return False
    head = words[-1].lower()
    pos = parts_of_speech(head)
    if "NOUN" in pos:
        return False
    if len(words) > 1 and "NOUN" in parts_of_speech(words[-2]) and _verb_base(head):
        return False  # a noun before a verb's base form makes a compound noun: "cloud top"
    if "ADJ" in pos:
        return True
    if pos:
        # -ed only: an -ing word is as often a gerund, a noun (DBpedia's "Formula one racing")
        return pos == {"VERB"} and head.endswith("ed")
    return head.endswith(_ADJECTIVE_ENDINGS)


def is_grouping_label(label: str) -> bool:
    """Whether a class label names a grouping of classes, a noun sorted "by" a criterion
    (ENVO's "food material by organism", "food by meal type"), not a kind of thing: the word
    before "by" is a noun and no -ed participle ("sediment permeated by freshwater" is a
    kind)."""
    words = label.lower().split()
    if "by" not in words[1:-1]:
        return False
    before = words[words.index("by", 1) - 1]
    return "NOUN" in parts_of_speech(before) and not before.endswith("ed")


def _verb_base(word: str) -> bool:
    """A verb's base form ("top", "drop"): such a word is a noun as well, though the lexicon
    lists only its verb (and adjective) readings."""
    return word in all_lemmas()(word).get("VERB", ())


#: Endings of English adjectives, for words the lexicon does not list (PATO's technical
#: terms): participles and the derivational suffixes that make adjectives. Not "-oid":
#: chemistry's -oids are nouns (carotenoid, terpenoid, steroid).
_ADJECTIVE_ENDINGS = ("ed", "ous", "ic", "ive", "able", "ible", "ful", "less")


def common_case(label: str, lower_words: frozenset[str] = frozenset()) -> str:
    """A Title Case label as a common noun phrase reads mid-sentence: each capitalized word
    the lexicon knows, or that the ontology itself writes in lower case elsewhere
    (`lower_words`: SOSA's "Actuation" beside "made actuation"), is lowered ("Feature Of
    Interest" → "feature of interest"); acronyms (QUDT, EU) and other words (names: "White
    Loire" → "white Loire") keep their case."""
    words = label.split(" ")
    out = []
    for w in words:
        if (len(w) > 1 and w[0].isupper() and w[1:].islower() and w.isalpha()
                and (parts_of_speech(w) or w.lower() in FUNCTION_WORDS
                     or w.lower() in lower_words)):
            w = w.lower()
        out.append(w)
    return " ".join(out)


def lowered_words(labels) -> frozenset[str]:
    """The words some label writes in lower case: evidence that a word is a common noun."""
    return frozenset(w for label in labels if label for w in label.split(" ")
                     if w.isalpha() and w.islower())


#: Closed-class words the lexicon (open classes only) does not list.
FUNCTION_WORDS = frozenset("of in on at to for from by with about into onto under over as "
                            "than via within near after before and or the a an not during "
                            "until since among between through throughout without against "
                            "across around behind beyond upon toward towards per".split())


def _lang_matches(lang: str | None, wanted: str, primary: str) -> bool:
    if wanted == "*":
        return True
    if lang is None:  # untagged labels count as the first language asked for
        return wanted == primary
    return lang == wanted or lang.startswith(wanted + "-")


def pick_label(labels: dict[str, list[tuple[str, str | None]]], iri: str,
               langs: tuple[str, ...] = ("en",), split_identifiers: bool = True,
               names: bool = False) -> str | None:
    """The term's label, or None when it has none usable as words.

    `labels` maps a label property to its (text, language tag) values. Languages are tried
    in the `langs` order (``"*"`` is any language); within a language, tagged labels before
    untagged ones (many ontologies never tag: untagged counts as the first language) and
    `LABEL_PROPERTIES` in order. An ID-like label is passed over, unless the term is an
    individual (`names`: gene symbols, product codes such as STS-117 are names); a class's or
    property's label written as an identifier is split into words when `split_identifiers`
    (an individual's is its name: "YouTube", "iPhone" stay as written). Only when no label is
    found is the IRI's local name used, split into words — and never when it is ID-like.
    """
    primary = langs[0] if langs else "en"
    for wanted in langs if labels else ():  # most instances of a big graph have no label
        for untagged in (False, True):
            for prop in LABEL_PROPERTIES:
                choices = sorted(
                    text.strip() for text, lang in labels.get(prop, ())
                    if (lang is None) == untagged and _lang_matches(lang, wanted, primary)
                    and text.strip() and not is_iri_like(text)
                    and (names or not is_id_like(text)))
                if choices:
                    return _as_words(choices[0], split_identifiers, names)
    name = local_name(iri)
    if is_id_like(name) or name.isdigit():
        return None
    words = name_words(name)
    return (common_case(words) if split_identifiers and not names else words) or None


def _as_words(label: str, split_identifiers: bool, names: bool) -> str:
    """A picked label as it is written in a prompt: an identifier split into words, no
    underscore ("obsolete2_digital document"), Title Case lowered for classes and properties
    (`split_identifiers` off, for the bundled OntoProbe labels, keeps them as written)."""
    if not split_identifiers:
        return label
    if not names and looks_like_identifier(label):
        label = name_words(label)
    if "_" in label:
        label = re.sub(r" +", " ", label.replace("_", " ")).strip()
    return label if names else common_case(label)


@lru_cache(maxsize=1)
def inflect_engine() -> "inflect.engine":  # noqa: F821 - imported lazily: inflect is slow to import
    """One shared inflect engine (articles here, singular nouns in `skos`), imported on first
    use so that a command which never inflects a label does not import inflect (and then
    without typeguard's instrumentation: `nlp_imports`)."""
    from kgprobe.ontology.nlp_imports import unchecked_types

    with unchecked_types():
        import inflect

    return inflect.engine()


#: SAMPA-style consonant phonemes as McRae's ``Phon_1st`` writes them (``tS``, ``dZ``, ``S``…);
#: every other first phoneme is a vowel (``&``, ``@``, ``E@``, ``3:`` which Excel turned into
#: ``3:00``).
_CONSONANTS = {"b", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
               "z", "S", "T", "D", "Z", "N", "tS", "dZ"}


@lru_cache(maxsize=65536)
def starts_with_vowel_sound(phrase: str, phoneme: str | None = None) -> bool:
    """Whether `phrase` takes "an" (an hour, a university).

    A first phoneme, where a dataset gives one (the McRae norms do), decides without
    guessing; otherwise inflect reads the first word's spelling.
    """
    if phoneme:
        return phoneme.strip() not in _CONSONANTS
    if not phrase.strip():
        return False
    return inflect_engine().a(phrase).split(" ", 1)[0].lower() == "an"


def article(phrase: str, vowel_sound: bool | None = None) -> str:
    """'a' or 'an' for a phrase; `vowel_sound` when the caller knows it already (a norms
    concept's first phoneme), else `starts_with_vowel_sound`."""
    if vowel_sound is None:
        vowel_sound = starts_with_vowel_sound(phrase)
    return "an" if vowel_sound else "a"


def with_article(phrase: str, vowel_sound: bool | None = None) -> str:
    return f"{article(phrase, vowel_sound)} {phrase}"
