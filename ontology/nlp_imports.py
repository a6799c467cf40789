"""The language libraries imported without what they import for nothing: spaCy without
torch, lemminflect without spaCy, inflect without typeguard's instrumentation.

spaCy's machine-learning library, thinc, imports torch at import time whenever torch is
installed, only to offer torch-backed layers; the small English pipeline that words labels
and lemmatizes answers is thinc-native and never uses them. lemminflect, whose lexicon says
what parts of speech a word can be, imports spaCy only to register token extensions kgprobe
never calls. Importing torch costs several seconds on a 2-core machine and spaCy one or two
more, which every store, query and generate command would pay for a part-of-speech lookup.

So these imports run with the unneeded library hidden from the import system: a finder put
first on ``sys.meta_path`` answers ``import torch`` (or ``import spacy``) with
ModuleNotFoundError, which thinc and lemminflect catch as "not installed". The finder is
removed when the block ends, so a study that loads a model later imports torch as usual. A
library already imported is never hidden: its importers then see it as they would anyway.

inflect (articles, singular nouns) decorates its functions with typeguard's `@typechecked`,
which re-parses and recompiles the module's source at import: 3.5 s of CPU, against 0.3 s
without it (measured with ``python -c "import inflect"`` and with `unchecked_types`). The
checks only validate argument types, which kgprobe's calls (strings) always meet, so inflect
is imported with `typechecked` as the identity.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from importlib.abc import MetaPathFinder
from typing import Iterator

__all__ = ["hidden", "torch_hidden", "unchecked_types"]


class _Refuse(MetaPathFinder):
    """Answers an import of the hidden top-level names (and their submodules) with
    ModuleNotFoundError, as if they were not installed."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@contextmanager
def hidden(*names: str) -> Iterator[None]:
    """Imports inside the block see none of `names` that is not imported yet (see the module
    docstring); imports after the block are unaffected."""
    refuse = _Refuse(frozenset(n for n in names if n not in sys.modules))
    sys.meta_path.insert(0, refuse)
    try:
        yield
    finally:
        sys.meta_path.remove(refuse)


def torch_hidden():
    """`hidden("torch")`: what spaCy and its pipeline are imported and loaded under."""
    return hidden("torch")


@contextmanager
def unchecked_types() -> Iterator[None]:
    """Modules imported inside the block get typeguard's `typechecked` as the identity (see
    the module docstring); the real one is restored after it."""
    import typeguard

    real = typeguard.typechecked

    def identity(target=None, **_options):
        return target if target is not None else (lambda function: function)

    typeguard.typechecked = identity
    try:
        yield
    finally:
        typeguard.typechecked = real
