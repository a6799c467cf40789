"""Is a model name loadable at all? Decided in well under a second, without torch.

`load_model` accepts a preset, a ``.gguf`` file, a local Hugging Face directory or a hub id.
A hub id that is not in the local hub cache used to be tried on the network, with retries
(30 s and ten lines of noise offline) before failing; `check_model_name` decides first: an id
in the local cache (`huggingface_hub.try_to_load_from_cache`, no network) is kept; an id that
is not is looked up once on the hub (one request, no retries, a short timeout) unless the hub is
switched off (``HF_HUB_OFFLINE``); an unknown name fails with the presets listed and the
closest match suggested. The weightless models are model names too, known here from the
one registry of them (`models.registry`): the controls (`CONTROLS`: the baselines
``frequency``, ``copy``, ``random`` and the premise-blind priors ``general``,
``test-prior``) and the weightless models that are no controls (``reader``, ``reader:Q``,
``heuristic:NAME``); so is ``prior:MODEL`` (`models.prior`) for every loadable MODEL that is
not itself a control. A
served model (``openai:URL#MODEL``, `models.served`) is checked for its form only here; the
server is asked when the model loads. A user model (``module:Class`` or a ``kgprobe.models`` entry point, `models.user_models`) is
loadable when its module imports and names a model class.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path

from kgprobe.errors import ModelError
from kgprobe.models.prior import prior_of
from kgprobe.models.registry import CONTROLS, weightless_loader
from kgprobe.models.user_models import declares_control, user_model_class, user_model_spec

#: The presets' names (`models.gguf.PRESETS`, which needs torch, has the same keys; tested).
PRESET_NAMES = ("gemma3-270m", "smollm2-135m")
#: Seconds the one hub look-up for an id that is not cached may take.
HUB_TIMEOUT = 3.0
#: Every weightless control by ``--model`` name (`models.registry.CONTROLS`).
WEIGHTLESS: Mapping[str, type] = CONTROLS


def _cached(name: str) -> bool:
    """True if the local hub cache holds `name`'s config.json (no network)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # not a valid repo id (HFValidationError) and the like
        return False


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _on_hub(name: str) -> str | None:
    """None if the hub knows `name` (or answers otherwise than "no such model"), else why not."""
    from huggingface_hub import model_info
    from huggingface_hub.errors import GatedRepoError, HFValidationError, RepositoryNotFoundError

    try:
        model_info(name, timeout=HUB_TIMEOUT)
    except GatedRepoError:  # it exists; loading says what access it needs
        return None
    except (RepositoryNotFoundError, HFValidationError):
        return "not on the Hugging Face hub"
    except Exception as err:  # noqa: BLE001 - a server error (it answered): let loading tell
        if getattr(err, "response", None) is not None:
            return None
        return "not in the local hub cache, and the hub cannot be reached"
    return None


def unknown_model(name: str, why: str, extra: tuple[str, ...] = ()) -> ModelError:
    """One line: what `name` is not, the presets and baselines, and the closest known name."""
    extra = tuple(WEIGHTLESS) + tuple(e for e in extra if e not in WEIGHTLESS)
    known = list(PRESET_NAMES) + list(extra)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ModelError(
        f"unknown model '{name}': {why}; pass a preset ({', '.join(PRESET_NAMES)}"
        f"{', ' + ', '.join(extra) if extra else ''}), a local model directory, a .gguf file, "
        f"a Hugging Face model id, a served model openai:URL#MODEL or a user model "
        f"module:Class{hint}")


def prior_target(name: str) -> str:
    """The model ``prior:MODEL`` wraps; a control there (``prior:frequency``) or nothing is
    one line: a control has no content-free prior of its own to ask."""
    inner = prior_of(name) or ""
    if (is_control_model(inner) or not inner.strip()
            or weightless_loader(inner) is not None):
        raise ModelError(f"--model {name}: the prior control asks a language model with the "
                         "content removed; name one after 'prior:' (e.g. "
                         f"prior:{PRESET_NAMES[-1]}), not a control")
    return inner


def check_model_name(name: str, *, extra: tuple[str, ...] = (),
                     local_files_only: bool | None = None) -> None:
    """Raise `ModelError` (one line, with a suggestion) unless `name` can be loaded: a preset,
    a control (`WEIGHTLESS`), one of `extra`, a user model (`models.user_models`: its module
    imported, its class checked), an existing ``.gguf`` file, a local directory, a hub id in
    the local hub cache, or (hub allowed) a hub id the hub knows."""
    if name in PRESET_NAMES or name in WEIGHTLESS or name in extra:
        return
    if user_model_class(name) is not None:
        return
    if weightless_loader(name) is not None:  # reader, reader:Q, heuristic:NAME (no controls)
        return
    if prior_of(name) is not None:
        check_model_name(prior_target(name), extra=extra, local_files_only=local_files_only)
        return
    from kgprobe.models.served_client import is_served, parse_served

    if is_served(name):
        parse_served(name)
        return
    path = Path(name).expanduser()
    if name.lower().endswith(".gguf"):
        if not path.is_file():
            raise unknown_model(name, "no such .gguf file", extra)
        return
    if path.is_dir():
        return
    if (path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1
            or not name.strip() or os.sep != "/" and os.sep in name):
        raise unknown_model(name, "not a model directory", extra)
    if _cached(name):
        return
    if local_files_only or _offline():
        raise unknown_model(name, "not in the local hub cache (the hub is off: HF_HUB_OFFLINE)",
                            extra)
    why = _on_hub(name)
    if why:
        raise unknown_model(name, why, extra)


def is_control_model(name: str | None) -> bool:
    """Whether `name` is a model of the baseline family (a baseline, a premise-blind prior,
    or ``prior:MODEL``): a control, which knows nothing of the items, so no study claims a
    finding from its run. A user model is one only when its class sets ``control = True``."""
    if name is None:
        return False
    return name in WEIGHTLESS or prior_of(name) is not None or declares_control(name)


def is_language_model(name: str | None) -> bool:
    """Whether `name` loads a language model with weights or behind a server (a preset, a
    ``.gguf`` file, a directory, a hub id, ``openai:URL#MODEL``): the models whose
    content-free prior (``prior:MODEL``) runs as a control by default. A control, a user
    model and any other ``PREFIX:...`` name are not; nothing is loaded to decide."""
    if not name or is_control_model(name):
        return False
    from kgprobe.models.served_client import is_served
    from kgprobe.models.user_models import is_user_model

    if is_served(name):
        return True
    return (":" not in name and not is_user_model(name)
            and weightless_loader(name) is None)  # `reader`: a positive control, no weights
