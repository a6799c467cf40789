"""The `kgprobe` command line.

User errors (`KgprobeError`) are caught here, once: one line on stderr, exit status 2.
Commands that load or query (those with `--max-memory`) run under the memory guard
(`kgprobe.guard`) when started from the command line.
Building the parser imports no heavy library (torch, transformers, scipy, matplotlib): each
command imports what it needs when it runs, so `kgprobe --help` and `kgprobe kg …` start at once.
"""

from __future__ import annotations

# Ctrl-C while the modules below are imported and the parser is built (which imports each
# command's options, numpy among them) must not print a traceback: until `main` has parsed
# its arguments, SIGINT ends the process at once with one line (nothing is written yet). A
# KeyboardInterrupt there would not do: numpy turns one raised inside its import into an
# ImportError.
import signal
import sys


def _interrupted_while_starting(signum, frame) -> None:
    import os

    os.write(2, b"kgprobe: interrupted\n")
    os._exit(130)


_PREVIOUS_SIGINT = None
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    try:
        _PREVIOUS_SIGINT = signal.signal(signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread: leave signals alone
        pass

import argparse  # noqa: E402
import functools  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Sequence  # noqa: E402

from kgprobe.errors import KgprobeError  # noqa: E402
from kgprobe.studies.contract import OptionsParser  # noqa: E402
from kgprobe.studies.options import apply_threads  # noqa: E402
from kgprobe.studies.registry import registered_studies  # noqa: E402
from kgprobe.terminal import printable  # noqa: E402

from . import (cache, compare, generate, interop, kg, kg_check, kg_options,  # noqa: E402
               kg_remote, review, studies)
from kgprobe.bounds import check_numbers  # noqa: E402
from .outcome import damaged_store_line, os_error_line, quiet_broken_pipe  # noqa: E402
from .registry import COMMANDS  # noqa: E402


def _started() -> None:
    """From here on, Ctrl-C is a KeyboardInterrupt that `main` turns into one line."""
    global _PREVIOUS_SIGINT
    if _PREVIOUS_SIGINT is not None:
        try:
            signal.signal(signal.SIGINT, _PREVIOUS_SIGINT)
        except ValueError:  # not the main thread
            return
        _PREVIOUS_SIGINT = None

__all__ = ["build_parser", "main"]


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already names it (or there
    is none to name: a flag, an option without a default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or default in (None, False, argparse.SUPPRESS)
                or not action.option_strings or isinstance(default, bool)):
            return text
        return f"{text} (default: %(default)s)"


class VersionAction(argparse.Action):
    """`kgprobe --version`: the installed package's version, read only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"kgprobe {package_version()}")
        parser.exit()


def package_version() -> str:
    """From the package metadata; a checkout that is not installed reads its pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version("kgprobe")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        with open(pyproject, "rb") as fh:
            return tomllib.load(fh)["project"]["version"]


class CommandParser(OptionsParser):
    """The command line's parser: it keeps its options (`OptionsParser`) and the sub-command
    groups `add_subparsers` made, so `subparsers` walks them without argparse's private names
    (every sub-parser is a `CommandParser` too: argparse makes them of the parent's class)."""

    def __init__(self, *args, **kwargs) -> None:
        self.subcommands: list = []
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs):  # type: ignore[override]
        action = super().add_subparsers(**kwargs)
        self.subcommands.append(action)
        return action


def subparsers(parser: argparse.ArgumentParser):
    """`parser` and every parser below it."""
    yield parser
    for action in getattr(parser, "subcommands", ()):
        for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
            yield from subparsers(child)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="kgprobe", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    kg_sub = kg.add_parsers(sub)
    kg_remote.add_parsers(kg_sub)
    kg_check.add_parsers(kg_sub)
    generate.add_parsers(sub)
    review.add_parsers(sub)
    studies.add_parsers(sub)
    interop.add_parsers(sub)
    cache.add_parsers(sub)
    compare.add_parsers(sub)
    for choice in sub._choices_actions:  # `kg`'s summary lists every kg command there is
        if choice.dest == "kg":
            choice.help = "the knowledge graph: " + ", ".join(kg_sub.choices)
    for each in subparsers(parser):
        each.formatter_class = HelpFormatter
        check_numbers(each)
    return parser


def _parser() -> argparse.ArgumentParser:
    """The parser `main` reads its arguments with, built once per process and set of studies
    (a study registered later, as tests do, gets a new one): a parse leaves it as it was
    (every default and type is fixed when it is built, none read from the environment), and
    building it took 30-50 ms of every in-process call (the test suite makes about a thousand)."""
    return _parser_for(registered_studies())


@functools.lru_cache(maxsize=1)
def _parser_for(studies: tuple) -> argparse.ArgumentParser:
    """`build_parser` for the registered `studies` (the cache's key)."""
    return build_parser()


def main(argv: Sequence[str] | None = None, *, guard: bool | None = None) -> int:
    """Run one command. `guard` (default: when `argv` is None, i.e. the real command line):
    a command with `--max-memory` runs in a supervised child (`kgprobe.guard`); in-process
    callers (tests) keep running in their own process."""
    try:
        try:
            args = _parser().parse_args(argv)
        finally:
            _started()
    except KeyboardInterrupt:
        print("kgprobe: interrupted", file=sys.stderr)
        return 130
    except KgprobeError as err:  # a value out of its option's range (cli/bounds.py)
        print(f"kgprobe: error: {printable(str(err))}", file=sys.stderr)
        return 2
    # `kgprobe GROUP SUB` handlers are registered as "GROUP SUB" (`registry.command`); the
    # studies' sub-parsers set `func` instead
    sub_name = getattr(args, f"{args.command}_command", None)
    name = f"{args.command} {sub_name}" if sub_name else args.command
    handler = getattr(args, "func", None) or COMMANDS[name]

    def run() -> int:
        try:
            apply_threads(args)
            check_model(args)
            check_outputs(args, name)
            status = handler(args)
            sys.stdout.flush()  # here, not at exit: a closed pipe is reported below
            return status
        except KgprobeError as err:
            print(f"kgprobe: error: {printable(str(err))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("kgprobe: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            return quiet_broken_pipe()
        except (OSError, RuntimeError) as err:
            line = os_error_line(err) if isinstance(err, OSError) else damaged_store_line(err)
            if line is None:
                raise
            print(f"kgprobe: error: {printable(line)}", file=sys.stderr)
            return 2

    if not hasattr(args, "max_memory") or not (argv is None if guard is None else guard):
        return run()
    from kgprobe import guard as memory

    try:
        limit = memory.resolve(args.max_memory)
    except KgprobeError as err:
        print(f"kgprobe: error: {printable(str(err))}", file=sys.stderr)
        return 2
    if limit is None:
        return run()
    return memory.supervise(limit, run, label=f"kgprobe {name}", created=new_store(args),
                            why=kg_options.GUARD_WHY.get(name, memory.WHY))


def check_model(args) -> None:
    """A `--model` that names nothing loadable fails here, in a second, before any data is read
    or torch is imported (`models/names.py`, which knows the baselines from their registry)."""
    model = getattr(args, "model", None)
    if isinstance(model, str) and not getattr(args, "dry_run", False):
        from kgprobe.models.names import check_model_name

        check_model_name(model)


#: The commands whose `--out` is one file (every other `--out` is a folder).
FILE_OUTPUTS = ("kg export", "review sample")


def check_outputs(args, name: str) -> None:
    """Every output path is checked before any work: a study's scores, a reasoner's commit
    are not spent on an --out that cannot be written."""
    from kgprobe.atomic import check_output

    if getattr(args, "out", None) is not None:
        check_output(args.out, "--out", folder=name not in FILE_OUTPUTS)
    if getattr(args, "provenance", None) is not None:
        check_output(args.provenance, "--provenance", folder=False)


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
