"""Property label ↔ wording, from the text alone: "head of government" ↔ "'s government is headed by".

An rdfs7 prompt names a property by its LABEL ("Head of government implies chairperson .")
while its candidates are property WORDINGS, the middles of their patterns ("'s chairperson
is"). A reader of the prompt (`models.reader`) and the wording-aware copy control
(`models.baselines.CopyBaseline`) both need to tell which wording a label is, and neither
sees the ontology: only the prompt and the candidates. So the match is made from words.

How: both sides become their content words (`content_words`: lower case, the possessive and
function words dropped, a plural or verb ending trimmed), and two words match exactly (same
trimmed form) or loosely (one shared prefix of at least 4 letters, at most 3 letters short of
the shorter word: "creator"/"created", "location"/"located", "participant"/"participated").
A label and a wording match as much as their matched words cover both (`similarity`, a Dice
coefficient with a loose match worth `LOOSE` of an exact one), so "contributor to the creative
work or subject" is "'s contributor is" (one word of five, exact) before "is created by" (one
word, loose). Why not a stemmer or embeddings: no model weights and no extra dependency for
a control, and the rule is short enough to state in a report.

Its accuracy on the bundled ontology's properties (each label against every property's
wording, the best one right): `lexicon_accuracy`; `kgprobe`'s docs/scoring.md gives the figure
and the command.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Sequence

__all__ = ["LOOSE", "MATCH", "best_match", "content_words", "lexicon_accuracy", "similarity",
           "trim", "words_match"]

#: Words that carry no content in a label or a wording (the patterns' copulas, prepositions,
#: articles, and what domain/range clauses write for an unknown term).
FUNCTION_WORDS = frozenset(
    "a an the of is are was were be been being has have had by in on at to for with from as "
    "and or that this its it one something into onto than".split())
#: What a loose word match is worth beside an exact one.
LOOSE = 0.8
#: The weight of shared function words, which only break ties between equal content matches.
TIE = 0.05
#: The least `similarity` that counts as a match (below it: unrelated words only).
MATCH = 0.25


def trim(word: str) -> str:
    """A word without its plural or verb ending ("parts" → "part", "headed" → "head")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 6 and word.endswith("ing"):
        return word[:-3]
    return word


@lru_cache(maxsize=None)
def content_words(text: str) -> tuple[str, ...]:
    """`text`'s content words, trimmed, in order ("'s government is headed by" → government,
    head)."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'s", " "))
    return tuple(trim(w) for w in words if w not in FUNCTION_WORDS)


@lru_cache(maxsize=1 << 16)
def words_match(a: str, b: str) -> float:
    """1 for the same (trimmed) word, `LOOSE` for a shared stem (see the module), else 0."""
    if a == b:
        return 1.0
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    return LOOSE if shared >= 4 and shared >= min(len(a), len(b)) - 3 else 0.0


@lru_cache(maxsize=None)
def similarity(label: str, wording: str) -> float:
    """How well `label` and `wording` say the same property, 0 … 1 (symmetric): the Dice
    coefficient of their content words, each word matched to its best partner."""
    a, b = content_words(label), content_words(wording)
    if not a or not b:
        return 0.0
    got_a = sum(max(words_match(x, y) for y in b) for x in a)
    got_b = sum(max(words_match(x, y) for x in a) for y in b)
    # the function words break ties only ("part of" is "is part of" before "has part")
    fa, fb = _function_words(label), _function_words(wording)
    tie = 2 * len(fa & fb) / (len(fa) + len(fb)) if fa and fb else 0.0
    return min(1.0, (got_a + got_b) / (len(a) + len(b)) * (1 - TIE) + TIE * tie)


def _function_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower().replace("'s", " ")) if w in FUNCTION_WORDS}


def best_match(text: str, options: Iterable[str], *, at_least: float = MATCH) -> str | None:
    """The option `text` says best (`similarity`, at least `at_least`), or None. Ties go to the
    first option, so callers pass a deterministic order."""
    best, score = None, at_least
    for option in options:
        s = similarity(text, option)
        if s > score or (best is None and s >= score and s > 0):
            best, score = option, s
    return best


def lexicon_accuracy(labels: Sequence[str], wordings: Sequence[str]) -> tuple[int, int]:
    """(right, asked): for each label, whether its best match among all `wordings` is its
    own (`wordings[i]` is `labels[i]`'s)."""
    right = sum(best_match(label, wordings, at_least=0.0) == wordings[i]
                for i, label in enumerate(labels))
    return right, len(labels)

