"""Two premise-blind priors as models: ``general`` and ``test-prior`` (controls of the baseline family).

Both rank a prompt's candidates in one order that never depends on the prompt's words, so
whatever they score in a cell, a model could score without reading a premise.

* ``general`` ranks **the most general candidate first**. Generality comes only from what every
  model is handed (`trained_on`: the gold labels of each training record, one sequence a
  record). In a subClassOf or type record every ancestor of the subject is a gold, so a label
  ``c`` lies above a label ``d`` when every record that has ``d`` as a gold also has ``c``
  (and ``c`` has more): ``animal`` holds in every record ``dog`` holds in. A label's
  generality is how many labels lie below it by that test; ties go to the label that is a
  gold in more records (``frequency``'s count), then to the one seen first; labels never seen
  follow in a seeded random order, as ``frequency``'s tail. Why not the count alone: that is
  ``frequency`` already (a class's count grows with the instances below it); the number of
  labels below a class measures how much of the hierarchy it covers instead, which is what
  a conclusion up a chain (x ⊑ y ⊑ z ⊢ x ⊑ z: the gold is the most general term) rewards.
* ``test-prior`` ranks candidates by **how often they are golds of the other items among
  the requests it scores together** (one cell or unit: `studies.probes.held_out_scores`
  hands a scorer that has `given_gold_counts` the gold counts of the call's other items, one item
  at a time), then as ``general`` ranks the rest: the cell's answer distribution, read off the
  cell's own answers with the item's own left out (counting it would rank every gold above
  the distractors no other item answers: the prior would read the answer). An oracle of the
  distribution and a control only: no claim rests on beating less.

Neither reads a premise, a subject or a pseudoword vector; both rank through
`FrequencyBaseline.ranking` (so a baseline's letter answers and open answers follow), need no
torch and keep no score cache.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.baselines import FrequencyBaseline, FrequencyModel, stable_seed

__all__ = ["GeneralBaseline", "GeneralModel", "TestPriorBaseline", "TestPriorModel",
           "generality"]


def _records(train_golds: Iterable[Iterable[str] | str] | Mapping[str, int]) -> list[set[str]]:
    """Each training record's set of gold labels (a flat label is a record of one; a count
    mapping has no records, so no label lies below another)."""
    if isinstance(train_golds, Mapping):
        return []
    return [{item} if isinstance(item, str) else {str(x) for x in item} for item in train_golds]


def generality(records: Sequence[set[str]]) -> dict[str, int]:
    """label → how many labels lie below it: ``d`` lies below ``c`` when the records having
    ``d`` as a gold are a proper subset of those having ``c``. Each label's records are a
    bit set (a Python int), so a subset test is one ``&``; only pairs with strictly fewer
    records on the lower side are tested (a proper subset is smaller)."""
    bits: dict[str, int] = {}
    for row, labels in enumerate(records):
        for label in labels:
            bits[label] = bits.get(label, 0) | (1 << row)
    sizes = {label: bin(b).count("1") for label, b in bits.items()}
    ordered = sorted(bits, key=lambda label: sizes[label])
    below = dict.fromkeys(bits, 0)
    for i, low in enumerate(ordered):
        low_bits, low_size = bits[low], sizes[low]
        for high in ordered[i + 1:]:
            if sizes[high] > low_size and bits[high] & low_bits == low_bits:
                below[high] += 1
    return below


class GeneralBaseline(FrequencyBaseline):
    """The most general candidates first (`generality` of the training records), then by
    training count, first appearance, and a seeded random order for the unseen."""

    def __init__(self, train_golds, seed: int = 0, name: str = "general"):
        super().__init__(train_golds, seed=seed, name=name)
        self.below = generality(_records(train_golds))

    def _rank(self, candidates: Sequence[str]) -> np.ndarray:
        rng = np.random.default_rng(stable_seed(self.seed, len(candidates), *candidates))
        tiebreak = rng.permutation(len(candidates))
        unseen = len(self.first_seen)

        def key(i: int) -> tuple[int, int, int, int]:
            label = candidates[i]
            count = self.counts.get(label, 0)
            if count > 0:
                return (0, -self.below.get(label, 0), -count, self.first_seen[label])
            return (1, 0, unseen, int(tiebreak[i]))

        return np.array(sorted(range(len(candidates)), key=key), dtype=np.int64)


class TestPriorBaseline(GeneralBaseline):
    """The candidates by how often they are golds of the other items scored with it (their
    counts handed by `given_gold_counts`), then as `GeneralBaseline` ranks the training answers."""

    __test__ = False  # not a pytest class, despite its name

    def __init__(self, train_golds, seed: int = 0, name: str = "test-prior"):
        super().__init__(train_golds, seed=seed, name=name)
        # the gold counts it ranks by; None until handed them (`given_gold_counts`)
        self.test_counts: Counter[str] | None = None

    def given_gold_counts(self, counts: Mapping[str, int]) -> "TestPriorBaseline":
        """This scorer for requests whose gold labels are counted in `counts` (label → how
        many requests have it as a gold): a fresh scorer, so cells never see each other's
        answers. What depends on the training answers alone (their counts, generality and the
        general rankings kept so far) is shared with this one, not computed again."""
        fresh = copy.copy(self)
        fresh.test_counts = Counter(counts)
        return fresh

    def ranking(self, candidates: Sequence[str]) -> np.ndarray:
        if self.test_counts is None:
            raise ModelError(f"{self.name} ranks by the golds of the requests it scores, and "
                             "this study asks it without them; drop test-prior from --controls")
        general = np.empty(len(candidates), dtype=np.int64)
        general[super().ranking(candidates)] = np.arange(len(candidates))
        return np.array(sorted(range(len(candidates)), key=lambda i: (
            -self.test_counts.get(candidates[i], 0), int(general[i]))), dtype=np.int64)


class GeneralModel(FrequencyModel):
    """``--model general``: the most general training answers first (`GeneralBaseline`)."""

    def trained_on(self, answers: Iterable[Sequence[str] | str]) -> "GeneralModel":
        return type(self)(self.name, seed=self.seed, answers=answers)

    def scorer(self, **settings: Any) -> GeneralBaseline:
        return GeneralBaseline(self.answers, seed=self.seed, name=self.name)


class TestPriorModel(GeneralModel):
    """``--model test-prior``: each cell's own golds by frequency (`TestPriorBaseline`); a
    ranking study hands them (`studies.probes.score_requests`). It writes no open answer."""

    __test__ = False
    capabilities: ClassVar[frozenset[str]] = GeneralModel.capabilities - {"generate"}
    hints: ClassVar[Mapping[str, str]] = {
        "generate": "it ranks a study's candidates by their golds and writes no answer; drop "
                    "test-prior from --controls with --answers generate"}

    def scorer(self, **settings: Any) -> TestPriorBaseline:
        return TestPriorBaseline(self.answers, seed=self.seed, name=self.name)
