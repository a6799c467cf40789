"""What a model answers, declared once, and the one refusal for what it does not.

A model family without weights or behind a server (the baselines, the premise-blind priors,
the reader and the heuristics, ``prior:MODEL``, ``openai:URL#MODEL``) answers some of the
`LanguageModel` calls and not others. It says which in one class attribute, `capabilities` (a
set of `CAPABILITIES` keys), and subclasses `Declared`: every method of a capability it does not
answer becomes a method that raises the one `refusal`, a `ModelError` line naming the model,
what it lacks and the family's hint (what to use instead). So a family lists what it can do,
not a stub for each thing it cannot, and a study calls any method on any model without a
check first: what cannot be answered says so in one line.

Why a set and not more class flags: the flags (`fills_masks`, `answers_next_token`, ...) say
*how* a model answers; `capabilities` says *whether*, and a test can read it. A capability a
class declares must resolve to a method (`Declared.__init_subclass__` checks at class
creation), and a method a subclass defines answers its capability.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kgprobe.errors import ModelError

__all__ = ["CAPABILITIES", "METHODS", "Declared", "refusal"]

#: Capability → what a model without it lacks (the refusal's words).
CAPABILITIES: Mapping[str, str] = {
    "rank": "candidate ranking",
    "letters": "option-letter answers",
    "generate": "open answers",
    "distribution": "slot distribution over a vocabulary",
    "next_token": "next-token distribution",
    "segments": "token log-probabilities",
    "features": "hidden states",
    "embeddings": "input embeddings to sample pseudowords near",
}
#: Capability → the `LanguageModel` methods that answer it.
METHODS: Mapping[str, tuple[str, ...]] = {
    "rank": ("scorer", "trained_on"),
    "letters": ("letter_scores",),
    "generate": ("generate",),
    "distribution": ("slot_distribution",),
    "next_token": ("next_token_logits",),
    "segments": ("segment_frame", "token_logprobs", "score_segments"),
    "features": ("features",),
    "embeddings": ("input_embeddings",),
}


def refusal(name: str, capability: str, hint: str) -> ModelError:
    """The one line a model called `name` answers a call of `capability` it lacks with:
    ``model 'NAME' has no WHAT: HINT`` (the hint says what the family is and what to use)."""
    return ModelError(f"model '{name}' has no {CAPABILITIES[capability]}: {hint}")


def _refuser(capability: str, method: str) -> Any:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise refusal(self.name, capability, self.refusal_hint(capability))

    refuse.__name__ = refuse.__qualname__ = method
    refuse.__doc__ = f"Refused: this model has no {CAPABILITIES[capability]} (`refusal`)."
    refuse.refuses = capability  # type: ignore[attr-defined]
    return refuse


class Declared:
    """A model family that declares its `capabilities`; the rest is refused by `refusal`.

    `hint` is formatted with the model (``{model.name}``, ``{model.inner.name}``) and ends
    every refusal's line; `hints` replaces it for some capabilities."""

    #: The capabilities (keys of `CAPABILITIES`) the family answers.
    capabilities: ClassVar[frozenset[str]] = frozenset(CAPABILITIES)
    #: What the family is and what to use instead, formatted with ``model=self``.
    hint: ClassVar[str] = "use a language model for this study"
    #: Capability → its own hint, where the family's `hint` does not say it.
    hints: ClassVar[Mapping[str, str]] = {}

    def refusal_hint(self, capability: str) -> str:
        return self.hints.get(capability, self.hint).format(model=self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = set(cls.capabilities) - set(CAPABILITIES)
        if unknown:
            raise TypeError(f"{cls.__qualname__}.capabilities names no capability: "
                            f"{sorted(unknown)}")
        # A method the class defines answers its capability (a user model that subclasses a
        # family and adds, say, `features` needs no declaration beside it).
        defined = {c for c, methods in METHODS.items()
                   if any(m in cls.__dict__ and not hasattr(cls.__dict__[m], "refuses")
                          for m in methods)}
        cls.capabilities = frozenset(cls.capabilities | defined)
        for capability, methods in METHODS.items():
            for method in methods:
                if capability not in cls.capabilities:
                    setattr(cls, method, _refuser(capability, method))
                elif capability not in defined and hasattr(getattr(cls, method, None), "refuses"):
                    raise TypeError(f"{cls.__qualname__} declares {capability!r} but inherits "
                                    f"a refusal of {method}; define it")
