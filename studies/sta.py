"""The tacit-assumption study (Weir, Poliak & Van Durme, CogSci 2020) on feature norms.

``kgprobe study sta --norms PATH --model NAME --out DIR`` runs two tasks:

* **retrieval** (`sta_retrieval`): name the concept from 1–10 of its properties
  ("A [MASK] has fur, is big, and has claws ."), under the paper's selection/ordering
  conditions and per feature type: MRR and target probability per number of properties;
* **elicitation** (`sta_elicitation`): list properties of a concept ("Everyone knows that a
  bear has [MASK] ."): mAP over the vocabulary and the sensible set, Spearman ρ with PF,
  with and without "Everyone knows that".

The run is a list of resumable units (`runner`): one per (retrieval condition, number of
properties) and per (elicitation relation, context). Settings that change the numbers are
written to ``OUT/config.json``; a rerun with other settings into the same folder is refused.
``results.csv`` has one row per unit, ``predictions.jsonl`` one line per prompt,
``report.md`` the tables and the figures (``fig2_retrieval.png``, ``fig3_conditions.png``,
``fig4_elicitation.png``); ``summary.json`` the counts (concepts skipped, dropped, probed).

Scoring (`sta_scoring`). Masked LMs: the distribution at the mask (the paper's method).
Causal LMs: by default the retrieval prompt is asked as a question with the slot at the end
("What has fur, is big, and has claws? It is a [MASK] ."), so the next-token distribution
ranks the whole vocabulary in one forward pass, like a mask. ``--template statement`` keeps
the paper's sentence ("A [MASK] has fur …") and scores it by sentence log-likelihood with
each candidate in the slot — one pass over candidate + sentence per candidate, about 500×
the cost, so its candidates default to the norms' concepts. Elicitation prompts end in the
slot already, so causal LMs use the next-token distribution there.

Vocabularies (`--vocab`): ``lama`` — LAMA's common vocabulary ∩ the model's single-token
words (the paper's); ``concepts`` — the norms' concept words (the paper's restricted option;
single-token ones, except for sentence likelihoods, which score any string). Targets outside
the vocabulary are dropped and counted (``summary.json``, ``report.md``).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..atomic import write_json
from ..errors import KgprobeError
from . import sta_elicitation as eli
from . import sta_retrieval as ret
from .norms import FORMATS, GROUPS, Concept, Norms, load_norms, load_word_list
from .options import threads_option
from .runner import Unit, run_units

__all__ = ["StaConfig", "run_sta", "register_cli", "run_cli", "default_vocab_file", "COLUMNS"]

TASKS = ("retrieval", "elicitation")
VOCABS = ("lama", "concepts")
COLUMNS = [
    "task", "condition", "n_properties", "relation", "context", "n_prompts", "n_concepts",
    "MRR", "R@1", "R@10", "p_target", "median_rank",
    "mAP_vocab", "mAP_sens", "spearman", "spearman_prompts", "gold_in_vocab", "gold_dropped",
    "prompts_without_gold",
]


class StaError(KgprobeError):
    """Bad settings for the STA study."""


def default_vocab_file() -> Path:
    """``../shared/data/lama/common_vocab_cased.txt`` next to the repository."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "lama" / "common_vocab_cased.txt"


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

    def fingerprint(self, kind: str) -> dict:
        """The settings that determine the numbers (not device, batch size, progress)."""
        return {
            "norms": str(Path(self.norms).expanduser().resolve()), "format": self.format,
            "model": self.model, "kind": kind, "seed": self.seed, "limit": self.limit,
            "elicitation_limit": self.elicitation_concepts(),
            "vocab": self.retrieval_vocab(kind), "determiner": self.determiner,
            "template": self.retrieval_template(kind),
            "vocab_file": str(self.lama_file()),
            "random": [self.random_sets, self.random_permutations],
        }

    def elicitation_concepts(self) -> int | None:
        return self.elicitation_limit if self.elicitation_limit is not None else self.limit

    def retrieval_template(self, kind: str) -> str:
        return self.template or ("statement" if kind == "masked" else "question")

    def retrieval_vocab(self, kind: str) -> str:
        """lama, unless candidates are scored one pass each (causal statement: concepts)."""
        if self.vocab:
            return self.vocab
        return "concepts" if kind == "causal" and self.retrieval_template(kind) == "statement" else "lama"

    def lama_file(self) -> Path:
        return Path(self.vocab_file).expanduser() if self.vocab_file else default_vocab_file()


# --------------------------------------------------------------------------------------
# Concepts and vocabularies
# --------------------------------------------------------------------------------------


def seeded_order(concepts: Sequence[Concept], seed: int, salt: str) -> list[Concept]:
    """All concepts in a seeded random order (keys shuffled, so norms order does not matter)."""
    keys = sorted(c.key for c in concepts)
    random.Random(f"{seed}:{salt}").shuffle(keys)
    by_key = {c.key: c for c in concepts}
    return [by_key[k] for k in keys]


def sample(concepts: Sequence[Concept], limit: int | None, seed: int, salt: str,
           keep=lambda c: True) -> list[Concept]:
    """The first `limit` concepts that pass `keep`, in a seeded order of ALL concepts.

    The order does not depend on `keep`, so two models whose vocabularies admit different
    concepts still probe the same ones wherever both admit them, and a larger limit keeps
    every concept of a smaller one. Returned in norms order.
    """
    order = [c for c in seeded_order(concepts, seed, salt) if keep(c)]
    chosen = {c.key for c in (order if limit is None else order[:max(limit, 0)])}
    return [c for c in concepts if c.key in chosen]


def retrieval_targets(norms: Norms, vocabulary, *, determiner: str, limit: int | None,
                      seed: int) -> tuple[list[Concept], dict]:
    """Concepts that can be targets: consonant-initial (determiner "a"), in the vocabulary."""
    all_concepts = list(norms.concepts.values())
    vowel = [c for c in all_concepts if determiner == "a" and c.vowel_sound]
    kept = [c for c in all_concepts if not (determiner == "a" and c.vowel_sound)]
    outside = [c for c in kept if c.word not in vocabulary]
    eligible = [c for c in kept if c.word in vocabulary]
    ok = {c.key for c in eligible}
    chosen = sample(all_concepts, limit, seed, "concepts", keep=lambda c: c.key in ok)
    counts = {
        "concepts": len(all_concepts),
        "skipped_vowel_sound": len(vowel),
        "dropped_out_of_vocabulary": len(outside),
        "eligible": len(eligible),
        "targets": len(chosen),
        "out_of_vocabulary_examples": [c.word for c in outside[:15]],
    }
    return chosen, counts


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


def _check_config(out: Path, fingerprint: dict) -> None:
    path = out / "config.json"
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = None
        if old is not None and old != fingerprint:
            diff = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
            raise StaError(f"{out}: holds a run with other settings ({', '.join(diff)}); "
                           "rerun with the same settings to resume, or pass another --out")
    write_json(path, fingerprint)


def _parse_conditions(names: Sequence[str] | None) -> list[ret.Condition]:
    every = ret.conditions(GROUPS)
    if not names:
        return every
    valid = {c.name: c for c in every}
    bad = [n for n in names if n not in valid]
    if bad:
        raise StaError(f"unknown retrieval condition(s) {', '.join(bad)}; use {', '.join(valid)}")
    return [valid[n] for n in names]


def run_sta(config: StaConfig, out: str | Path) -> list[dict]:
    """Run (or resume) the study into `out`; returns the result rows."""
    from ..prompts.models import load_model
    from .sta_scoring import (MaskDistribution, NextTokenDistribution, SentenceLikelihood,
                              single_token_vocabulary, word_vocabulary)

    out = Path(out)
    for task in config.tasks:
        if task not in TASKS:
            raise StaError(f"unknown task {task!r}; use retrieval, elicitation or all")
    if config.template is not None and config.template not in ret.TEMPLATES:
        raise StaError(f"unknown retrieval template {config.template!r}; use statement or question")
    if config.determiner not in ret.DETERMINERS:
        raise StaError(f"unknown determiner {config.determiner!r}; use a or the")
    if config.vocab is not None and config.vocab not in VOCABS:
        raise StaError(f"unknown vocabulary {config.vocab!r}; use lama or concepts")
    for name, value in (("--limit", config.limit), ("--elicitation-limit", config.elicitation_limit)):
        if value is not None and value < 1:
            raise StaError(f"{name} {value}: give a positive number of concepts")
    conditions = _parse_conditions(config.conditions)
    norms = load_norms(config.norms, config.format)
    t0 = time.perf_counter()
    loaded = load_model(config.model, device=config.device)
    fingerprint = config.fingerprint(loaded.kind)
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, fingerprint)

    lama_words: list[str] | None = None

    def lama() -> list[str]:
        nonlocal lama_words
        if lama_words is None:
            lama_words = load_word_list(config.lama_file())
        return lama_words

    units: list[Unit] = []
    summary: dict = {"settings": fingerprint, "model_load_seconds": round(time.perf_counter() - t0, 1)}
    random_kw = {"random_sets": config.random_sets, "random_permutations": config.random_permutations}

    if "retrieval" in config.tasks:
        vocab_name = config.retrieval_vocab(loaded.kind)
        template = config.retrieval_template(loaded.kind)
        source = lama() if vocab_name == "lama" else norms.words()
        sentence = loaded.kind == "causal" and template == "statement"
        if sentence and vocab_name == "concepts":
            vocabulary = word_vocabulary(source)  # multi-token concepts can be scored too
        else:
            vocabulary = single_token_vocabulary(source, loaded)
        if loaded.kind == "masked":
            scorer = MaskDistribution(loaded, vocabulary, batch_size=config.batch_size)
        elif sentence:
            scorer = SentenceLikelihood(loaded, vocabulary, batch_size=config.batch_size)
        else:
            scorer = NextTokenDistribution(loaded, vocabulary, batch_size=config.batch_size)
        targets, counts = retrieval_targets(norms, vocabulary, determiner=config.determiner,
                                            limit=config.limit, seed=config.seed)
        if not targets:
            raise StaError(f"no retrieval target left: {counts['concepts']} concepts, "
                           f"{counts['skipped_vowel_sound']} vowel-initial, "
                           f"{counts['dropped_out_of_vocabulary']} outside the {vocab_name} vocabulary; "
                           "try --vocab concepts or --determiner the")
        summary["retrieval"] = {**counts, "vocabulary": vocab_name, "vocabulary_size": len(vocabulary),
                                "template": template,
                                "method": scorer.method, "targets_list": [c.word for c in targets]}

        def run_retrieval(cond: ret.Condition, n: int, prompts: list[ret.RetrievalPrompt]):
            scores = scorer.score([p.prompt for p in prompts])
            probs = scorer.probabilities(scores)
            target_idx = [vocabulary.index(p.target) for p in prompts]
            records = ret.score_prompts(prompts, scores, probs, target_idx, vocabulary.words)
            return ret.summarize(records), records

        for cond in conditions:
            for n in range(1, ret.MAX_PROPERTIES + 1):
                prompts = ret.build_prompts(targets, cond, n, determiner=config.determiner,
                                            template=template, seed=config.seed, **random_kw)
                if not prompts:
                    continue
                units.append(Unit({"task": "retrieval", "condition": cond.name, "n_properties": n},
                                  lambda c=cond, n=n, p=prompts: run_retrieval(c, n, p),
                                  size=len(prompts)))

    if "elicitation" in config.tasks:
        vocabulary_e = single_token_vocabulary(lama(), loaded)
        if loaded.kind == "masked":
            scorer_e = MaskDistribution(loaded, vocabulary_e, batch_size=config.batch_size)
        else:
            scorer_e = NextTokenDistribution(loaded, vocabulary_e, batch_size=config.batch_size)
        concepts = sample(list(norms.concepts.values()), config.elicitation_concepts(), config.seed, "concepts")
        sensible = eli.sensible_sets(norms)
        summary["elicitation"] = {
            "concepts": len(concepts), "vocabulary": "lama", "vocabulary_size": len(vocabulary_e),
            "method": scorer_e.method,
            "sensible_set": {r: {"words": len(w), "in_vocabulary": sum(x in vocabulary_e for x in w)}
                             for r, w in sensible.items()},
        }

        def run_elicitation(relation: str, prompts: list[eli.ElicitationPrompt]):
            scores = scorer_e.score([p.prompt for p in prompts])
            probs = scorer_e.probabilities(scores)
            sens = [j for j in (vocabulary_e.index(w) for w in sensible[relation]) if j is not None]
            records = eli.score_prompts(prompts, scores, probs, vocabulary_e.words, vocabulary_e.index, sens)
            return eli.summarize(records), records

        for relation in eli.RELATIONS:
            for context in eli.CONTEXTS:
                prompts_e = eli.build_prompts(concepts, relation, context)
                if not prompts_e:
                    continue
                units.append(Unit({"task": "elicitation", "relation": relation, "context": context},
                                  lambda r=relation, p=prompts_e: run_elicitation(r, p),
                                  size=len(prompts_e)))

    write_json(out / "summary.json", summary)
    t1 = time.perf_counter()
    rows = run_units(out, units, COLUMNS, progress=config.progress)
    summary["run_seconds"] = round(time.perf_counter() - t1, 1)
    write_json(out / "summary.json", summary)
    from .sta_report import write_report

    write_report(out, rows, summary)
    return rows


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def _csv_list(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(x.strip() for x in text.split(",") if x.strip())


def register_cli(sub) -> None:
    p = sub.add_parser("sta", help="tacit assumptions: concept retrieval and property elicitation "
                       "on feature norms (Weir et al. 2020)", description=__doc__.splitlines()[0])
    p.add_argument("--norms", type=Path, default=None,
                   help="feature norms: McRae's CONCS_FEATS_concstats_brm.txt or CSLB's norms.dat (or their folder)")
    p.add_argument("--format", choices=FORMATS, default="mcrae", help="layout of --norms (default mcrae)")
    p.add_argument("--model", default=None, help="a preset (smollm2-135m, gemma3-270m), HF directory, hub id or .gguf")
    p.add_argument("--task", choices=["retrieval", "elicitation", "all"], default="all")
    p.add_argument("--limit", type=int, default=None, help="concepts per task, a seeded sample (default: all)")
    p.add_argument("--elicitation-limit", type=int, default=None,
                   help="concepts for elicitation, if not --limit (elicitation prompts are cheaper)")
    p.add_argument("--seed", type=int, default=0, help="seed of the concept sample and the random baseline")
    p.add_argument("--vocab", choices=VOCABS, default=None,
                   help="retrieval candidates: lama (LAMA common vocabulary ∩ model single tokens) or concepts "
                   "(the norms' concepts); default lama, except concepts for causal LMs with --template statement")
    p.add_argument("--vocab-file", type=Path, default=None,
                   help=f"LAMA common vocabulary (default {default_vocab_file()})")
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
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=32)
    threads_option(p)
    p.add_argument("--compare", type=Path, nargs="+", default=None, metavar="RUN",
                   help="only draw figures comparing finished runs (their --out folders) into --out")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    if args.compare:
        from .sta_report import write_comparison

        paths = write_comparison(args.compare, args.out)
        for path in paths:
            print(f"wrote {path}")
        return 0
    if args.norms is None or args.model is None:
        raise StaError("kgprobe study sta needs --norms PATH and --model NAME (or --compare RUN ...)")
    config = StaConfig(
        norms=args.norms, model=args.model, format=args.format,
        tasks=TASKS if args.task == "all" else (args.task,), limit=args.limit,
        elicitation_limit=args.elicitation_limit, seed=args.seed,
        vocab=args.vocab, vocab_file=args.vocab_file, determiner=args.determiner, template=args.template,
        conditions=_csv_list(args.conditions), random_sets=args.random_sets,
        random_permutations=args.random_permutations, device=args.device, batch_size=args.batch_size,
    )
    rows = run_sta(config, args.out)
    from .sta_report import format_tables

    print(format_tables(rows))
    print(f"wrote {args.out}/results.csv, predictions.jsonl, report.md and figures")
    return 0
