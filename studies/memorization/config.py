"""The memorization study's settings: everything that decides its numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.reasoning.memorizing import RELATIONS, relation_name
from kgprobe.studies.ontology_source import OntologySource

MASKS = ("multi", "single")
SPLITS = ("train", "dev", "test")
#: `--protocol`: kgprobe's prompts and metrics, or the paper's as its official code writes them.
PROTOCOLS = ("default", "paper")


@dataclass
class MemorizationConfig:
    model: str
    tasks: tuple[str, ...] = RELATIONS
    templates: str = "all"  # a manual template index, or all
    masks: str = "multi"
    pooling: str | None = None  # None: the model's default (checked by `LanguageModel.scorer`)
    split: str = "test"
    limit: int | None = None  # records per task; None: the paper's (500 for TP and SCO)
    seed: int = 0
    probes: Path | None = None  # a `generate memorizing` folder; None: the paper's sets
    #: another ontology (`--store`, `--endpoint`, `--ontology`): sets generated from it (seeded
    #: split, as `generate memorizing --seed` writes them); None: the bundled ontology
    ontology: OntologySource | Path | None = None
    device: str = "cpu"
    batch_size: int = 64
    dtype: str = "float32"  # the weights' dtype (models/loading.DTYPES)
    cache: bool = True  # read and write the persistent score cache (models/score_cache)
    candidates: str = "all"  # "all", or K: the golds and seeded distractors, K in all
    protocol: str = "default"  # "paper": the paper's prompts, slices and metrics (reasoning/paper_items)
    ranking: str = "filtered"  # filtered: each gold ranked without the record's other golds

    def __post_init__(self) -> None:
        self.tasks = tuple(relation_name(t) for t in self.tasks)
        if self.templates != "all" and not str(self.templates).isdigit():
            raise StudyError(f"--template {self.templates}: use a template index (0, 1, …) or all")
        if self.masks not in MASKS:
            raise StudyError(f"--masks {self.masks}: use one of {', '.join(MASKS)}")
        if self.split not in SPLITS:
            raise StudyError(f"--split {self.split}: use one of {', '.join(SPLITS)}")
        if self.protocol not in PROTOCOLS:
            raise StudyError(f"--protocol {self.protocol}: use one of {', '.join(PROTOCOLS)}")
        if self.protocol == "paper" and (self.probes is not None or self.split != "test"
                                         or not self.source.bundled):
            raise StudyError("--protocol paper: the paper's test records of the bundled sets; "
                             "drop --probes, --store, --endpoint, --ontology and --split")
        if self.limit is not None and self.limit < 1:
            raise StudyError(f"--limit {self.limit}: give at least 1 record per task")
        from kgprobe.reasoning.filtering import parse_ranking

        self.ranking = parse_ranking(self.ranking)

    @classmethod
    def from_args(cls, args) -> "MemorizationConfig":
        """The configuration of ``kgprobe study memorization`` (and `kgprobe.run`): every
        option checked here, before any data is read or a model loads."""
        from kgprobe.reasoning.distractors import parse_protocol

        parse_protocol(args.candidates)
        if args.model is None and not args.dry_run:
            raise StudyError("--model: give a model (a preset, HF id, local dir, .gguf file, "
                             "frequency or random), or pass --dry-run to only write the prompts")
        tasks = list(RELATIONS) if args.task == "all" else [args.task]
        source = OntologySource.from_args(args, ask=args.protocol != "paper")
        return cls(args.model or "-", tasks=tasks, templates=args.template, masks=args.masks,
                   pooling=args.pooling, split=args.split, limit=args.limit, seed=args.seed,
                   device=args.device, batch_size=args.batch_size,
                   dtype=args.dtype, cache=not args.no_cache, candidates=args.candidates,
                   protocol=args.protocol, ranking=args.ranking,
                   probes=source.location if source.origin == "probes" else None,
                   ontology=None if source.origin == "probes" else source)

    def pinned(self) -> dict:
        """The settings a run folder is pinned to.

        Task, template, masks, pooling, split and the number of records are in every unit's
        key, so a rerun with other values of those adds or redoes only the units they change;
        the model, the seed, the probe set, the protocol and the ranking change every unit's numbers, so
        they are pinned.
        """
        probes = str(Path(self.probes).expanduser().resolve()) if self.probes else None
        pinned = {"model": self.model, "seed": self.seed, "probes": probes,
                  "protocol": self.protocol, "ranking": self.ranking}
        if not self.source.bundled:  # a store's fingerprint, a file's hash: a changed one is refused
            pinned["source"] = self.source.pinned()
        return pinned

    @property
    def source(self) -> OntologySource:
        return OntologySource.of(self.ontology)

    @property
    def paper_sets(self) -> bool:
        """Whether the run asks the paper's bundled sets (and so their record limits)."""
        return self.probes is None and self.source.bundled

    def memorizing_sets(self) -> dict:
        """relation → `MemorizingSet` the run asks: the paper's, a `generate memorizing`
        folder's (`--probes`), or generated from the ontology the options name."""
        from kgprobe.reasoning.memorizing_sets import (
            generated_memorizing_sets,
            generated_sets,
            reference_sets,
        )

        if self.probes is not None:
            return generated_sets(self.probes, tasks=self.tasks)
        if self.source.bundled:
            return reference_sets(self.tasks)
        return generated_memorizing_sets(self.source.load().ontology, self.tasks, seed=self.seed,
                                         lang=self.source.language())
