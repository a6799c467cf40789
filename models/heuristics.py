"""Adversarial non-reasoners, ``--model heuristic:NAME``: premise-blind rankers run as models.

Why they exist: a claim rule is wrong if a model that cannot reason is claimed to reason. The
controls (`models.baselines`) are subtracted from a model's numbers; these models are NOT
controls (`models.names.is_control_model` is false for them), so a run of one is judged as a
language model's run is, and the claim rule must refuse it by itself. Each copies what the
prompt names and reads no premise as a premise:

* ``heuristic:copy-random``: the copy control's ranking (the candidates the prompt names,
  wordings included, earliest first) with a seeded random tail, per prompt as ``random``
  draws it, instead of the frequency tail: it does badly where nothing is written and well
  where the answer is written, a large "written − not written" gain with no reasoning.
* ``heuristic:copy-wording``: exactly the default ``copy`` control (wording-aware: a property
  label in the prompt names its wording among the candidates, `models.lexicon`), run as a
  model: in the rdfs7 both-written cell it is at the ceiling without an inference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgprobe.models.baselines import CopyBaseline, CopyModel, stable_seed

# ``heuristic:NAME`` is read in `models.registry` (`HEURISTICS`), which names these classes.

__all__ = ["CopyRandomBaseline", "CopyRandomModel", "CopyWordingModel"]


class CopyRandomBaseline(CopyBaseline):
    """Named candidates first (as `CopyBaseline`), then a seeded random order per prompt."""

    def tail(self, prompt: str, candidates) -> np.ndarray:
        rng = np.random.default_rng(stable_seed(self.seed, prompt, len(candidates), *candidates))
        return rng.permutation(len(candidates))


class CopyRandomModel(CopyModel):
    """``heuristic:copy-random``: copy, with a seeded random tail."""

    def trained_on(self, answers) -> "CopyRandomModel":
        return CopyRandomModel(self.name, seed=self.seed, answers=answers)

    def scorer(self, **settings: Any) -> CopyRandomBaseline:
        return CopyRandomBaseline(self.answers, seed=self.seed, name=self.name)


class CopyWordingModel(CopyModel):
    """``heuristic:copy-wording``: the wording-aware copy control, as a model."""

    def trained_on(self, answers) -> "CopyWordingModel":
        return CopyWordingModel(self.name, seed=self.seed, answers=answers)
