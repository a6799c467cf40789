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


#: Where the LAMA common vocabulary is found when --vocab-file is not given.
VOCAB_ENV = "KGPROBE_LAMA_VOCAB"


def default_vocab_file() -> Path | None:
    """``$KGPROBE_LAMA_VOCAB``: the LAMA list is not bundled (its licence is LAMA's), so the
    package never guesses a path of its own."""
    import os

    value = os.environ.get(VOCAB_ENV)
    return Path(value).expanduser() if value else None


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
            "vocab_file": str(self.vocab_file or default_vocab_file() or "") or None,
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
        path = Path(self.vocab_file).expanduser() if self.vocab_file else default_vocab_file()
        if path is None:
            raise StaError("--vocab lama needs the LAMA common vocabulary: pass --vocab-file "
                           f"PATH/common_vocab_cased.txt (or set {VOCAB_ENV}), or use --vocab "
                           "concepts")
        return path

    @classmethod
    def from_args(cls, args) -> "StaConfig":
        """The configuration of ``kgprobe study sta`` (and `kgprobe.run`)."""
        from kgprobe.studies.options import comma_list

        if args.norms is None or (args.model is None and not args.dry_run):
            raise StaError("kgprobe study sta needs --norms PATH and --model NAME (or --compare "
                           "RUN ..., or --dry-run with --norms to write the prompts without a "
                           "model)")
        return cls(
            norms=args.norms, model=args.model or "-", format=args.format,
            tasks=TASKS if args.task == "all" else (args.task,), limit=args.limit,
            elicitation_limit=args.elicitation_limit, seed=args.seed, vocab=args.vocab,
            vocab_file=args.vocab_file, determiner=args.determiner, template=args.template,
            conditions=tuple(comma_list(args.conditions)) if args.conditions else None,
            random_sets=args.random_sets, random_permutations=args.random_permutations,
            device=args.device, batch_size=args.batch_size)
