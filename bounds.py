"""Every number and device option is checked where argparse reads it, by the option's name
(for the command line and for `kgprobe.run`, which parses the same options).

Why here, once: an option name means one thing in every command (`--seed` is a seed wherever
it appears), so its valid range is one entry below rather than a check in each handler. Without
it a negative seed, a zero batch size or a negative limit reached numpy or a slice and ended in
a traceback, or in a silent run over nothing; with it the command stops at once with one line
naming the option (an `OptionError`, which argparse lets through to `cli.main`; text that is no
number at all stays argparse's own "invalid int value").
"""

from __future__ import annotations

import argparse
import re
from typing import Callable

from kgprobe.errors import OptionError

#: option → (lowest valid value, whether the lowest itself is excluded, highest or None)
BOUNDS: dict[str, tuple[float, bool, float | None]] = {
    "--seed": (0, False, None),
    "--limit": (0, False, None),  # 0: no limit, where a study reads it so
    "--elicitation-limit": (0, False, None),
    "--min-items": (0, False, None),
    "--soft-epochs": (0, False, None),
    "--random-sets": (0, False, None),
    "--random-permutations": (0, False, None),
    "--retries": (0, False, None),
    "--pairs": (1, False, None),
    "--size": (1, False, None),  # prompts a review sheet samples
    "--resamples": (1, False, None),
    "--epochs": (1, False, None),
    "--batch-size": (1, False, None),
    "--threads": (1, False, None),
    "--page-size": (1, False, None),
    "--instances": (1, False, None),
    "--instances-per-class": (1, False, None),
    "--pool": (1, False, None),
    "--timeout": (0, True, None),
    "--query-timeout": (0, True, None),
    "--request-timeout": (0, True, None),
    "--max-connections": (1, False, None),
    "--fraction": (0, False, 1),
    "--max-new-tokens": (1, False, 256),
    "--max-inferred": (0, False, None),  # 0: no limit
}

DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def bounded(kind: Callable, option: str) -> Callable:
    """`kind` (int or float) that also refuses values outside `option`'s range."""
    low, strict, high = BOUNDS[option]

    def convert(text: str):
        value = kind(text)  # a ValueError here is argparse's own "invalid int value"
        if value < low or (strict and value == low) or (high is not None and value > high):
            need = (f"between {low} and {high}" if high is not None
                    else f"above {low}" if strict else f"{low} or more")
            raise OptionError(f"{option} {text}: give a number {need}")
        return value

    convert.__name__ = kind.__name__
    return convert


def device(text: str) -> str:
    """`--device`: auto, cpu, cuda, cuda:N or mps."""
    if not DEVICE.fullmatch(text):
        raise OptionError(f"--device {text}: give auto, cpu, cuda, cuda:N or mps")
    return text


def check_numbers(parser: argparse.ArgumentParser) -> None:
    """Wrap the type of every bounded option and of `--device` in `parser` (one level)."""
    for action in parser._actions:
        names = [o for o in action.option_strings if o in BOUNDS]
        if names and action.type in (int, float):
            action.type = bounded(action.type, names[0])
        elif "--device" in action.option_strings and action.type is None:
            action.type = device
