"""``--answers rank|generate`` of the premise-ablation study: the options and what generation
can run, checked with the rest of the config when it is built (`AblationConfig.check`). A light
module of its own, so `config` reads it without importing the study (`generate.py` runs it)."""

from __future__ import annotations

import argparse

from kgprobe.errors import StudyError
from kgprobe.studies.options import ANSWERS, answers_options


def add_options(p: argparse.ArgumentParser) -> None:
    answers_options(p, "the model completes each prompt itself (greedy; pseudowords stay "
                       "vectors)")


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
    from kgprobe.studies.controls import RANKING_ONLY

    for control in (c for c in RANKING_ONLY if c in config.controls):
        raise StudyError(f"--controls {control}: it only ranks candidates (a content-free prompt "
                         "has nothing to complete; test-prior reads the golds of what it ranks); "
                         "use frequency, copy, random, general or none with --answers generate")
