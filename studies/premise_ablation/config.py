"""The premise-ablation study's settings: everything that decides its numbers, the options
that set them (`add_arguments`) and their checks (`AblationConfig.from_args`), one place for
`kgprobe study premise-ablation`, `kgprobe demo` and `kgprobe.run`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.reasoning.distractors import Protocol, parse_protocol
from kgprobe.reasoning.filtering import Ranking, parse_ranking
from kgprobe.reasoning.rule_names import RULES
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options
from kgprobe.studies.controls import controls_option
from kgprobe.studies.options import (
    candidates_option,
    comma_list,
    ModelSettings,
    chat_pinned,
    dry_run_option,
    model_options,
    ranking_option,
)

from .columns import UNIT_COLUMNS, with_depth, with_premises
from .option_values import (
    DISTRACTOR_KINDS,
    PREMISE_ORDERS,
    check_chains,
    depth_options,
    memorized_sample,
    premises_option,
    soft_recipe,
)

#: `kgprobe study premise-ablation`: the name its run folders' config.json records (`pin_settings`).
NAME = "premise-ablation"

#: `--protocol paper`, P1 known: in the top half by reciprocal rank (the paper) or ranked first.
MEMORIZED_RULES = ("top-half", "rank1")
TEMPLATE_KINDS = ("manual", "soft")


@dataclass
class AblationConfig:
    model: str | None  # None: no model (a dry run); pinned as "-"
    rules: tuple[str, ...] = RULES
    templates: tuple[str, ...] = ("manual",)
    limit: int | None = 10  # items per rule (seeded sample); None: all
    seed: int = 0
    pairs: int = 1  # pseudoword pairs per item (the paper samples 10 and averages)
    #: the paper protocol's relative split only (`check_paper` keeps it at 0.5); the default
    #: protocol decides known absolutely (`known`)
    memorized_fraction: float = 0.5
    soft_epochs: int = 30
    resamples: int = 2000  # bootstrap resamples (and permutations) per interval and test
    min_items: int = 10  # cells with fewer items are shown but flagged
    extra: dict = field(default_factory=dict)
    #: all or K: the gold vs K − 1 seeded distractors (reasoning/distractors); a string is
    #: parsed on construction, pinned as its --candidates spelling
    candidates: Protocol = Protocol()
    protocol: str = "default"  # "paper": the paper's items, split and metrics (paper.py)
    memorized: str = "top-half"  # paper protocol, P1: top-half (the paper) or rank1 (its code)
    ranking: Ranking = "filtered"  # filtered: an item's other true answers never count (reasoning/filtering)
    #: where the ontology comes from (`studies.ontology_source`); a path: an RDF file or
    #: OntoProbe folder; None: the bundled ontology
    ontology: OntologySource | Path | None = None
    #: where and how the model computes: device, dtype, batch size (pinned, in `PINNED_ORDER`'s
    #: places), score cache (never pinned) and chat template (pinned unless none)
    settings: ModelSettings = ModelSettings()
    #: chained items (`reasoning.chains`): derivation steps, irrelevant premises written beside
    #: the needed ones, their order; at the defaults the run is the study without them
    depth: tuple[int, ...] = (1,)
    distractors: tuple[int, ...] = (0,)
    premise_order: str = "ordered"
    #: premises per (role, relation) whose top-fraction cut estimates the split
    #: (`memorized_sample.py`); None: the whole population. Pinned only when given.
    memorized_sample: int | None = None
    #: soft templates' training: "default" (sampled softmax, CPU-sized) or "paper" (Appendix
    #: A: `soft_recipe.py`). Pinned only when "paper": a run without it pins what it always did.
    soft_recipe: str = "default"
    #: the true grid, with "counterfactual" its counterfactual cells too (pinned when given)
    premises: tuple[str, ...] = ("true",)
    #: chained items' distractors name the prompt's candidates, or not (`depth.naming_names`)
    distractor_kind: str = "naming"
    #: the controls scored on the same requests (`studies.controls`); the CLI and
    #: `kgprobe.run` default to the free ones, a config built in code names its own
    controls: tuple[str, ...] = ()
    #: rank, or generate: the model completes each prompt, graded by the ontology (`generate.py`)
    answers: str = "rank"
    max_new_tokens: int = 8  # --answers generate: the longest answer, in tokens
    #: the default protocol's rule for an implicitly known premise (`study.is_known`: ranked
    #: first, and the frequency control does not); pinned, so a folder split by the earlier
    #: relative rule is never resumed under this one (the paper protocol pins what it did)
    known: str = "first-beyond-null"

    #: Fields that say where data comes from or how it is stored, not what is computed: the
    #: ontology is pinned through ``extra`` (as given), the cache never changes a number.
    NOT_PINNED = ("ontology", "cache")

    #: config.json's keys in their order, the model settings (`settings`) among the study's
    #: own: a folder's config.json reads the same whichever field holds a setting
    PINNED_ORDER = ("model", "rules", "templates", "limit", "seed", "pairs",
                    "memorized_fraction", "device", "batch_size", "soft_epochs", "resamples",
                    "min_items", "extra", "candidates", "dtype", "protocol", "memorized",
                    "ranking", "ontology", "cache", "chat_template")

    #: Settings pinned only when given: a run without them pins what it always did.
    DEPTH_FIELDS = ("depth", "distractors", "premise_order", "distractor_kind")

    def __post_init__(self) -> None:
        """Parse the typed values, then check the whole config once, built by `config_from_args`
        or in code: one line naming the option before any data is read or a model loads."""
        self.candidates = parse_protocol(self.candidates)
        self.ranking = parse_ranking(self.ranking)
        self.check()

    def check(self) -> None:
        """The settings that go together (an option's own value is checked where it is parsed)."""
        paper = self.protocol == "paper"
        if not isinstance(self.settings, ModelSettings):
            raise StudyError(f"settings={self.settings!r}: give a ModelSettings (device, dtype, "
                             "batch size, score cache, chat template)")
        if not paper and self.memorized_fraction != 0.5:
            raise StudyError(f"--fraction {self.memorized_fraction}: the default protocol counts "
                             "a premise as known when the model ranks it first and the frequency "
                             "control does not, never a share of them; drop --fraction")
        if not paper and self.memorized != "top-half":
            raise StudyError(f"--memorized {self.memorized}: applies to --protocol paper; the "
                             "default protocol splits by --fraction")
        if paper and not self.source.bundled:
            raise StudyError("--protocol paper: the paper's items come from the bundled ontology; "
                             "drop --ontology, --store and --endpoint")
        if self.resamples < 1000 or self.min_items < 1:
            raise StudyError(f"--resamples {self.resamples} / --min-items {self.min_items}: use "
                             "at least 1000 resamples (a 95% interval's tails need them) and 1 "
                             "item")
        check_chains(self)
        from .answers import check

        check(self)  # what `--answers generate` runs
        if paper:
            self.check_paper()

    @property
    def deep(self) -> bool:
        """Whether the run scores chained items (`--depth`, `--distractors`, `--premise-order`
        away from their defaults): only then do its files gain depth and distractor columns."""
        return (tuple(self.depth) != (1,) or tuple(self.distractors) != (0,)
                or self.premise_order != "ordered")

    @property
    def counterfactual(self) -> bool:
        """Whether the run scores counterfactual cells: only then do its files gain a
        ``premises`` column."""
        return "counterfactual" in self.premises

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "AblationConfig":
        return config_from_args(args)

    @property
    def source(self) -> OntologySource:
        return OntologySource.of(self.ontology)

    def load_source(self):
        """The ontology's `Source`, or None for the bundled one (its items, and the paper's
        memorizing sets for soft templates: `build.build_study`)."""
        return None if self.source.bundled else self.source.load()

    def check_paper(self) -> None:
        """The settings `--protocol paper` can reproduce (paper.py runs it)."""
        if self.memorized not in MEMORIZED_RULES:
            raise StudyError(f"--memorized {self.memorized}: use one of {', '.join(MEMORIZED_RULES)}")
        if self.memorized_fraction != 0.5:
            raise StudyError("--fraction: the paper protocol splits by --memorized top-half|rank1; "
                             "drop --fraction")
        from kgprobe.studies.controls import is_control

        if "soft" in self.templates and self.soft_recipe != "paper":
            raise StudyError(f"--soft-recipe {self.soft_recipe}: --protocol paper trains soft "
                             "templates by the paper's recipe (Appendix A); pass --soft-recipe "
                             "paper")
        if "soft" in self.templates and self.model and is_control(self.model):
            raise StudyError(f"--templates soft: {self.model} is a control, with no gradients to "
                             "train soft templates; pass --templates manual")

    def unit_columns(self) -> list[str]:
        """A unit row's columns: with chained items, `depth` and `distractors` after `variant`;
        with counterfactual cells, `premises` after those."""
        columns = with_depth(UNIT_COLUMNS) if self.deep else UNIT_COLUMNS
        return with_premises(columns) if self.counterfactual else columns

    def to_json(self) -> dict:
        skip = self.NOT_PINNED if self.deep else self.NOT_PINNED + self.DEPTH_FIELDS
        if self.memorized_sample is None:  # a run without it pins what it always did
            skip += ("memorized_sample",)
        if self.soft_recipe == "default":
            skip += ("soft_recipe",)
        if not self.counterfactual:
            skip += ("premises",)
        if self.protocol == "paper":  # split by its own --memorized rule
            skip += ("known",)
        if self.answers == "rank":  # a ranking folder's settings stay as they were
            skip += ("answers", "max_new_tokens")
        values = {k: v for k, v in self.__dict__.items() if k != "settings"}
        values.update(self.settings.fields())
        order = {k: i for i, k in enumerate(self.PINNED_ORDER)}
        keys = sorted(values, key=lambda k: order.get(k, len(order)))  # stable: the rest after
        return {k: _pinned_value(k, values[k]) for k in keys if k not in skip}

    #: Settings only the report reads: a rerun with other values keeps every unit (a control
    #: never changes the model's units: `studies.controls`).
    REPORT_ONLY = ("resamples", "min_items", "controls")

    def pinned(self) -> dict:
        """The settings a run folder is pinned to: every one that changes a unit's numbers."""
        pinned = {k: v for k, v in self.to_json().items()
                  if k not in self.REPORT_ONLY and k != "chat_template"}
        return {**pinned, **chat_pinned(self.settings.chat_template, NAME)}

    def report_settings(self) -> dict:
        return {k: getattr(self, k) for k in self.REPORT_ONLY}


def _pinned_value(key: str, value):
    """A setting as config.json has always spelled it: lists, ``-`` for no model, a
    protocol's ``--candidates`` value."""
    if key == "model" and value is None:
        return "-"
    if isinstance(value, Protocol):
        return value.option
    return list(value) if isinstance(value, tuple) else value


def template_kinds(text: str) -> tuple[str, ...]:
    """``manual``, ``soft`` or ``manual,soft``; checked before anything runs (also for the demo)."""
    return tuple(comma_list(text, choices=TEMPLATE_KINDS, option="--templates"))



#: ``--preset paper``: the paper-scale study (OntoProbe §3: every item, 10 pairs, every
#: candidate, manual and soft templates side by side as its Table 4 reports them, soft ones
#: by Appendix A's recipe): the GPU command. It fills the options left at their defaults.
#: ``--preset demo``: `kgprobe demo`'s settings, so the study command resumes its folder. Its
#: design has chains of depth 1 and 2 with 0 and 2 naming distractors: with filtered ranking a
#: copier that reads wordings is at the ceiling where every premise is written and nothing
#: else is, so only cells with distractors written can show a reasoner beyond the controls.
#: It classifies the premises its items need and 20 more of each relation (`memorized_sample`:
#: 101 memorizing probes where the whole population takes 633, each a premise decided as in a
#: full run; the report estimates each relation's known share from the 20). 6 items per rule
#: keep `make demo` near 6 minutes on 2 cores (docs/benchmarks.md); ``--limit 30`` is the
#: size the claim rule's power is reported at (docs/validity.md).
PRESETS = {"paper": {"limit": 0, "pairs": 10, "templates": "manual,soft", "candidates": "all",
                     "soft_recipe": "paper"},
           "demo": {"model": "smollm2-135m", "limit": 6, "pairs": 1, "templates": "manual",
                    "candidates": "20", "soft_epochs": 5, "depth": "1,2",
                    "distractors": "0,2", "memorized_sample": 20}}


def apply_preset(args: argparse.Namespace) -> None:
    """Fill the options left at their defaults with the preset's values: ``--preset demo
    --model X`` is the demo on model X."""
    preset = PRESETS.get(getattr(args, "preset", None) or "", {})
    if not preset:
        return
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    for key, value in preset.items():
        if key in CHAIN_OPTIONS and not _chains_allowed(args, preset):
            continue  # soft templates or the paper protocol: the preset's other settings alone
        if key == "memorized_sample" and args.protocol == "paper":
            continue  # the paper protocol splits its own test sets (`memorized_sample`)
        if getattr(args, key) == parser.get_default(key):
            setattr(args, key, value)


#: a preset's chained design (`depth.py`): asked only where chains can be
CHAIN_OPTIONS = ("depth", "distractors")


def _chains_allowed(args: argparse.Namespace, preset: dict) -> bool:
    """Whether the run can ask chained items: manual templates only, default protocol
    (`config_from_args` refuses chains otherwise). ``--preset demo --templates manual,soft``
    is then the demo's grid with soft templates, without its chains."""
    templates = args.templates if args.templates is not None else preset.get("templates")
    return (args.protocol != "paper"
            and templates is not None and tuple(template_kinds(templates)) == ("manual",))


def config_from_args(args: argparse.Namespace) -> AblationConfig:
    """`AblationConfig.from_args`: the preset applied and every option parsed, then the config
    built once with all of them, so `AblationConfig.check` sees the whole before any data is
    read or a model loads (for `kgprobe study premise-ablation`, `kgprobe demo` and
    `kgprobe.run`)."""
    apply_preset(args)
    paper = args.protocol == "paper"
    if args.limit is None:  # the protocol's own: 10 items a rule, or every paper item
        args.limit = 0 if paper else 10
    if args.pairs is None:  # the paper samples 10 pairs (Appendix A); 5 put the draw in the
        args.pairs = 10 if paper else 5  # interval (items × pairs); the demo preset keeps 1
    if args.templates is None:
        args.templates = "manual" if paper else "manual,soft"
    if args.model is None and not args.dry_run:
        raise StudyError("--model: give a model (a preset, HF id, local dir or .gguf file), "
                         "or pass --dry-run to only write the prompts")
    from kgprobe.studies.controls import parse_controls

    source = OntologySource.from_args(args, ask=not paper)
    templates = template_kinds(args.templates)
    depth, distractors = depth_options(args)
    answers = getattr(args, "answers", "rank")
    recipe, epochs = soft_recipe(args, templates, paper)
    return AblationConfig(
        args.model, tuple(comma_list(args.rules, choices=RULES, option="--rules")), templates,
        None if args.limit == 0 else args.limit, args.seed, args.pairs, args.fraction,
        soft_epochs=epochs, resamples=args.resamples, min_items=args.min_items,
        extra=source_pin(source), candidates=args.candidates,  # parsed on construction
        protocol=args.protocol, memorized=args.memorized, ranking=args.ranking,
        ontology=source, depth=depth, distractors=distractors,
        premise_order=getattr(args, "premise_order", None) or "ordered",
        memorized_sample=memorized_sample(args, paper), soft_recipe=recipe,
        premises=premises_option(args, paper),
        distractor_kind=getattr(args, "distractor_kind", None) or "naming",
        controls=parse_controls(getattr(args, "controls", None), args.model,
                                ranking=answers != "generate"),
        answers=answers, max_new_tokens=getattr(args, "max_new_tokens", 8),
        settings=ModelSettings.from_args(args))


def source_pin(source: OntologySource) -> dict:
    """``extra`` of config.json: ``bundled`` alone for the bundled ontology (as runs always
    pinned it); for any other source its description (the report's first line names it) and
    what `OntologySource.pinned` records (a store's fingerprint, a file's hash), so a rerun
    on a changed one is refused."""
    if source.bundled:
        return {"ontology": "bundled"}
    return {"ontology": source.describe(), "source": source.pinned()}


def add_arguments(p: argparse.ArgumentParser, *, default_model: str | None = None) -> None:
    p.add_argument("--model", default=default_model,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir or .gguf file "
                        "(not needed with --dry-run)")
    p.add_argument("--protocol", choices=["default", "paper"], default="default",
                   help="paper: the paper's items, wording, memorized split and metrics as its "
                        "official code implements them (docs/fidelity.md)")
    p.add_argument("--memorized", choices=["top-half", "rank1"], default="top-half",
                   help="--protocol paper, P1: known when in the top half by reciprocal rank "
                        "(the paper) or when ranked first (the official code)")
    dry_run_option(p)
    p.add_argument("--rules", default=",".join(RULES), help="comma-separated rules to study")
    p.add_argument("--templates", default=None,
                   help="manual, soft, or manual,soft (default: manual,soft; --protocol "
                        "paper: manual, its official prompts one for one)")
    p.add_argument("--limit", type=int, default=None,
                   help="items per rule (0: all; default 10, with --protocol paper all)")
    p.add_argument("--pairs", type=int, default=None,
                   help="pseudoword pairs per item, averaged (default 5, so the interval counts "
                        "the draw; --preset demo 1; with --protocol paper 10, as the paper); each "
                   "(item, pair, template) prompt is one observation nested in its item")
    p.add_argument("--fraction", type=float, default=0.5,
                   help="--protocol paper only, kept at 0.5 (its top half); the default "
                        "protocol counts a premise as known when the model ranks its gold first "
                        "and the frequency control does not")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the item sample, pseudowords, distractors and intervals")
    p.add_argument("--resamples", type=int, default=2000,
                   help="bootstrap resamples per 95%% interval and permutations per test")
    p.add_argument("--min-items", type=int, default=10,
                   help="cells with fewer items are shown but flagged")
    p.add_argument("--soft-epochs", type=int, default=30, help="soft templates: training epochs")
    p.add_argument("--soft-recipe", choices=["default", "paper"], default=None,
                   help="soft templates' training: default (sampled softmax, lr 0.05, fits a "
                        "CPU) or paper (Appendix A: BCE over every candidate, AdamW lr 0.5 with "
                        "linear decay, batch 8, best dev MRRa; --preset paper and --protocol "
                        "paper use it, 100 epochs)")
    p.add_argument("--depth", default="1",
                   help="derivation steps of the chained items, e.g. 1,2,3 (default 1: the study "
                        "alone); depth k writes k + 1 premises (docs/depth.md)")
    p.add_argument("--distractors", default="0",
                   help="true but irrelevant premises written beside the needed ones, e.g. 0,2 "
                        "(default 0)")
    p.add_argument("--premise-order", choices=PREMISE_ORDERS, default="ordered",
                   help="chained items' premises in chain order, or in a seeded shuffled order")
    p.add_argument("--premises", default="true", help="true, or true,counterfactual: also "
                   "ask every item with P1 naming a false term (docs/premise-ablation.md)")
    p.add_argument("--distractor-kind", choices=DISTRACTOR_KINDS, default="naming",
                   help="chained items' distractors name the prompt's candidates (naming) or "
                        "not (unrelated) (docs/depth.md)")
    p.add_argument("--memorized-sample", type=int, default=None, metavar="N",
                   help="estimate each relation's known/not-known threshold from a seeded sample "
                        "of N of its premises and classify only the evaluated items' premises "
                        "(a quick trial; default: classify the whole population)")
    controls_option(p)
    candidates_option(p)
    ranking_option(p)
    from .answers import add_options

    add_options(p)
    p.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="paper: every item, 10 pairs, manual and soft templates (soft by "
                        "Appendix A's recipe), --candidates all (the GPU command); demo: `kgprobe demo`'s settings (smollm2-135m, 30 "
                        "items a rule, 1 pair, manual templates, K = 20, --depth 1,2 "
                        "--distractors 0,2); a preset fills the "
                        "options left at their defaults")
    model_options(p, batch_size=64)
    p.add_argument("--out", type=Path, required=True,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    add_ontology_options(p)
