"""The tacit-assumption study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import argparse

from kgprobe.errors import StudyError
from kgprobe.ontology.norms import FORMATS
from kgprobe.studies.options import (
    ModelSettings,
    dry_run_option,
    model_options,
    no_chat_template,
)
from kgprobe.studies.sta import retrieval as ret

#: `kgprobe study sta`: the name its run folders' config.json records (`pin_settings`).
NAME = "sta"
#: The columns of results.csv and predictions that name a cell (`Study.cell_columns`).
CELL_COLUMNS = ("task", "condition", "n_properties", "relation", "context")

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
    model: str | None  # None: no model (a dry run); recorded as "-"
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
    #: where and how the model computes (never pinned): device, dtype, batch size, the
    #: score cache (STA's scorers read distributions, which it keeps not) and the chat
    #: template, none only: STA reads distributions (`no_chat_template`)
    settings: ModelSettings = ModelSettings(batch_size=32)
    progress: bool = True

    def __post_init__(self) -> None:
        no_chat_template(self.settings.chat_template, NAME)

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
        if self.elicitation_limit is not None:
            return self.elicitation_limit or None  # 0: all
        return self.limit

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
        for name, value in (("--limit", args.limit), ("--elicitation-limit", args.elicitation_limit)):
            if value is not None and value < 0:
                raise StaError(f"{name} {value}: give a number of concepts (0: all)")
        return cls(
            norms=args.norms, model=args.model, format=args.format,
            tasks=TASKS if args.task == "all" else (args.task,), limit=args.limit or None,
            elicitation_limit=args.elicitation_limit, seed=args.seed, vocab=args.vocab,
            vocab_file=args.vocab_file, determiner=args.determiner, template=args.template,
            conditions=tuple(comma_list(args.conditions)) if args.conditions else None,
            random_sets=args.random_sets, random_permutations=args.random_permutations,
            settings=ModelSettings.from_args(args))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--norms", type=Path, default=None,
                   help="feature norms: McRae's CONCS_FEATS_concstats_brm.txt or CSLB's norms.dat (or their folder)")
    p.add_argument("--norms-format", dest="format", choices=FORMATS, default="mcrae", help="layout of --norms (default mcrae)")
    p.add_argument("--model", default=None, help="a preset (smollm2-135m, gemma3-270m), HF directory, hub id or .gguf")
    p.add_argument("--task", choices=["retrieval", "elicitation", "all"], default="all",
                   help="which STA task to run")
    p.add_argument("--limit", type=int, default=None, help="concepts per task, a seeded sample (0 or none: all)")
    p.add_argument("--elicitation-limit", type=int, default=None,
                   help="concepts for elicitation, if not --limit (elicitation prompts are cheaper)")
    p.add_argument("--seed", type=int, default=0, help="seed of the concept sample and the random baseline")
    p.add_argument("--vocab", choices=VOCABS, default=None,
                   help="retrieval candidates: lama (LAMA common vocabulary ∩ model single tokens) or concepts "
                   "(the norms' concepts); default lama, except concepts for causal LMs with --template statement")
    p.add_argument("--vocab-file", type=Path, default=None,
                   help=f"LAMA common vocabulary, common_vocab_cased.txt (default: ${VOCAB_ENV}; "
                        "needed for --vocab lama)")
    p.add_argument("--determiner", choices=ret.DETERMINERS, default="a",
                   help="retrieval prompts start 'A [MASK]' (vowel-initial concepts skipped, as the paper) "
                   "or 'The [MASK]' (every concept kept)")
    p.add_argument("--template", choices=ret.TEMPLATES, default=None,
                   help="retrieval prompt: statement ('A [MASK] has fur .', the paper's; causal LMs score it by "
                   "sentence log-likelihood, one pass per candidate) or question ('What has fur? It is a [MASK] .', "
                   "next-token distribution, one pass per prompt); default statement for masked LMs, question "
                   "for causal LMs")
    p.add_argument("--conditions", default=None,
                   help="retrieval conditions, comma-separated (default all): top-dec, top-inc, bottom-dec, "
                   "bottom-inc, random, group:visual perceptual, group:functional, …")
    p.add_argument("--random-sets", type=int, default=ret.RANDOM_SETS, help="random baseline: property sets per concept")
    p.add_argument("--random-permutations", type=int, default=ret.RANDOM_PERMUTATIONS,
                   help="random baseline: orders per set")
    model_options(p, batch_size=32)
    p.add_argument("--compare", type=Path, nargs="+", default=None, metavar="RUN",
                   help="only draw figures comparing finished runs (their --out folders) into --out")
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    dry_run_option(p)
