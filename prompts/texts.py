"""The study prompts kept as data (``prompts/*.toml``), like the OntoProbe templates.

A prompt's English lives in a TOML file beside this module, so a reader (or a translator)
changes the wording without touching the code that scores it.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@lru_cache(maxsize=None)
def prompt_texts(name: str) -> dict:
    """The parsed ``prompts/NAME.toml`` (``copen``, ``sta``)."""
    text = (resources.files("kgprobe.prompts") / f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)
