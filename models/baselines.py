"""Baselines as models: ``--model frequency`` and ``--model random`` in every ranking study.

A baseline is a model family with no weights. `load_model` returns one for the names in
`models.registry.BASELINES` (the one list of them: `models.names` accepts them, the CLI's
model check and the studies know them only through it), and it answers the same calls a
pretrained model does: `scorer` ranks candidate fillers (OntoProbe §4.1's pseudo-models),
`letter_scores` picks an option letter (multiple choice), `trained_on` is handed the training
answers of the relation asked. So no study branches on what the model is: it loads ``--model``, hands it the training
answers, asks for scores.

* ``random`` ranks candidates in a seeded random order per prompt (the run's ``--seed``), the
  chance reference: the same seed gives the same numbers.
* ``frequency`` ranks the training answers of the relation asked by how often they are a gold
  (OntoProbe's Table 4 baseline row), then every other candidate in a seeded random order.
  The training answers come through `trained_on`, which a pretrained model ignores.
* ``copy`` ranks the candidates the prompt names first, the earlier named the higher, then
  the rest as ``frequency`` ranks them: the non-reasoning upper bound for written premises
  (a prompt that states the answer lets copying find it without any inference). A candidate
  is named by its words or in other words (`models.lexicon.PromptWords`): a property label
  names its wording ("Chairperson" names "'s chairperson is") and a wording its label, so an
  rdfs7 premise that names the superproperty by label is copied like any other (after the
  candidates named word for word).

Why `trained_on` and not a scorer setting: the training answers are data a run hands every
model alike (a pretrained model's knowledge comes from pretraining, so it has nothing to fit
and returns itself); as a scorer setting they would enter the score cache's key of every
pretrained model, and as a study-side ``if model == "frequency"`` each study would know the
baselines. `trained_on` returns a fitted copy instead of changing the model, so units of
different relations never see each other's counts, whatever order a resumed run takes them in.

Asked for an open answer (`generate`, ``--answers generate``), each gives its ranking's
analogue (`baseline_answers`): ``frequency`` the most frequent training answer, ``copy`` the
candidate the prompt names first (else that answer), ``random`` a seeded candidate.

Only ``copy`` reads the prompt's words (``random`` reads the text only as a seed); no
baseline reads pseudoword vectors. A baseline needs no torch to load or score, and does not
use the score cache (`caches_scores`): it is cheaper to compute than to look up, and a
frequency scorer's numbers depend on counts no model identity holds. What only
a network has (a slot distribution over a vocabulary, token log-probabilities, hidden states,
gradients for soft prompts) is one `ModelError` line naming the baseline.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.capabilities import Declared
from kgprobe.models.naming import PromptWords, blank_slots, mention, named_at  # noqa: F401 (mention: re-exported)

__all__ = ["Baseline", "CopyBaseline", "CopyModel", "FrequencyBaseline", "FrequencyModel", "RandomBaseline",
           "RandomModel", "stable_seed"]


#: Rankings a frequency-like baseline keeps (one per distinct candidate list it was asked).
RANKINGS_KEPT = 4096


def stable_seed(*parts: object) -> list[int]:
    """A numpy seed that depends only on `parts` (not on run order or on what else was drawn)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


# --------------------------------------------------------------------------------------
# Scorers (the `Scorer` protocol: score(prompts, candidates, pseudowords=...))
# --------------------------------------------------------------------------------------


class _NoGradients:
    name: str

    def score_tensor(self, *args: Any, **kwargs: Any) -> Any:
        """Soft prompts train through a model's gradients; a baseline has none."""
        raise ModelError(f"the {self.name} baseline has no gradients to train soft templates; "
                         "use --templates manual, or a model")


class RandomBaseline(_NoGradients):
    """Seeded random ranking; each prompt's order depends only on (seed, prompt text, candidates)."""

    kind = "baseline"

    def __init__(self, seed: int = 0, name: str = "random"):
        self.seed = int(seed)
        self.name = name

    def score(self, prompts, candidates, *, pseudowords=None, batch_size: int = 32) -> np.ndarray:
        out = np.zeros((len(prompts), len(candidates)), dtype=np.float64)
        for i, prompt in enumerate(prompts):
            rng = np.random.default_rng(stable_seed(self.seed, prompt, len(candidates), *candidates))
            out[i] = -rng.permutation(len(candidates)).astype(np.float64)  # distinct scores, no ties
        return out


class FrequencyBaseline(_NoGradients):
    """Gold labels of the training split by frequency, then the rest in a seeded random order.

    `train_golds`: the gold label strings of each training item, in split order (or a flat
    iterable of labels, or a ``{label: count}`` mapping in first-appearance order). Every gold
    of an item counts once (a TP item with the chain bacteria → species adds one to each).
    Every prompt gets the same ranking.

    Ties among equally frequent golds go to the one that appears first in the training split
    (item order, then answer order within an item). This is the rule OntoProbe's Table 4
    baseline row implies — its reference code sorts a ``Counter`` of the train golds stably by
    count — and it decides the numbers: on RG the train split has "place" and "person" twice
    each, "place" first, and the paper's R@1 of 10.7 (3 of 28 test golds are "place", 11 are
    "person") holds only if "place" ranks first. Labels with no training count follow in a
    seeded random order, as the paper's random tail; only MRR(a) depends on that seed.
    """

    kind = "baseline"

    def __init__(self, train_golds: Iterable[Iterable[str] | str] | Mapping[str, int], seed: int = 0, name: str = "frequency"):
        counts: Counter[str] = Counter()  # insertion order = first appearance in the split
        if isinstance(train_golds, Mapping):
            counts.update({str(k): int(v) for k, v in train_golds.items()})
        else:
            for item in train_golds:
                if isinstance(item, str):
                    counts[item] += 1
                else:
                    counts.update(str(x) for x in item)
        self.counts = counts
        self.first_seen = {label: i for i, label in enumerate(counts)}
        self.seed = int(seed)
        self.name = name
        self._rankings: dict[tuple[str, ...], np.ndarray] = {}

    def ranking(self, candidates: Sequence[str]) -> np.ndarray:
        """Candidate indices best first. Kept per candidate list (the last `RANKINGS_KEPT`):
        a memorization task asks one pool of hundreds for every prompt, and each ranking
        hashes the whole pool for its seed and sorts it in Python."""
        key = tuple(candidates)
        found = self._rankings.get(key)
        if found is None:
            if len(self._rankings) >= RANKINGS_KEPT:
                self._rankings.clear()
            found = self._rankings[key] = self._rank(candidates)
        return found.copy()

    def _rank(self, candidates: Sequence[str]) -> np.ndarray:
        """`ranking`, computed."""
        rng = np.random.default_rng(stable_seed(self.seed, len(candidates), *candidates))
        tiebreak = rng.permutation(len(candidates))
        unseen = len(self.first_seen)

        def key(i: int) -> tuple[int, int, int]:
            count = self.counts.get(candidates[i], 0)
            if count > 0:
                return (-count, self.first_seen[candidates[i]], 0)
            return (0, unseen, int(tiebreak[i]))

        return np.array(sorted(range(len(candidates)), key=key), dtype=np.int64)

    def score(self, prompts, candidates, *, pseudowords=None, batch_size: int = 32) -> np.ndarray:
        row = np.zeros(len(candidates), dtype=np.float64)
        row[self.ranking(candidates)] = -np.arange(len(candidates), dtype=np.float64)
        return np.tile(row, (len(prompts), 1))


class CopyBaseline(FrequencyBaseline):
    """Candidates the prompt names first (earlier mention higher), then `FrequencyBaseline`.

    Named: by the candidate's words, or else in other words (`named_at`; a property label in
    the prompt names its wording among the candidates, and a wording its label), every
    word-for-word name before every other one.

    Overlapping labels: each label is matched on its own, so in "... a sports team ..." both
    ``sports team`` and ``team`` are named, ``sports team`` earlier (its mention starts
    first); two labels named from the same offset (``sports``, ``sports team``) rank the
    longer first, the more specific name. Labels named equally early otherwise, and every
    label the prompt does not name, keep the frequency order (training counts, then the
    seeded random order), which is also the whole ranking of a prompt that names none.
    """

    def __init__(self, train_golds, seed: int = 0, name: str = "copy"):
        super().__init__(train_golds, seed=seed, name=name)

    def tail(self, prompt: str, candidates: Sequence[str]) -> np.ndarray:
        """Each candidate's place in the order of the unnamed ones (here: frequency's)."""
        fallback = np.empty(len(candidates), dtype=np.int64)
        fallback[self.ranking(candidates)] = np.arange(len(candidates))
        return fallback

    def score(self, prompts, candidates, *, pseudowords=None, batch_size: int = 32) -> np.ndarray:
        out = np.zeros((len(prompts), len(candidates)), dtype=np.float64)
        for row, prompt in enumerate(prompts):
            fallback = self.tail(prompt, candidates)
            blank = blank_slots(prompt)
            words = PromptWords(blank)
            where = [named_at(c, blank, words) for c in candidates]
            order = sorted(range(len(candidates)), key=lambda i, where=where: (
                (0, where[i], -len(candidates[i]), int(fallback[i])) if where[i] is not None
                else (1, 0, 0, int(fallback[i]))))
            out[row, order] = -np.arange(len(candidates), dtype=np.float64)
        return out


def baseline_answers(model: Any, prompts: Sequence[str], candidates: Sequence[Sequence[str]] | None
                     ) -> list[str]:
    """A baseline's answer per prompt: frequency the most frequent training answer (ties: the
    first seen, as its ranking) — among the prompt's candidates where some was seen in
    training, so a prompt asking for a property is not answered with the commonest class —,
    copy the candidate the prompt names first (else frequency's answer), random a seeded
    candidate (its ranking's first). Empty when it has none to give."""
    scorer = model.scorer()
    most_frequent = ""
    if isinstance(scorer, FrequencyBaseline) and scorer.counts:
        seen = list(scorer.counts)
        most_frequent = seen[int(scorer.ranking(seen)[0])]
    out = []
    for i, prompt in enumerate(prompts):
        cands = list(candidates[i]) if candidates is not None else []
        if getattr(scorer, "ranks_prompts", False):  # the reader: its ranking's first
            out.append(cands[int(scorer.score([prompt], cands)[0].argmax())] if cands else "")
        elif isinstance(scorer, CopyBaseline):
            blank = blank_slots(prompt)
            words = PromptWords(blank)
            named = [(at, -len(c), c) for c in cands if (at := named_at(c, blank, words)) is not None]
            out.append(min(named)[2] if named else most_frequent)
        elif isinstance(scorer, FrequencyBaseline):
            seen = [c for c in cands if scorer.counts.get(c, 0) > 0]
            out.append(seen[int(scorer.ranking(seen)[0])] if seen else most_frequent)
        else:
            out.append(cands[int(scorer.score([prompt], cands)[0].argmax())] if cands else "")
    return out


# --------------------------------------------------------------------------------------
# The model family
# --------------------------------------------------------------------------------------


class Baseline(Declared):
    """A weightless model: the `LanguageModel` calls a ranking study makes, no network.

    The class attributes are the ones a study reads instead of a kind: a baseline has no mask
    slot to fill nor a pooling (``"-"`` in result rows, as its runs always wrote), it answers
    an option letter (`letter_scores`), and it keeps no score cache. What only a network has
    is not in `capabilities`: `models.capabilities` refuses it in one line.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"rank", "letters", "generate", "embeddings"})
    hint: ClassVar[str] = ("the {model.name} baseline ranks candidates only; use a language "
                           "model for this study")

    kind: ClassVar[str] = "baseline"
    fills_masks: ClassVar[bool] = False
    answers_next_token: ClassVar[bool] = True
    default_pooling: ClassVar[str] = "-"
    feature_pooling: ClassVar[str] = "-"
    #: Pseudowords are sampled (and ignored) around the mean of `input_embeddings`.
    pseudoword_anchor: ClassVar[str] = "mean"
    caches_scores: ClassVar[bool] = False

    def __init__(self, name: str, *, seed: int = 0):
        self.name = name
        self.seed = int(seed)
        self.source = None
        self.device = "cpu"
        self.info: dict = {"converted": False, "seconds": 0.0}
        self.tokenizer = None
        self.model = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, seed={self.seed})"

    # ------------------------------------------------------------------ what it answers
    def trained_on(self, answers: Iterable[Sequence[str] | str]) -> "Baseline":
        """This model after seeing the gold answers of a relation's training records (one
        sequence of labels per record, in split order); the random baseline ignores them."""
        return self

    def scorer(self, *, masks: str = "multi", pooling: str | None = None,
               include_suffix: bool | str = "auto", share_prefix: bool = True) -> Any:
        """The baseline's `Scorer`; a pretrained model's settings do not apply and are ignored."""
        raise NotImplementedError

    def letter_scores(self, questions: Sequence[str], options: Sequence[Mapping[str, str]], *,
                      instruction: str = "", use_chat_template: bool | None = None,
                      batch_size: int = 4) -> list[dict[str, float]]:
        """Per question, a score per option letter: the baseline's ranking of the options'
        texts (its scorer, reading the question only as a seed, as it reads any prompt)."""
        scorer = self.scorer()
        out = []
        for question, opts in zip(questions, options):
            letters = list(opts)
            row = scorer.score([question], [opts[letter] or letter for letter in letters])[0]
            out.append({letter: float(v) for letter, v in zip(letters, row)})
        return out

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 8,
                 stop: Sequence[str] = ("\n", "."), chat: bool = False,
                 candidates: Sequence[Sequence[str]] | None = None,
                 batch_size: int = 16, pseudowords=None) -> list[str]:
        """The baseline's own answer per prompt (`baseline_answers`): the
        most frequent training answer, the candidate the prompt names, a seeded candidate.
        Pseudoword vectors are never read (a baseline reads the text only)."""
        return baseline_answers(self, prompts, candidates)

    def input_embeddings(self) -> Any:
        """A small fixed matrix (the identity, [64, 64]: room for the paper's ten pseudoword
        pairs, mutually apart): the vectors a study samples from it are passed along like any
        model's and never read by the baseline."""
        import torch

        return torch.eye(self.hidden_size, dtype=torch.float32)

    @property
    def hidden_size(self) -> int:
        return 64


class RandomModel(Baseline):
    """``--model random``: every prompt's candidates in a seeded random order."""

    def scorer(self, **settings: Any) -> RandomBaseline:
        return RandomBaseline(seed=self.seed, name=self.name)


class FrequencyModel(Baseline):
    """``--model frequency``: the training answers by frequency, then a seeded random tail.

    Before `trained_on` it has seen no answers and ranks like its seeded tail alone."""

    def __init__(self, name: str, *, seed: int = 0,
                 answers: Iterable[Sequence[str] | str] | Mapping[str, int] = ()):
        super().__init__(name, seed=seed)
        self.answers = answers if isinstance(answers, Mapping) else list(answers)

    def trained_on(self, answers: Iterable[Sequence[str] | str]) -> "FrequencyModel":
        return FrequencyModel(self.name, seed=self.seed, answers=answers)

    def scorer(self, **settings: Any) -> FrequencyBaseline:
        return FrequencyBaseline(self.answers, seed=self.seed, name=self.name)


class CopyModel(FrequencyModel):
    """``--model copy``: the candidates each prompt names, earliest first, then ``frequency``.

    What it answers right, a reader of the prompt's words answers right without reasoning:
    a premise-ablation cell whose written premise states the answer is solved by copying."""

    def trained_on(self, answers: Iterable[Sequence[str] | str]) -> "CopyModel":
        return CopyModel(self.name, seed=self.seed, answers=answers)

    def scorer(self, **settings: Any) -> CopyBaseline:
        return CopyBaseline(self.answers, seed=self.seed, name=self.name)
