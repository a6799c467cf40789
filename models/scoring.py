"""One scoring interface for every model family.

A `Scorer` ranks candidate fillers of the ``[MASK]`` slot of prompts::

    scorer = load_model("bert-base-cased").scorer(masks="multi", pooling="mean")
    scores = scorer.score(["Person is a particular [MASK] ."], ["animal", "agent", "work"])
    # scores: np.ndarray [n_prompts, n_candidates], higher = better (log-probabilities)

Prompts contain exactly one literal ``[MASK]``. Pseudoword slots (``[X]``, ``[Y]``) are
replaced by one position each whose input embedding is the given vector::

    scorer.score(prompts, candidates, pseudowords={"[X]": vec})          # shared
    scorer.score(prompts, candidates, pseudowords=[{"[X]": v1}, ...])    # one per prompt

`LanguageModel.scorer` (and `make_scorer`, the same as a function) returns the model's own:
`MaskedScorer` (multiple / single masks, mean / max / first pooling;
OntoProbe §3.1.2), `CausalScorer` (log-probability of the candidate and, where the slot is
followed by more than punctuation, of the rest of the sentence, given the text before the
slot; shared prefix), and the baselines in `kgprobe.studies.metrics` (frequency,
random). The paper's 20-option protocol (§5) for instruct/chat causal
models is `kgprobe.prompts.multiple_choice`.
"""

from __future__ import annotations

from kgprobe.models.cloze import AUTO
from kgprobe.models.encoding import MASK, POOLINGS
from kgprobe.models.language_model import LanguageModel, Scorer

__all__ = ["MASK", "POOLINGS", "Scorer", "make_scorer"]


def make_scorer(
    loaded: LanguageModel,
    *,
    masks: str = "multi",
    pooling: str | None = None,
    include_suffix: bool | str = AUTO,
    share_prefix: bool = True,
) -> Scorer:
    """`loaded.scorer(...)`: the scorer of its family (see `LanguageModel.scorer`).

    masked: `masks` ``"multi"`` | ``"single"``; `pooling` ``"mean"`` (default) | ``"max"`` |
    ``"first"`` | ``"sum"``. causal: `pooling` ``"sum"`` (default) | ``"mean"`` | ``"first"`` |
    ``"max"``; `include_suffix` adds the log-probability of the text after the slot
    (``"auto"``: where it holds more than punctuation, `models.cloze`; True / False);
    `masks` is ignored.
    """
    return loaded.scorer(masks=masks, pooling=pooling, include_suffix=include_suffix,
                         share_prefix=share_prefix)
