"""What a served prompt's echo holds (`Echo`), the checks it passes before any number of it is
scored (`checked_echo`), and how its tokens are found with a given tokenizer (``--tokenizer``)
rather than the server's offsets: kept apart from `served.py`, which asks the server, so that
module stays about scoring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kgprobe.errors import ModelError
from kgprobe.models.served_client import ServedClient


@dataclass
class Echo:
    """One echoed prompt: per token its text, text offset, log-probability and top alternative."""

    tokens: list[str]
    offsets: list[int]
    logprobs: list[float | None]
    top: list[str | None]


#: How far above 0 an echoed log-probability may be: float round-off of a log-softmax, never more.
SLACK = 1e-4


class InvalidEcho(ValueError):
    """Why an echo is not a list of log P(token | tokens before it): said in one line."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """A JSON number that is finite (NaN, ±Infinity and integers past a float's range are not)."""
    try:
        return _number(value) and math.isfinite(float(value))
    except OverflowError:
        return False


def _check_lists(tokens: Any, offsets: Any, values: Any, tops: Any) -> None:
    """One entry per token in every list, each of its type."""
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise InvalidEcho("its tokens are not a list of texts")
    for what, items in (("text_offset", offsets), ("token_logprobs", values),
                        ("top_logprobs", tops)):
        if not isinstance(items, list) or len(items) != len(tokens):
            got = f"{len(items)} entries" if isinstance(items, list) else type(items).__name__
            raise InvalidEcho(f"{what} has {got} for {len(tokens)} tokens")
    if not all(_finite(o) and o == int(o) and o >= 0 for o in offsets):
        raise InvalidEcho("text_offset holds an entry that is not a whole number ≥ 0")
    for k, top in enumerate(tops):
        if top is not None and not (isinstance(top, dict) and all(
                isinstance(t, str) and _number(v) for t, v in top.items())):
            raise InvalidEcho(f"top_logprobs[{k}] is {repr(top)[:40]}, not a map of tokens "
                              "to numbers")


def _check_values(tokens: list, offsets: list, values: list) -> None:
    """Finite, ≤ 0 (within `SLACK`), only the first one missing; offsets never going back,
    and moving past every token that has text (a token of no text, a piece of a character
    split over tokens, may share its offset with the next)."""
    for k, value in enumerate(values):
        if value is None and k == 0:
            continue
        if not _finite(value) or value > SLACK:
            raise InvalidEcho(f"token_logprobs[{k}] is {value!r}; a log-probability is a "
                              "finite number ≤ 0")
    for k in range(len(offsets) - 1):
        if offsets[k + 1] < offsets[k] or (tokens[k] and offsets[k + 1] == offsets[k]):
            raise InvalidEcho(f"text_offset[{k + 1}] is {offsets[k + 1]} after {offsets[k]} "
                              f"for the token {tokens[k]!r}; offsets must increase")


def checked_echo(lp: dict) -> Echo:
    """The echo in `lp` (a completions answer's ``logprobs``) if it can be scored, else
    `InvalidEcho`: a NaN, +inf or positive number, a list shorter than the tokens, or offsets
    that stand still were scored silently before (a NaN row even went into the score cache)."""
    tokens, offsets, values = lp["tokens"], lp["text_offset"], lp["token_logprobs"]
    tops = lp.get("top_logprobs")
    if tops is None and isinstance(tokens, list):
        tops = [None] * len(tokens)
    _check_lists(tokens, offsets, values, tops)
    if tokens and not all(v is None for v in values):
        _check_values(tokens, [int(o) for o in offsets], values)
    top = [max(t, key=t.get) if t else None for t in tops]
    return Echo(list(tokens), [int(o) for o in offsets], list(values), top)


def retokenized(echo: Echo, text: str, tokenizer: Any, client: ServedClient) -> Echo:
    """`echo` with its offsets found by `tokenizer` (``--tokenizer``) instead of the server's:
    `text`'s tokens must be echoed, piece for piece, as the last prompt tokens (the generated
    token may follow); each starts where the one before it ends (a byte-level tokenizer's
    offsets leave the joining space out of a token's start, never out of its end)."""
    try:
        spans = tokenizer(text, add_special_tokens=False,
                          return_offsets_mapping=True)["offset_mapping"]
    except NotImplementedError:
        raise ModelError(f"model '{client.label}': the tokenizer {client.spec.tokenizer} gives no "
                         "character offsets; give a fast (Rust) tokenizer") from None
    ends = [b for _, b in spans]
    starts = [0] + ends[:-1]
    n = len(ends)
    for first in (len(echo.tokens) - n - 1, len(echo.tokens) - n):
        if first >= 0 and "".join(echo.tokens[first:first + n]) == text:
            offsets = [-1] * first + starts + [len(text)] * (len(echo.tokens) - first - n)
            return Echo(echo.tokens, offsets, echo.logprobs, echo.top)
    raise ModelError(f"model '{client.label}': the tokenizer {client.spec.tokenizer} cuts "
                     f"{text[:40]!r}… into {n} tokens that the server did not echo (it echoed "
                     f"{len(echo.tokens)}); give the server's tokenizer, or drop --tokenizer to "
                     "use the server's own offsets")


def load_tokenizer(spec_tokenizer: str, label: str) -> Any:
    """``--tokenizer ID|DIR`` (a fast tokenizer: offsets are needed)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(spec_tokenizer, use_fast=True)
    except (OSError, ValueError) as err:
        raise ModelError(f"model '{label}': --tokenizer {spec_tokenizer}: cannot load it "
                         f"({str(err).splitlines()[0][:120]}); give a Hugging Face id or a "
                         "directory with tokenizer files") from None
