"""The consistency study's settings: everything that decides its numbers, checked once."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.reasoning.distractors import Protocol, parse_protocol
from kgprobe.reasoning.filtering import Ranking, parse_ranking
from kgprobe.reasoning.rule_names import RULES
from kgprobe.studies.controls import FREE, controls_option, parse_controls
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options
from kgprobe.studies.options import (
    answers_options,
    ModelSettings,
    candidates_option,
    chat_pinned,
    dry_run_option,
    model_options,
    ranking_option,
)

#: `kgprobe study consistency`: the name its run folders' config.json records (`pin_settings`).
NAME = "consistency"

@dataclass
class ConsistencyConfig:
    model: str | None  # None: no model (a dry run); pinned as "-"
    rules: tuple[str, ...] | None = None  # None: every rule that has derivations
    limit: int | None = 50  # derivations per rule (seeded sample); None: all
    seed: int = 0
    templates: str = "0"  # a manual template index, or all
    #: all, or K: the gold and K − 1 seeded false candidates (a string is parsed on construction)
    candidates: Protocol = Protocol()
    ranking: Ranking = "filtered"  # filtered: a statement's other true answers never count
    believe_at: int = 1  # a statement is believed when its gold ranks at or above this
    #: where the ontology comes from (`studies.ontology_source`); a path: an RDF file or
    #: OntoProbe folder; None: the bundled one
    ontology: OntologySource | Path | None = None
    #: where and how the model computes: device, dtype, batch size, score cache (never
    #: pinned) and chat template (pinned unless none)
    settings: ModelSettings = ModelSettings()
    #: whose consistency the headline subtracts (`controls.REFERENCES`): prior = prior:MODEL
    reference: str = "prior"
    #: rank, or generate: a statement believed when the model writes its gold (`generate.py`)
    answers: str = "rank"
    max_new_tokens: int = 8  # --answers generate: the longest answer, in tokens
    #: the controls scored beside the model and tested against it (`claims`); `FREE` by default
    controls: tuple[str, ...] = FREE

    def __post_init__(self) -> None:
        self.candidates = parse_protocol(self.candidates)
        self.ranking = parse_ranking(self.ranking)
        self.controls = parse_controls(self.controls)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ConsistencyConfig":
        """The configuration of ``kgprobe study consistency`` (and `kgprobe.run`): every
        option checked here, before the ontology is read or a model loads."""
        from kgprobe.studies.options import comma_list

        if args.model is None and not args.dry_run:
            raise StudyError("--model: give a model (a preset, HF id, local dir, .gguf file or "
                             "a control run as the model: frequency, copy, random, general, "
                             "test-prior), or pass --dry-run to only write the prompts")
        if args.believe_at < 1:
            raise StudyError(f"--believe-at {args.believe_at}: give a rank of at least 1 (1: "
                             "a statement is believed when its gold ranks first)")
        if args.limit < 0:
            raise StudyError(f"--limit {args.limit}: give a number of derivations per rule "
                             "(0: all)")
        if args.template != "all" and not str(args.template).isdigit():
            raise StudyError(f"--template {args.template}: use a template index (0, 1, …) or all")
        from .generate import check

        answers = getattr(args, "answers", "rank")
        max_new_tokens = getattr(args, "max_new_tokens", 8)
        reference = check(answers, max_new_tokens, args.believe_at, args.reference)
        controls = parse_controls(getattr(args, "controls", None),
                                  ranking=answers != "generate")
        if answers == "generate" and "prior" in controls:
            raise StudyError("--controls prior: the content-free prior has no open answer; "
                             "leave prior out with --answers generate")
        rules = None
        if args.rules != "all":
            rules = tuple(r for r in RULES if r in comma_list(args.rules, choices=RULES,
                                                              option="--rules"))
        return cls(args.model, rules, args.limit or None, args.seed, args.template,
                   args.candidates, args.ranking, args.believe_at,  # parsed on construction
                   OntologySource.from_args(args), settings=ModelSettings.from_args(args),
                   reference=reference, answers=answers, max_new_tokens=max_new_tokens,
                   controls=controls)

    def pinned(self) -> dict:
        """The settings a run folder is pinned to: every one that decides which statements
        are asked and how they rank (``--believe-at`` only reads the ranks: `report_settings`)."""
        source = self.source
        pinned = {"model": self.model or "-", "rules": list(self.rules) if self.rules else "all",
                  "limit": self.limit, "seed": self.seed, "templates": self.templates,
                  "candidates": self.candidates.option, "ranking": self.ranking,
                  "ontology": "bundled" if source.bundled else source.describe()}
        if self.answers == "generate":  # a ranking folder's settings stay as they were
            pinned.update(answers=self.answers, max_new_tokens=self.max_new_tokens)
        if not source.bundled:  # a store's fingerprint, a file's hash: a changed one is refused
            pinned["source"] = source.pinned()
        return {**pinned, **chat_pinned(self.settings.chat_template, NAME)}

    @property
    def source(self) -> OntologySource:
        return OntologySource.of(self.ontology)

    def report_settings(self) -> dict:
        return {"believe_at": self.believe_at, "reference": self.reference,
                "controls": list(self.controls)}

    def template_indices(self, n_templates: int) -> list[int]:
        """The template indices a run asks: one, or every index some relation has."""
        return list(range(n_templates)) if self.templates == "all" else [int(self.templates)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a control run as the model: frequency, copy, random, general, "
                        "test-prior (not needed with --dry-run)")
    p.add_argument("--rules", default="all",
                   help="comma-separated rules (rdfs2, rdfs3, rdfs5, rdfs7, rdfs9, rdfs11), or "
                        "all: every rule with derivations among the ontology's entities")
    p.add_argument("--limit", type=int, default=50,
                   help="derivations per rule, a seeded sample (0: all; default 50)")
    p.add_argument("--believe-at", type=int, default=1,
                   help="a statement is believed when its gold ranks at or above this among "
                        "its candidates (default 1: ranked first)")
    p.add_argument("--template", default="0",
                   help="manual template index (relations with fewer use their first), or all")
    p.add_argument("--reference", default=None, choices=("prior", *FREE),
                   help="whose consistency the headline subtracts (default prior: the model's "
                        "own content-free prior, prior:MODEL, scored in the same run; with "
                        "--answers generate, frequency)")
    controls_option(p, "each is tested against the model, paired on the same statements; a "
                       "row is claimed only above every one of them")
    answers_options(p, "a statement is believed when the model's own answer is its gold "
                       "(rank: when its gold ranks at --believe-at)")
    dry_run_option(p)
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the derivation sample, the distractors and the intervals")
    candidates_option(p)
    ranking_option(p)
    model_options(p, batch_size=64)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: every unit written as it finishes; rerun into it to "
                        "resume")
    add_ontology_options(p)
