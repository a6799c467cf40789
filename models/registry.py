"""Every model kgprobe runs without weights, by ``--model`` name: the one registry of them.

Two kinds, kept apart because a study treats them differently:

* **Controls** (`CONTROLS`): the baselines (`BASELINES`: ``frequency``, ``copy``,
  ``random``, `models.baselines`) and the premise-blind priors (`PRIORS`: ``general``,
  ``test-prior``, `models.general_prior`). `models.names.is_control_model` knows them from
  here, ``--controls`` (`studies.controls`) offers them in this order, and no study claims a
  finding from their runs.
* **Weightless models that are no controls**: the reader (``reader``, ``reader:Q``,
  `models.reader`), a positive control a claim rule must claim, and the heuristics
  (``heuristic:NAME``, `HEURISTICS`, `models.heuristics`), non-reasoners it must refuse on its
  own. Keeping them out of `CONTROLS` is what keeps them out of the controls.

The family modules define the classes; this module names them, so a name is added in one
place and `load_model`, the name check, the controls and the CLI all know it.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from kgprobe.errors import ModelError
from kgprobe.models.baselines import Baseline, CopyModel, FrequencyModel, RandomModel
from kgprobe.models.general_prior import GeneralModel, TestPriorModel
from kgprobe.models.heuristics import CopyRandomModel, CopyWordingModel

__all__ = ["BASELINES", "CONTROLS", "COPY", "FREQUENCY", "HEURISTICS", "HEURISTIC_PREFIX", "PRIORS",
           "RANDOM", "heuristic_class", "scores_for_free", "weightless_loader"]

#: The baselines' ``--model`` names, for a study that names one (as its null, or as the
#: control a contrast subtracts).
FREQUENCY, COPY, RANDOM = "frequency", "copy", "random"
#: The baseline families by ``--model`` name, in the order ``--controls`` lists them.
BASELINES: dict[str, type[Baseline]] = {FREQUENCY: FrequencyModel, COPY: CopyModel,
                                        RANDOM: RandomModel}
#: The premise-blind priors by ``--model`` name (controls beside the baselines).
PRIORS: dict[str, type[FrequencyModel]] = {"general": GeneralModel, "test-prior": TestPriorModel}
#: Every weightless control, the baselines then the priors: a live view of both, so a
#: baseline registered later (a test's) is known everywhere too.
CONTROLS: Mapping[str, type] = ChainMap(PRIORS, BASELINES)
#: ``heuristic:NAME`` names a heuristic.
HEURISTIC_PREFIX = "heuristic:"
#: The heuristics by the NAME of ``heuristic:NAME``.
HEURISTICS: dict[str, type[CopyModel]] = {"copy-random": CopyRandomModel,
                                          "copy-wording": CopyWordingModel}


def scores_for_free(name: str) -> bool:
    """Whether the model called `name` scores without a network (a baseline). OntoProbe's
    memorization protocol ran these on every test record where it sliced the models' test
    sets to 500 records for their compute (Table 4); `--protocol paper` keeps that split."""
    return name in BASELINES


def heuristic_class(name: str) -> type[CopyModel] | None:
    """The model class of ``heuristic:NAME``, None for another name; an unknown NAME is one
    line naming the heuristics."""
    if not name.startswith(HEURISTIC_PREFIX):
        return None
    cls = HEURISTICS.get(name[len(HEURISTIC_PREFIX):])
    if cls is None:
        raise ModelError(f"--model {name}: no such heuristic; use one of "
                         + ", ".join(HEURISTIC_PREFIX + h for h in HEURISTICS))
    return cls


def weightless_loader(name: str) -> Callable[[int], Any] | None:
    """A function of the run's seed that builds the model called `name` when it is a reader
    or a heuristic (a weightless model that is no control), else None. A malformed one
    (``reader:x``, ``heuristic:nope``) is one `ModelError` line naming the choices."""
    from kgprobe.models.reader import ReaderModel, reader_share

    if reader_share(name) is not None:
        return lambda seed: ReaderModel(name, seed=seed)
    cls = heuristic_class(name)
    if cls is not None:
        return lambda seed: cls(name, seed=seed)
    return None
