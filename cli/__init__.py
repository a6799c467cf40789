"""The `kgprobe` command line.

User errors (`KgprobeError`) are caught here, once: one line on stderr, exit status 2.
Building the parser imports no heavy library (torch, transformers, scipy, matplotlib): each
command imports what it needs when it runs, so `kgprobe --help` and `kgprobe kg …` start at once.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from kgprobe.errors import KgprobeError
from kgprobe.studies.options import apply_threads

from . import cache, generate, interop, kg, kg_remote, studies
from .registry import COMMANDS

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgprobe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    kg_remote.add_parsers(kg.add_parsers(sub))
    generate.add_parsers(sub)
    studies.add_parsers(sub)
    interop.add_parsers(sub)
    cache.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # `kgprobe GROUP SUB` handlers are registered as "GROUP SUB" (`registry.command`); the
    # studies' sub-parsers set `func` instead
    sub_name = getattr(args, f"{args.command}_command", None)
    name = f"{args.command} {sub_name}" if sub_name else args.command
    handler = getattr(args, "func", None) or COMMANDS[name]
    try:
        apply_threads(args)
        return handler(args)
    except KgprobeError as err:
        print(f"kgprobe: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgprobe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
