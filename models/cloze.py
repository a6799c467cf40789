"""The suffix rule: which text after a cloze's slot a causal LM must score.

A causal LM reads left to right, so by itself it ranks a candidate by log P(candidate | text
before the slot) and never sees the text after it. For a prompt such as "One has to be a
particular [MASK] if one's composer is a person ." that drops the half that says which
class is meant: every such prompt would reduce to the same prefix. The standard cloze score
for a decoder (lm-pub-quiz, minicons) is therefore the whole sentence,
log P(candidate + text after the slot | text before it).

The rule, decided here and nowhere else: the text after the slot is scored when it holds
more than punctuation (a word, a pseudoword slot such as ``[Y]``); a slot followed only by
final punctuation ("Paris is the capital of [MASK] .") is scored without it, as before: the
full stop says nothing about the candidate and costs one position per candidate. The
causal scorer applies it per prompt (``include_suffix="auto"``, the default) and the
lm-eval export writes the same continuations, so no study tests the model's kind.

Light on purpose (no torch): the prompt layer's lm-eval export imports it.
"""

from __future__ import annotations

import unicodedata

from kgprobe.ontology.verbalize import MASK

__all__ = ["AUTO", "RULE", "SUFFIX_MODES", "scores_suffix", "suffix_of", "uses_suffix"]

#: `include_suffix` value that applies the rule per prompt (the default everywhere).
AUTO = "auto"
SUFFIX_MODES = (AUTO, True, False)
#: The rule's name in the score cache's key (`models.score_cache`): a changed rule gets a
#: new name, so no score computed under the old one is served.
RULE = "beyond-punctuation-v1"


def scores_suffix(after: str) -> bool:
    """Whether `after` (the text after the slot) holds more than punctuation and spaces."""
    return any(not (ch.isspace() or unicodedata.category(ch).startswith("P")) for ch in after)


def suffix_of(prompt: str) -> str:
    """The text after the prompt's first ``[MASK]`` ("" when it has none)."""
    _, _, after = prompt.partition(MASK)
    return after


def uses_suffix(include_suffix: bool | str, prompt: str) -> bool:
    """Whether a causal scorer with this `include_suffix` setting scores `prompt`'s suffix:
    True / False always / never, ``"auto"`` by `scores_suffix`."""
    if include_suffix == AUTO:
        return scores_suffix(suffix_of(prompt))
    return bool(include_suffix)
