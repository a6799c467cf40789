"""Prompts that read alike but ask about different terms (homonyms), and `--namespace`.

Two terms with one label make one prompt: UBERON's "mouth" (a subdivision of the digestive
tract) and ENVO's "mouth" (of a river) both give "Mouth is a [MASK] .", one gold each. A
model can be right for at most one of them, and nothing in the words says which is asked.
Qualifying the subject ("mouth (watercourse)") puts a word of the gold into the prompt and
reads as no sentence a speaker writes, so such prompt groups are dropped and counted: the
count says how much of an ontology its labels leave ambiguous. A group whose golds agree
(the same term listed twice) is no homonym and stays.

Both the memorizing records and the reasoning items use `contradicting`; `OUTSIDE` is the
reason their builders count what `--namespace` left out (`Ontology.in_namespace`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Callable, Hashable, Iterable, TypeVar

#: Why a prompt is left out: it reads as another prompt with a different gold.
HOMONYM = "homonym (one prompt, different answers)"
#: ... or its subject or answer is not one of the ontology's own terms (`--namespace`).
OUTSIDE = "outside --namespace"

T = TypeVar("T")


def contradicting(entries: Iterable[T], prompt: Callable[[T], Hashable],
                  gold: Callable[[T], Hashable],
                  term: Callable[[T], Hashable] = lambda e: None) -> list[T]:
    """The entries whose prompt another entry reads as, with another gold and (where `term`
    tells; None: it does not) another term asked about: one term's several golds (an
    instance with two most specific types) are no homonym."""
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for e in entries:
        groups[prompt(e)].append(e)
    out = []
    for group in groups.values():
        terms = {term(e) for e in group}
        if len({gold(e) for e in group}) > 1 and (None in terms or len(terms) > 1):
            out.extend(group)
    return out


def prompt_key(text: str) -> str:
    """A subject's words as its prompts write them: spacing aside, and the first letter's
    case (a prompt capitalizes it: "mouth" and "Mouth" read alike), but not the others'
    ("REBASE" and "Rebase" are two prompts to a cased model)."""
    words = " ".join(text.split())
    return words[:1].lower() + words[1:]


def drop_homonyms(by_text: dict[tuple, Any], skipped: Counter) -> None:
    """Reasoning items (keyed by premise texts, hypothesis and answers: `items.count_by_text`)
    whose premises and hypothesis read as another item's with another answer, taken out of
    `by_text` and counted per rule."""
    for key, item in contradicting(list(by_text.items()), prompt=lambda kv: kv[0][:2],
                                   gold=lambda kv: kv[0][2]):
        del by_text[key]
        skipped[f"{item.rule}: {HOMONYM}"] += 1
