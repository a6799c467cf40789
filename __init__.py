"""kgprobe: probe whether pretrained language models know and reason with an ontology.

The package root is the facade a notebook starts from: ``kgprobe.run(study, out=..., ...)``
and ``kgprobe.Results.from_path(run)`` (`kgprobe.studies.api`). They are loaded on first use,
by name, so ``import kgprobe`` (and every lower layer that imports it) stays light and the
root never depends on the studies at import time.
"""

__version__ = "0.1.0"

#: What `kgprobe.NAME` reaches in `kgprobe.studies.api`.
API = ("run", "Results", "config", "study_names")


def __getattr__(name: str):
    if name in API:
        import importlib

        return getattr(importlib.import_module("kgprobe.studies.api"), name)
    raise AttributeError(f"module 'kgprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
