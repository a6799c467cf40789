"""The command table shared by the CLI modules: `@command("kg load")` registers a handler."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str):
    """Register the decorated function as the handler of `kgprobe NAME` (e.g. "kg load")."""
    def register(fn):
        COMMANDS[name] = fn
        return fn
    return register


def warn(message: str) -> None:
    from kgprobe.terminal import printable

    print(f"kgprobe: warning: {printable(message)}", file=sys.stderr)
