"""``--answers rank|generate`` of the premise-ablation study: the options and what generation
can run, checked with the other options before anything loads. A light module of its own, so
`config` reads it without importing the study (`generate.py` runs it)."""

from __future__ import annotations

import argparse

from kgprobe.errors import StudyError

ANSWERS = ("rank", "generate")


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answers", choices=ANSWERS, default="rank",
                   help="rank: the candidates ranked by the model's scores; generate: the model "
                        "completes each prompt itself (greedy; pseudowords stay vectors), graded "
                        "by the ontology as exact, entailed, wrong or unmapped "
                        "(docs/open-answers.md)")
    p.add_argument("--max-new-tokens", type=int, default=8,
                   help="--answers generate: the longest answer in tokens (it stops earlier at "
                        "the sentence's end)")


def check(config) -> None:
    """The settings `--answers generate` runs: one line naming the option otherwise."""
    if config.answers not in ANSWERS:
        raise StudyError(f"--answers {config.answers}: use one of {', '.join(ANSWERS)}")
    if config.answers != "generate":
        return
    if not 1 <= int(config.max_new_tokens) <= 256:
        raise StudyError(f"--max-new-tokens {config.max_new_tokens}: give 1 to 256")
    if config.protocol == "paper":
        raise StudyError("--answers generate: the paper protocol ranks candidates; drop "
                         "--protocol paper")
    if tuple(config.templates) != ("manual",):
        raise StudyError("--answers generate: soft templates are trained to rank; pass "
                         "--templates manual")
    if config.deep or config.counterfactual:
        raise StudyError("--answers generate: chained and counterfactual cells rank candidates; "
                         "drop --depth, --distractors, --premise-order and --premises")
    if "prior" in config.controls:
        raise StudyError("--controls prior: a content-free prompt has nothing to complete; "
                         "use frequency, copy, random or none with --answers generate")
