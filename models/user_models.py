"""User models: ``--model package.module:ClassName`` and the ``kgprobe.models`` entry points.

A scorer someone brings (a heuristic, a retrieval system, a model behind their own code) runs
through every ranking study like a built-in model: the class follows the weightless-model
interface of `models.baselines.Baseline` (``scorer()`` returning an object with
``score(prompts, candidates, *, pseudowords=None, batch_size=32)``, ``trained_on(answers)``)
or subclasses the full `models.language_model.LanguageModel`. docs/user-models.md has a
complete example.

**How a name is read** (`user_model_spec`, `entry_point_class`): a name ``A:B`` is a user
model when ``A`` is a dotted Python module path and ``B`` a dotted attribute path (each part a
Python identifier: no ``/``, ``#`` or spaces), and ``A`` is none of the reserved prefixes
(`RESERVED`: ``openai:URL#MODEL``, ``prior:MODEL``, ``reader:Q``, ``heuristic:NAME``). So a hub
id (it has a ``/``), a ``.gguf`` file, a path or a served model is never taken for one. A
plain name (no ``:``) that a distribution registers in the ``kgprobe.models`` entry-point
group is that class; presets and the controls' names win over an entry point of the same
name, and an entry point wins over a hub id (it is looked up without the network).

The module is imported from ``sys.path``, and from the current directory when it is not found
there (a ``mymodel.py`` beside the command counts, as ``python -m`` would find it). This
module imports no torch; the user's module may.

**Control or not.** A user model is a model under test: its findings are claimed like any
model's. A class that sets ``control = True`` declares itself a control (a non-reasoner whose
run claims nothing, `models.names.is_control_model`); ``--controls`` still names only the
built-in controls.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from functools import lru_cache

from kgprobe.errors import ModelError

__all__ = ["ENTRY_POINTS", "RESERVED", "entry_point_class", "is_user_model", "load_user_model",
           "user_model_class", "user_model_spec"]

#: The entry-point group a distribution registers its model classes in (name → class).
ENTRY_POINTS = "kgprobe.models"
#: Prefixes of the built-in ``PREFIX:...`` names: never read as a module.
RESERVED = ("openai", "prior", "reader", "heuristic")
_SPEC = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_FIX = "see docs/user-models.md"


def user_model_spec(name: str) -> tuple[str, str] | None:
    """(module, attribute) when `name` has the ``module:Class`` form, else None."""
    found = _SPEC.fullmatch(name or "")
    if found is None or found.group(1).split(".")[0] in RESERVED:
        return None
    return found.group(1), found.group(2)


@lru_cache(maxsize=1)
def _entry_points() -> dict:
    """name → entry point of the ``kgprobe.models`` group (read once a process)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINTS)}


def entry_point_class(name: str) -> type | None:
    """The class an installed distribution registers as `name`, or None when none does; an
    entry point that does not load, or loads no model class, is one line."""
    if ":" in name or "/" in name:
        return None
    point = _entry_points().get(name)
    if point is None:
        return None
    try:
        cls = point.load()
    except Exception as err:  # noqa: BLE001 - the user's code: any failure is one line
        raise ModelError(f"--model {name}: the {ENTRY_POINTS} entry point {point.value} does "
                         f"not load ({type(err).__name__}: {_first(err)}); fix or reinstall "
                         "the package that registers it") from None
    return _checked(name, cls)


def _first(err: BaseException) -> str:
    return (str(err).splitlines() or [""])[0][:160]


def _import(name: str, module: str):
    """`module`, imported; from the current directory when ``sys.path`` lacks it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.split(".")[0]
        if err.name not in (module, top) and not module.startswith(f"{err.name}."):
            raise ModelError(f"--model {name}: importing {module} failed (no module named "
                             f"{err.name}); install {err.name}") from None
        here = os.getcwd()
        if here not in sys.path and (os.path.exists(os.path.join(here, f"{top}.py"))
                                     or os.path.isdir(os.path.join(here, top))):
            sys.path.append(here)
            importlib.invalidate_caches()
            return _import(name, module)
        raise ModelError(f"--model {name}: no module named {module} (neither importable nor "
                         f"a {top}.py in the current directory); pass module:Class of an "
                         f"importable module, {_FIX}") from None
    except Exception as err:  # noqa: BLE001 - the user's module: any failure is one line
        raise ModelError(f"--model {name}: importing {module} failed ({type(err).__name__}: "
                         f"{_first(err)}); fix the module") from None


def _checked(name: str, cls: object) -> type:
    """`cls` if it is a model class: a subclass of `Baseline` (the weightless interface) or of
    `LanguageModel` (looked up only if imported already: this module imports no torch)."""
    from kgprobe.models.baselines import Baseline

    bases = [Baseline]
    language_model = sys.modules.get("kgprobe.models.language_model")
    if language_model is not None:
        bases.append(language_model.LanguageModel)
    if not (isinstance(cls, type) and issubclass(cls, tuple(bases))):
        raise ModelError(f"--model {name}: {getattr(cls, '__qualname__', repr(cls)[:60])} is "
                         "not a model class; subclass kgprobe.models.baselines.Baseline (a "
                         f"scorer() and trained_on()) or LanguageModel, {_FIX}")
    return cls


def user_model_class(name: str) -> type | None:
    """The model class `name` names (``module:Class`` or an entry point), or None when `name`
    is neither form; a name of the form that does not resolve is one `ModelError` line."""
    spec = user_model_spec(name)
    if spec is None:
        return entry_point_class(name)
    module, attribute = spec
    found = _import(name, module)
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ModelError(f"--model {name}: {module} has no {attribute}; name a class the "
                             f"module defines ({_FIX})")
        found = getattr(found, part)
    return _checked(name, found)


def is_user_model(name: str | None) -> bool:
    """Whether `name` has a user model's form (``module:Class``) or is a registered entry
    point; nothing is imported but the entry-point table."""
    return bool(name) and (user_model_spec(name) is not None
                           or (":" not in name and "/" not in name
                               and name in _entry_points()))


def declares_control(name: str) -> bool:
    """Whether the user model `name` sets ``control = True`` (a control: its run claims
    nothing); False for any other name, and for one that does not resolve (loading says why)."""
    try:
        cls = user_model_class(name)
    except ModelError:
        return False
    return bool(cls is not None and getattr(cls, "control", False) is True)


def load_user_model(name: str, *, seed: int = 0) -> object:
    """The user model `name`, built as the baselines are: ``Class(name, seed=seed)``."""
    cls = user_model_class(name)
    if cls is None:
        raise ModelError(f"--model {name}: not a module:Class nor a {ENTRY_POINTS} entry "
                         f"point; {_FIX}")
    try:
        return cls(name, seed=seed)
    except Exception as err:  # noqa: BLE001 - the user's constructor
        raise ModelError(f"--model {name}: {cls.__qualname__}(name, seed=...) failed "
                         f"({type(err).__name__}: {_first(err)}); give the class an __init__"
                         "(self, name, *, seed=0) as Baseline's") from None
