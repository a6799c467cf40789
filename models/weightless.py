"""Weightless models that are no controls, by ``--model`` name: the reader and the heuristics.

The baselines (`models.baselines.BASELINES`) are controls: `models.names.is_control_model`
knows them, and no study claims a finding from their runs. The models named here are
weightless too (no torch, no network) but are meant to be judged as models are: the reader
(``reader``, ``reader:Q``: `models.reader`) is a positive control a claim rule must claim, and
the heuristics (``heuristic:NAME``: `models.heuristics`) are non-reasoners it must refuse on
its own. Keeping them out of `BASELINES` is what keeps them out of the controls.
"""

from __future__ import annotations

from typing import Callable

from kgprobe.models.baselines import Baseline

__all__ = ["WEIGHTLESS_NAMES", "weightless_loader"]

#: The names to list where a model name is unknown (``reader:Q`` for any Q in 0…100).
WEIGHTLESS_NAMES = ("reader", "reader:Q", "heuristic:copy-random", "heuristic:copy-wording")


def weightless_loader(name: str) -> Callable[[int], Baseline] | None:
    """A function of the run's seed that builds the model called `name`, or None when `name`
    is no reader or heuristic. A malformed one (``reader:x``, ``heuristic:nope``) is one
    `ModelError` line naming the choices."""
    from kgprobe.models.heuristics import heuristic_class
    from kgprobe.models.reader import ReaderModel, reader_share

    if reader_share(name) is not None:
        return lambda seed: ReaderModel(name, seed=seed)
    cls = heuristic_class(name)
    if cls is not None:
        return lambda seed: cls(name, seed=seed)
    return None
