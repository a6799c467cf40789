"""The one registry of studies: `register_study` adds one, `discover` finds every sub-package's.

A study's light ``cli`` module decorates its `contract.Study` subclass with `register_study`;
`discover` imports each sub-package's ``cli`` module once (options and a handler, no torch).
Nothing here imports a study or the contract, so `results` and the CLI can ask for a study by
the name a run folder's ``config.json`` records.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any, Iterable

from kgprobe.errors import StudyError


class RegistryError(StudyError):
    """Two studies claim one name, or a name no study has."""


_STUDIES: dict[str, type] = {}
_DISCOVERED = False


def register_study(cls: type) -> type:
    """Class decorator: make `cls` the study named ``cls.name``. A second study under a name
    already taken is refused (re-importing the same class is not a clash)."""
    name = getattr(cls, "name", None)
    if not name or not isinstance(name, str):
        raise RegistryError(f"{cls.__qualname__}: a study needs a name")
    known = _STUDIES.get(name)
    if known is not None and _identity(known) != _identity(cls):
        raise RegistryError(f"study {name!r}: already registered by {_identity(known)}; "
                            f"{_identity(cls)} needs another name")
    _STUDIES[name] = cls
    return cls


def unregister_study(name: str) -> None:
    """Forget a study (tests register toy studies and remove them afterwards)."""
    _STUDIES.pop(name, None)


def _identity(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def discover() -> None:
    """Import every study sub-package's ``cli`` module once, so its decorator runs."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    import kgprobe.studies as package

    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.ispkg and importlib.util.find_spec(f"{package.__name__}.{module.name}.cli"):
            importlib.import_module(f"{package.__name__}.{module.name}.cli")
    _DISCOVERED = True


def studies() -> dict[str, Any]:
    """Every registered study by name, in a stable order (discovered ones, then others)."""
    discover()
    return {name: cls() for name, cls in _STUDIES.items()}


def get_study(name: str) -> Any:
    discover()
    cls = _STUDIES.get(name)
    if cls is None:
        raise RegistryError(f"{name!r}: no such study; use one of {', '.join(_STUDIES)}")
    return cls()


def registered_studies() -> tuple[tuple[str, type], ...]:
    """Every registered study's name and class: what the command line's parser is built from
    (`cli._parser` builds a new one when it changes)."""
    discover()
    return tuple(_STUDIES.items())


def study_names() -> Iterable[str]:
    discover()
    return list(_STUDIES)

