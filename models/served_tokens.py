"""What a served prompt's echo holds (`Echo`) and how its tokens are found with a given
tokenizer (``--tokenizer``) rather than the server's offsets: kept apart from `served.py`,
which asks the server, so that module stays about scoring.
"""

from __future__ import annotations

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
