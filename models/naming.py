"""Where a prompt names a candidate: by its words, or in other words (a label naming its wording).

The copy control (`models.baselines.CopyBaseline`) and the copy heuristics rank the candidates
a prompt names first. `mention` finds a candidate's own words; `PromptWords` finds its content
words together in one sentence (`models.lexicon.content_words`), which is how an rdfs7 premise
that names a property by its label ("Head of government implies chairperson .") names the
wordings the candidates are ("'s chairperson is"), and a fact's wording names its label.
`named_at` is the earlier of the two.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kgprobe.models.lexicon import FUNCTION_WORDS, content_words, trim, words_match

__all__ = ["PromptWords", "blank_slots", "mention", "named_at"]


#: Slots of a prompt (``[MASK]``, ``[X]``, ``[Y0]``, ``<s1>``): never a mention of a candidate.
_SLOT = re.compile(r"\[[^\[\]\s]*\]|<s\d+>")


def mention(label: str, text: str, *, blanked: bool = False) -> int | None:
    """Where `text` first names `label` (a character offset), or None.

    Case-insensitive, on word boundaries (``person`` is not named by ``personality``), any
    run of whitespace matching a label's space (``sports team`` is named by ``Sports  team``).
    Prompt slots (``[MASK]``, ``[X]``, ``<s1>``) are blanked first: a candidate ``mask`` is
    not named by the slot it is to fill (`blanked`: `text` is blanked already, as
    `CopyBaseline` does once per prompt rather than once per candidate)."""
    pattern = _label_pattern(label)
    if pattern is None:
        return None
    found = pattern.search(text if blanked else blank_slots(text))
    return found.start() if found else None


@lru_cache(maxsize=None)
def _label_pattern(label: str) -> re.Pattern | None:
    """A label's pattern, compiled once: a task's hundreds of candidates overflow `re`'s own
    cache, and recompiling them for every prompt made copy the slowest control by far."""
    words = label.split()
    if not words:
        return None
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)",
                      re.IGNORECASE)


def blank_slots(text: str) -> str:
    """`text` with its prompt slots blanked to spaces (offsets kept)."""
    return _SLOT.sub(lambda m: " " * len(m.group(0)), text)


def named_at(label: str, blank: str, words: "PromptWords") -> tuple[int, int] | None:
    """Where the (slot-blanked) prompt first names `label`, as (0, offset) by its own words
    (`mention`), else (1, offset) in other words (`words`, the prompt's `PromptWords`: a
    label naming its wording), else None. Sorting by it puts word-for-word names first."""
    first = _first_word(label)
    # a prompt that does not hold the label's first word does not name it word for word: a
    # substring test, where `mention`'s search costs a regular expression per candidate (an
    # ASCII label in an ASCII prompt only, where ignoring case is lowering both)
    if first is None or words.lowered is None or first in words.lowered:
        at = mention(label, blank, blanked=True)
        if at is not None:
            return (0, at)
    at = words.named_at(label)
    return None if at is None else (1, at)


@lru_cache(maxsize=1 << 16)
def _first_word(label: str) -> str | None:
    """An ASCII label's first word, lowered (None: no prefilter for this label)."""
    words = label.split()
    return words[0].lower() if words and label.isascii() else None


@lru_cache(maxsize=1 << 16)
def _needed(term: str) -> tuple[tuple[str, ...], int]:
    """A term's content words and how many of them a prompt must name (`PromptWords`)."""
    need = tuple(dict.fromkeys(content_words(term)))
    return need, (len(need) if len(need) <= 2 else -(-2 * len(need) // 3))


class PromptWords:
    """A prompt's content words with where they are, to find a term named in other words.

    A term (a label or a wording) is named here when at least two thirds of its content
    words (all of a term of one or two) stand within one sentence, no more than two other
    content words apart, each the same word or a word of the same stem (`lexicon.words_match`:
    "Head of government implies …" names "'s government is headed by", "Official language
    implies language used" names "'s widely used language is"). Looser than `mention`, so the
    copy ranks what it names this way after what the prompt names word for word."""

    def __init__(self, text: str):
        self.tokens: list[tuple[int, int, str]] = []  # (offset, sentence, word)
        sentence = 0
        for m in re.finditer(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?|\s\.(?=\s|$)", text):
            if m.group(0).endswith("."):
                sentence += 1
                continue
            word = m.group(0).lower()
            if word.endswith("'s"):
                word = word[:-2]
            if word in FUNCTION_WORDS or not word:
                continue
            self.tokens.append((m.start(), sentence, trim(word)))
        self.words = frozenset(w for _, _, w in self.tokens)
        self.stems = frozenset(w[:4] for w in self.words)  # a loose match shares these
        #: the text lowered, where lowering is what ignoring case means to `mention` (ASCII)
        self.lowered = text.lower() if text.isascii() else None

    def _may_match(self, word: str) -> bool:
        return word in self.words or (len(word) >= 4 and word[:4] in self.stems)

    def named_at(self, term: str) -> int | None:
        """Where the prompt first names `term` in its content words (an offset), or None."""
        need, enough = _needed(term)
        if not need:
            return None
        if sum(map(self._may_match, need)) < enough:
            return None
        hits = {w: [j for j, (_, _, t) in enumerate(self.tokens) if words_match(t, w)]
                for w in need}
        width = len(need) + 2
        for j in sorted({j for found in hits.values() for j in found}):
            sentence = self.tokens[j][1]
            inside = {k for k in range(j, j + width)
                      if k < len(self.tokens) and self.tokens[k][1] == sentence}
            if sum(bool(inside.intersection(found)) for found in hits.values()) >= enough:
                return self.tokens[j][0]
        return None
