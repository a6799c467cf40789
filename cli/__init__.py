"""The `kgprobe` command line.

User errors (`KgprobeError`) are caught here, once: one line on stderr, exit status 2.
Commands that load or query (those with `--max-memory`) run under the memory guard
(`kgprobe.guard`) when started from the command line.
Building the parser imports no heavy library (torch, transformers, scipy, matplotlib): each
command imports what it needs when it runs, so `kgprobe --help` and `kgprobe kg …` start at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
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


def main(argv: Sequence[str] | None = None, *, guard: bool | None = None) -> int:
    """Run one command. `guard` (default: when `argv` is None, i.e. the real command line):
    a command with `--max-memory` runs in a supervised child (`kgprobe.guard`); in-process
    callers (tests) keep running in their own process."""
    args = build_parser().parse_args(argv)
    # `kgprobe GROUP SUB` handlers are registered as "GROUP SUB" (`registry.command`); the
    # studies' sub-parsers set `func` instead
    sub_name = getattr(args, f"{args.command}_command", None)
    name = f"{args.command} {sub_name}" if sub_name else args.command
    handler = getattr(args, "func", None) or COMMANDS[name]

    def run() -> int:
        try:
            apply_threads(args)
            return handler(args)
        except KgprobeError as err:
            print(f"kgprobe: error: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("kgprobe: interrupted", file=sys.stderr)
            return 130
        except RuntimeError as err:  # RocksDB found a damaged file: say which, in one line
            if not str(err).startswith("Corruption:"):
                raise
            print(f"kgprobe: error: the store is damaged ({' '.join(str(err).split())[:200]}); "
                  "restore it from a copy or rebuild it (`kgprobe kg load` into a new --store)",
                  file=sys.stderr)
            return 2

    if not hasattr(args, "max_memory") or not (argv is None if guard is None else guard):
        return run()
    from kgprobe import guard as memory

    try:
        limit = memory.resolve(args.max_memory)
    except KgprobeError as err:
        print(f"kgprobe: error: {err}", file=sys.stderr)
        return 2
    if limit is None:
        return run()
    return memory.supervise(limit, run, label=f"kgprobe {name}", created=new_store(args))


def new_store(args) -> Path | None:
    """The store directory a writing command would create (None if it exists or the command
    does not write one): the guard removes it if it stops the command."""
    from kgprobe.kg.store import default_store_path

    if not hasattr(args, "wait") or getattr(args, "endpoint", None):
        return None
    path = args.store or default_store_path()
    return None if path.exists() else path


if __name__ == "__main__":
    sys.exit(main())
