"""The study prompts kept as data (``prompts/*.toml``), like the OntoProbe templates.

A prompt's English lives in a TOML file beside this module, so a reader (or a translator)
changes the wording without touching the code that scores it.
"""

from __future__ import annotations

import string
import sys
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgprobe.models.segments import Segment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@lru_cache(maxsize=None)
def prompt_texts(name: str) -> dict:
    """The parsed ``prompts/NAME.toml`` (``copen``, ``sta``)."""
    text = (resources.files("kgprobe.prompts") / f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def prompt_segments(name: str, key: str, **values: str) -> tuple["Segment", ...]:
    """The prompt ``[key]`` of ``prompts/NAME.toml`` as segments: each field its `parts` name
    its own segment (a scored text part), the template words between them, with the other
    fields filled in, one segment each."""
    from kgprobe.models.segments import Segment  # torch: only where a model scores them

    spec = prompt_texts(name)[key]
    segs: list[Segment] = []
    text = ""
    for literal, field, _, _ in string.Formatter().parse(spec["template"]):
        text += literal
        if field is None:
            continue
        if field in spec["parts"]:
            if text:
                segs.append(Segment(text))
            segs.append(Segment(values[field], field))
            text = ""
        else:
            text += values[field]
    if text:
        segs.append(Segment(text))
    return tuple(segs)
