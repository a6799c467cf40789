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

spaCy itself imports its command-line package from its ``__init__`` (for ``spacy.info``),
and with it typer, requests and weasel: half of spaCy's import. `spacy_imports` imports
spaCy with stand-ins for that package (`cli_deferred`), which load the real one if
``spacy.info`` is ever called.

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

__all__ = ["cli_deferred", "hidden", "spacy_imports", "unchecked_types"]


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


@contextmanager
def spacy_imports() -> Iterator[None]:
    """What spaCy and its pipeline are imported and loaded under: torch hidden, and spaCy's
    command-line package deferred (`cli_deferred`)."""
    with hidden("torch"), cli_deferred():
        yield


@contextmanager
def cli_deferred() -> Iterator[None]:
    """spaCy imported without its command-line package, unless that is imported already.

    spaCy's ``__init__`` imports ``spacy.cli.info`` for ``spacy.info()``, and so every command
    of its CLI with typer, requests and weasel: half a second of the 1.3 s its import takes
    (``python -X importtime``), which every command that words a label paid. While the block
    runs, ``spacy.cli`` and ``spacy.cli.info`` are stand-ins whose ``info`` imports the real
    one when called; they are removed when it ends, so a later ``import spacy.cli`` loads the
    real package."""
    if "spacy" in sys.modules or "spacy.cli" in sys.modules:
        yield
        return
    import types

    package = types.ModuleType("spacy.cli")
    package.__path__ = []
    module = types.ModuleType("spacy.cli.info")

    def info(*args, **kwargs):
        import importlib

        return importlib.import_module("spacy.cli.info").info(*args, **kwargs)

    module.info = info
    package.info = module
    stand_ins = {"spacy.cli": package, "spacy.cli.info": module}
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


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
