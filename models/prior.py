"""``--model prior:MODEL``: the model itself, asked with the content removed.

Contextual calibration (Zhao et al., 2021, "Calibrate Before Use") measures a model's bias
toward some answers by asking it a content-free input ("N/A") in the prompt's format. The
prior control does this for kgprobe's prompts: MODEL (any name `load_model` reads: a preset,
a directory, a ``.gguf`` file, a hub id) scores each prompt after `content_free` has

1. kept only the sentence that holds the ``[MASK]`` slot (the hypothesis; the written
   premises before it are dropped, the conjunction "Therefore ," that opens it is kept, as
   a premise-ablation prompt with no premise written keeps it), and
2. replaced the subject with ``N/A``: the text a bundled template (any language) puts at its
   ``text_a`` / ``text_b`` placeholders and meta fields (an entity's label, a property's
   pattern), and every pseudoword slot (``[X]``, ``[Y]``, ``[X0]``...).

So two prompts that differ only in their premises or their subject get the same scores: what
the prior ranks high, the model ranks high whatever the ontology says. A sentence no bundled
template matches and that holds no pseudoword slot has no subject the control can find; it
is refused (one `ModelError` line) rather than scored with its content in.

The scores are MODEL's own scorer's on the stripped prompts. The score cache keys them by the
wrapped model's identity, the `PriorScorer` class and the prompt as the study wrote it, so a
prior row is never served as the plain model's row (nor the other way round).
Only candidate ranking is offered: the other calls (letters, segments, distributions,
features, soft-template gradients) are one `ModelError` line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.capabilities import Declared

__all__ = ["CONTENT_FREE", "PREFIX", "PriorModel", "PriorScorer", "content_free", "prior_of"]

#: What stands where the content was (Zhao et al.'s content-free input).
CONTENT_FREE = "N/A"
#: ``prior:MODEL`` names the prior control of MODEL.
PREFIX = "prior:"

_MASK = "[MASK]"
_PSEUDOWORD = re.compile(r"\[(?!MASK\])[A-Z]\d*\]")
_SENTENCE_END = re.compile(r"[.!?]\s+")
_HOLE = "\x01"


def prior_of(name: str) -> str | None:
    """The wrapped model's name if `name` is ``prior:MODEL``, else None."""
    return name[len(PREFIX):] if name.startswith(PREFIX) else None


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[re.Pattern, ...], tuple[str, ...]]:
    """Every bundled manual template as a regex whose groups are its content, most literal
    text first (so "One has to be a particular [MASK] if (.+) ." wins over "(.+) [MASK] (.+) ."),
    and every bundled conjunction."""
    from kgprobe.ontology.languages import available_languages
    from kgprobe.ontology.verbalize import load_templates

    shapes, conjunctions = set(), set()
    for lang in available_languages():
        templates = load_templates(lang=lang)
        conjunctions.add(templates.conjunction)
        for relation in templates.relations.values():
            for template in relation.manual:
                meta = {p.value: _HOLE for p in template.parts if p.kind == "meta"}
                shapes.add(template.render(_HOLE, _HOLE, meta))
    ordered = sorted(shapes, key=lambda s: (-len(s.replace(_HOLE, "")), s))
    patterns = tuple(re.compile("".join("(.+?)" if piece == _HOLE else re.escape(piece)
                                        for piece in re.split(f"({_HOLE})", shape) if piece),
                                re.IGNORECASE | re.DOTALL) for shape in ordered)
    return patterns, tuple(sorted(conjunctions, key=len, reverse=True))


def content_free(prompt: str) -> str:
    """`prompt` with its premises dropped and its subject replaced by `CONTENT_FREE`."""
    at = prompt.find(_MASK)
    if at < 0:
        raise ModelError(f"the prior control reads prompts with a [MASK] slot, and "
                         f"'{prompt[:80]}' has none; use a ranking study")
    # The hypothesis is the last sentence before the slot; a label may itself hold a sentence
    # end ("Yahoo! [MASK] Terry Semel ."), so each earlier sentence start is tried in turn,
    # from the last, until a template matches.
    starts = [m.end() for m in reversed(list(_SENTENCE_END.finditer(prompt, 0, at)))] + [0]
    patterns, conjunctions = _patterns()
    for start in starts:
        sentence = prompt[start:].strip()
        opening = next((c for c in conjunctions if sentence.startswith(c + " ")), "")
        body = sentence[len(opening):].strip()
        found = next((m for m in map(lambda p: p.fullmatch(body), patterns) if m), None)
        if found:
            pieces, last = [], 0
            for g in range(1, (found.lastindex or 0) + 1):
                pieces += [body[last:found.start(g)], CONTENT_FREE]
                last = found.end(g)
            body = "".join(pieces) + body[last:]
            break
    else:
        sentence = prompt[starts[0]:].strip()
        opening = next((c for c in conjunctions if sentence.startswith(c + " ")), "")
        body = sentence[len(opening):].strip()
        if not _PSEUDOWORD.search(body):
            raise ModelError(f"the prior control finds no subject in '{sentence[:80]}' (no "
                             "bundled template matches it, no [X] slot); it reads prompts "
                             "built from kgprobe's templates")
    body = _PSEUDOWORD.sub(CONTENT_FREE, body)
    return f"{opening} {body}" if opening else body


class PriorScorer:
    """MODEL's scorer, handed `content_free` prompts and no pseudoword vectors (their slots
    are gone). Its settings (pooling, masks, ...) are the wrapped scorer's, read through.

    Stripped, a study's thousands of prompts are a few dozen texts (one a template and a
    conjunction), so each (content-free text, candidate) is scored once per scorer and kept:
    a candidate's score under a causal or masked LM depends on the text and the candidate
    alone, not on the other candidates asked beside it (`models.causal`). The demo preset's
    804 reasoning prompts (``--dry-run``) strip to 6 texts."""

    def __init__(self, inner: Any, name: str):
        self.inner = inner
        self.name = name
        self._memo: dict[tuple[str, str], float] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def score(self, prompts: Sequence[str], candidates: Sequence[str], *, pseudowords=None,
              batch_size: int = 32) -> np.ndarray:
        texts = [content_free(p) for p in prompts]
        memo = self._memo
        todo = list(dict.fromkeys(t for t in texts if any((t, c) not in memo for c in candidates)))
        if todo:
            missing = list(dict.fromkeys(c for t in todo for c in candidates
                                         if (t, c) not in memo))
            for t, row in zip(todo, self.inner.score(todo, missing, batch_size=batch_size)):
                for c, value in zip(missing, row):
                    memo.setdefault((t, c), float(value))
        return np.array([[memo[(t, c)] for c in candidates] for t in texts], dtype=float)

    def score_tensor(self, *args: Any, **kwargs: Any) -> Any:
        raise ModelError(f"{self.name} has no soft-template gradients (its prompts lose their "
                         "content); use --templates manual")


class PriorModel(Declared):
    """``prior:MODEL``: MODEL's `LanguageModel` with `scorer` asking content-free prompts.

    Every attribute a study reads to decide how to ask (``fills_masks``, ``default_pooling``,
    ``kind``, ``input_embeddings``, ``source``, ...) is MODEL's, so no study knows it is
    asking a control; `name` is ``prior:MODEL``, so its results and run folders say so.
    Beyond ranking, what it answers (open answers, next-token logits, input embeddings) is
    MODEL's, read through; the rest is refused in one line (`models.capabilities`)."""

    capabilities: ClassVar[frozenset[str]] = frozenset({"rank", "generate", "next_token",
                                                        "embeddings"})
    hint: ClassVar[str] = ("the prior control ranks candidates only; use --model "
                           "{model.inner.name} for this study")

    def __init__(self, inner: Any, name: str | None = None):
        self.inner = inner
        self.name = name or PREFIX + str(inner.name)

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def __repr__(self) -> str:
        return f"PriorModel({self.inner!r})"

    def trained_on(self, answers: Any) -> PriorModel:
        """A pretrained model learns nothing from a run's training answers; the prior neither."""
        return self

    def scorer(self, **settings: Any) -> PriorScorer:
        return PriorScorer(self.inner.scorer(**settings), self.name)
