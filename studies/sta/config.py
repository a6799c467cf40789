"""The tacit-assumption study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.studies.sta import retrieval as ret

TASKS = ("retrieval", "elicitation")
VOCABS = ("lama", "concepts")
class StaError(StudyError):
    """Bad settings for the STA study."""


def default_vocab_file() -> Path:
    """``../shared/data/lama/common_vocab_cased.txt`` next to the repository."""
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "lama" / "common_vocab_cased.txt"


@dataclass
class StaConfig:
    norms: Path
    model: str
    format: str = "mcrae"
    tasks: tuple[str, ...] = TASKS
    limit: int | None = None  # concepts per task (a seeded sample)
    elicitation_limit: int | None = None  # elicitation concepts, if not `limit`
    seed: int = 0
    vocab: str | None = None  # retrieval vocabulary; None: lama (masked) / concepts (causal)
    vocab_file: Path | None = None  # LAMA list; default `default_vocab_file()`
    determiner: str = "a"  # "a": skip vowel-initial concepts (paper); "the": keep them
    template: str | None = None  # retrieval: statement / question; None: statement (masked), question (causal)
    conditions: tuple[str, ...] | None = None  # retrieval conditions (default: all)
    random_sets: int = ret.RANDOM_SETS
    random_permutations: int = ret.RANDOM_PERMUTATIONS
    device: str = "cpu"
    batch_size: int = 32
    progress: bool = True

    def fingerprint(self, model) -> dict:
        """The settings that determine the numbers (not device, batch size, progress)."""
        return {
            "norms": str(Path(self.norms).expanduser().resolve()), "format": self.format,
            "model": self.model, "kind": model.kind, "seed": self.seed, "limit": self.limit,
            "elicitation_limit": self.elicitation_concepts(),
            "vocab": self.retrieval_vocab(model.fills_masks), "determiner": self.determiner,
            "template": self.retrieval_template(model.fills_masks),
            "vocab_file": str(self.lama_file()),
            "random": [self.random_sets, self.random_permutations],
        }

    def elicitation_concepts(self) -> int | None:
        return self.elicitation_limit if self.elicitation_limit is not None else self.limit

    def retrieval_template(self, fills_masks: bool) -> str:
        """The paper's statement where the slot can stand first; a question ending in the
        slot for models that read only the next token."""
        return self.template or ("statement" if fills_masks else "question")

    def retrieval_vocab(self, fills_masks: bool) -> str:
        """lama, unless candidates are scored one pass each (causal statement: concepts)."""
        if self.vocab:
            return self.vocab
        statement = self.retrieval_template(fills_masks) == "statement"
        return "concepts" if not fills_masks and statement else "lama"

    def lama_file(self) -> Path:
        return Path(self.vocab_file).expanduser() if self.vocab_file else default_vocab_file()
