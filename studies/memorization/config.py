"""The memorization study's settings: everything that decides its numbers."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.reasoning.distractors import Protocol, parse_protocol
from kgprobe.reasoning.filtering import Ranking, parse_ranking
from kgprobe.reasoning.memorizing import RELATIONS, relation_name
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options
from kgprobe.studies.controls import controls_option
from kgprobe.studies.options import (
    ANSWERS,
    answers_options,
    ModelSettings,
    candidates_option,
    chat_pinned,
    dry_run_option,
    model_options,
    ranking_option,
)

#: `kgprobe study memorization`: the name its run folders' config.json records (`pin_settings`).
NAME = "memorization"
#: The columns of results.csv and predictions that name a cell (`Study.cell_columns`).
CELL_COLUMNS = ("task", "template", "masks", "pooling", "split", "protocol")
#: results.csv's columns of a ranking run (each control's beside them: `controls.py`).
COLUMNS = ["task", "template", "masks", "pooling", "split", "n", "R@1", "R@5", "R@10", "MRR", "MRRa",
           "protocol", "study_protocol", "ranking"]

MASKS = ("multi", "single")
SPLITS = ("train", "dev", "test")
#: `--protocol`: kgprobe's prompts and metrics, or the paper's as its official code writes them.
PROTOCOLS = ("default", "paper")


@dataclass
class MemorizationConfig:
    model: str | None  # None: no model (a dry run, an export); pinned as "-"
    tasks: tuple[str, ...] = RELATIONS
    templates: str = "all"  # a manual template index, or all
    masks: str = "multi"
    pooling: str | None = None  # None: the model's default (checked by `LanguageModel.scorer`)
    split: str = "test"
    #: records per task; None: the paper's (500 for TP and SCO); 0 (`--limit 0`): all
    limit: int | None = None
    seed: int = 0
    probes: Path | None = None  # a `generate memorizing` folder; None: the paper's sets
    #: another ontology (`--store`, `--endpoint`, `--ontology`): sets generated from it (seeded
    #: split, as `generate memorizing --seed` writes them); None: the bundled ontology
    ontology: OntologySource | Path | None = None
    #: where and how the model computes: device, dtype, batch size, score cache (never
    #: pinned) and chat template (pinned unless none)
    settings: ModelSettings = ModelSettings()
    #: all, or K: the golds and seeded distractors, K in all (a string is parsed on construction)
    candidates: Protocol = Protocol()
    protocol: str = "default"  # "paper": the paper's prompts, slices and metrics (reasoning/paper_items)
    ranking: Ranking = "filtered"  # filtered: each gold ranked without the record's other golds
    answers: str = "rank"  # generate: the model's own answer, graded by the ontology
    max_new_tokens: int = 8  # --answers generate: the longest answer, in tokens
    #: the controls asked the same requests and shown beside every cell (`studies.controls`,
    #: `controls.py`); the CLI and `kgprobe.run` default to `controls.default_controls`
    controls: tuple[str, ...] = ()

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
        if self.limit is not None and self.limit < 0:
            raise StudyError(f"--limit {self.limit}: give a number of records per task (0: all)")
        if self.answers not in ANSWERS:
            raise StudyError(f"--answers {self.answers}: use one of {', '.join(ANSWERS)}")
        if self.answers == "generate" and self.protocol == "paper":
            raise StudyError("--answers generate: the paper protocol ranks candidates; drop "
                             "--protocol paper")
        if not 1 <= int(self.max_new_tokens) <= 256:
            raise StudyError(f"--max-new-tokens {self.max_new_tokens}: give 1 to 256")
        self.candidates = parse_protocol(self.candidates)
        from kgprobe.studies.controls import parse_controls

        self.controls = parse_controls(self.controls) if self.controls else ()
        from kgprobe.studies.controls import RANKING_ONLY

        for control in (c for c in RANKING_ONLY if c in self.controls):
            if self.answers == "generate":
                raise StudyError(f"--controls {control}: the {control} control ranks "
                                 f"candidates and writes no answer; drop {control} from "
                                 "--controls with --answers generate")
        self.ranking = parse_ranking(self.ranking)

    @classmethod
    def from_args(cls, args) -> "MemorizationConfig":
        """The configuration of ``kgprobe study memorization`` (and `kgprobe.run`): every
        option checked here, before any data is read or a model loads."""
        if args.model is None and not args.dry_run:
            raise StudyError("--model: give a model (a preset, HF id, local dir, .gguf file, "
                             "frequency or random), or pass --dry-run to only write the prompts")
        from kgprobe.studies.controls import parse_controls

        tasks = list(RELATIONS) if args.task == "all" else [args.task]
        source = OntologySource.from_args(args, ask=args.protocol != "paper")
        return cls(args.model, tasks=tasks, templates=args.template, masks=args.masks,
                   pooling=args.pooling, split=args.split, limit=args.limit, seed=args.seed,
                   settings=ModelSettings.from_args(args), candidates=args.candidates,
                   protocol=args.protocol, ranking=args.ranking, answers=getattr(args, "answers", "rank"),
                   max_new_tokens=getattr(args, "max_new_tokens", 8),
                   controls=parse_controls(getattr(args, "controls", None), args.model,
                                           ranking=getattr(args, "answers", "rank") != "generate"),
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
        pinned = {"model": self.model or "-", "seed": self.seed, "probes": probes,
                  "protocol": self.protocol, "ranking": self.ranking}
        if self.answers == "generate":  # a ranking folder's settings stay as they were
            pinned.update(answers=self.answers, max_new_tokens=self.max_new_tokens)
        pinned.update(chat_pinned(self.settings.chat_template, NAME))
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a control run as the model: frequency, copy, random, general, "
                        "test-prior (not needed with --dry-run)")
    p.add_argument("--task", default="all",
                   help="type|subClassOf|subPropertyOf|domain|range (or TP|SCO|SPO|DM|RG) or all")
    p.add_argument("--template", dest="template", default="all",
                   help="manual template index, or all")
    p.add_argument("--templates", dest="template", default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--protocol", choices=["default", "paper"], default="default",
                   help="paper: the paper's prompts, test records and metrics as its official "
                        "code writes them (docs/fidelity.md)")
    dry_run_option(p)
    p.add_argument("--masks", choices=["multi", "single"], default="multi",
                   help="masked LMs: one [MASK] per candidate token, or a single one")
    p.add_argument("--pooling", choices=["mean", "max", "first", "sum"], default=None,
                   help="pool the candidate's token log-probabilities (default: mean for masked, "
                        "sum for causal; a causal LM adds the log-probability of the text after "
                        "the slot where it is more than punctuation, docs/scoring.md)")
    p.add_argument("--split", choices=["train", "dev", "test"], default="test",
                   help="which records of each set are asked")
    p.add_argument("--limit", type=int, default=None,
                   help="records per task (0: all; default: the paper's, 500 for TP and SCO, "
                        "all others)")
    p.add_argument("--seed", type=int, default=0, help="seed of the distractors and baselines")
    candidates_option(p)
    ranking_option(p)
    answers_options(p, "the model writes its own answer (greedy, causal LMs and baselines)")
    controls_option(p)
    model_options(p, batch_size=64)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    add_ontology_options(p, probes=True)
