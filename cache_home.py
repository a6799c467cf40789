"""Where kgprobe keeps what it may compute once and reuse across runs (the score cache, the
tagger's tags): a base module, so that the ontology layer's tag cache and the models layer's
score cache find the same folder without one importing the other."""

from __future__ import annotations

import os
from pathlib import Path

from kgprobe.errors import KgprobeError

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """``$KGPROBE_CACHE_DIR`` if set, else ``$KGPROBE_CACHE``, else ``~/.cache/kgprobe``. A
    variable naming a file is refused here, in one line, before anything is computed that
    could not be stored."""
    for variable in ("KGPROBE_CACHE_DIR", "KGPROBE_CACHE"):
        value = os.environ.get(variable)
        if value:
            path = Path(value).expanduser()
            if path.exists() and not path.is_dir():
                raise KgprobeError(f"{variable}={value}: is a file, and kgprobe's cache is a "
                                   f"folder; point {variable} at a folder, or unset it")
            return path
    return Path.home() / ".cache" / "kgprobe"
