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


def pick_label(
    rdfs_labels: list[tuple[str, str | None]],
    skos_labels: list[tuple[str, str | None]],
    iri: str,
) -> str:
    """English ``rdfs:label``, else ``skos:prefLabel``, else the IRI's local name.

    Each list holds (text, language tag). An untagged label counts as English when no
    ``@en`` one exists, since many ontologies never tag their labels.
    """
    for labels in (rdfs_labels, skos_labels):
        for wanted in ("en", None):
            choices = sorted(
                text for text, lang in labels
                if (lang == wanted or (wanted == "en" and lang and lang.startswith("en-")))
                and text.strip()
            )
            if choices:
                return choices[0].strip()
    return local_name_label(iri)


@lru_cache(maxsize=1)
def _engine():
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
    return _engine().a(phrase).split(" ", 1)[0].lower() == "an"


def article(phrase: str, vowel_sound: bool | None = None) -> str:
    """'a' or 'an' for a phrase; `vowel_sound` when the caller knows it already (a norms
    concept's first phoneme), else `starts_with_vowel_sound`."""
    if vowel_sound is None:
        vowel_sound = starts_with_vowel_sound(phrase)
    return "an" if vowel_sound else "a"


def with_article(phrase: str, vowel_sound: bool | None = None) -> str:
    return f"{article(phrase, vowel_sound)} {phrase}"
