"""The study contract: what every study declares (`Study`); `registry` finds them.

A study is a sub-package of `kgprobe.studies` whose light ``cli`` module defines a subclass of
`Study` and decorates it with `registry.register_study`. That is all a new study touches: the CLI
(`kgprobe study NAME`, `kgprobe report RUN`), the Python API (`kgprobe.run`) and
`Results.from_path` find it through the registry, and the run folder's ``config.json`` records
the study's name (`settings.pin_settings`), so nothing guesses which study wrote a folder.

The sub-packages are discovered by listing `kgprobe.studies` (`registry.discover`), importing only each
one's ``cli`` module: options and a handler, no torch, so building the parser stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kgprobe.errors import StudyError

if TYPE_CHECKING:
    from kgprobe.studies.results import Results


class Study:
    """One study: its name, options, configuration, run and report.

    Subclasses set `name`, `help` and `config` (a dataclass with a ``from_args(args)``
    classmethod: every check of the settings happens there, once, for the CLI and the Python
    API alike) and implement `add_arguments`, `execute` and `report`; `dry_run`, `summary` and
    `observations` have defaults.
    """

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str | None] = None
    config: ClassVar[type]
    #: Other spellings on the command line, as (group, name): ``("probe", "memorizing")``.
    aliases: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The columns of ``results.csv`` that name a row's cell (the rest are its numbers).
    cell_columns: ClassVar[tuple[str, ...]] = ()
    #: What a finished run has written into its folder, for the command's last line.
    written: ClassVar[str] = "results.csv, predictions.jsonl and report.md"
    #: The cell columns whose value for an item comes from the model's own answers (the
    #: premise-ablation study's P1/P2: a premise the model recalls is "implicit"), so two
    #: models may put one item in different cells; `kgprobe compare` pairs items only where
    #: both models put them in the cell, and checks the items of the other columns.
    model_assigned: ClassVar[tuple[str, ...]] = ()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        raise NotImplementedError

    def execute(self, config: Any, out: Path) -> None:
        """Run (or resume) the study into `out`: ``results.csv``, ``predictions.jsonl``,
        ``report.md`` and the unit files, each written as soon as it is known."""
        raise NotImplementedError

    def report(self, out: Path) -> Path:
        """Rebuild ``report.md`` (and figures) from the files in `out`; return its path.
        (`kgprobe report` calls it through `rebuild_report`, which holds the folder's lock.)"""
        raise NotImplementedError

    def dry_run(self, config: Any, out: Path) -> int:
        """Write ``out/prompts.jsonl`` without loading a model; return the number of prompts."""
        raise StudyError(f"kgprobe study {self.name} has no --dry-run")

    def summary(self, out: Path) -> str:
        """The results table the command prints after a run (before where things are)."""
        return ""

    def observations(self, out: Path) -> list[dict]:
        """One dict per scored item and cell: the cell's columns, ``item`` and the item's
        metrics (``MRR``: its reciprocal rank, ``R@1``…), read from the run's predictions.
        `Results.get_metric` averages them where ``results.csv`` lacks a metric, and
        `kgprobe compare` pairs them by cell and item."""
        return []

    # -- shared by every study ---------------------------------------------------------------

    def rebuild_report(self, out: str | Path) -> Path:
        """`report`, holding the run folder's writer lock: a report is not rebuilt while a run
        writes the files it reads, nor beside another report."""
        from kgprobe.studies.run_lock import run_folder_lock

        with run_folder_lock(out, create=False):
            return self.report(Path(out))

    def config_from_args(self, args: argparse.Namespace) -> Any:
        from kgprobe.studies.options import fold_served_options

        fold_served_options(args)
        return self.config.from_args(args)

    def parser(self) -> argparse.ArgumentParser:
        """The study's options with the command line's range checks (`kgprobe.bounds`), so
        `kgprobe.run(..., seed=-1)` is refused as `--seed -1` is."""
        from kgprobe.bounds import check_numbers

        parser = OptionsParser(prog=f"kgprobe study {self.name}", add_help=False)
        self.add_arguments(parser)
        check_numbers(parser)
        return parser

    def config_from_settings(self, **settings: Any) -> tuple[Any, argparse.Namespace]:
        """The configuration the command line would build from the same options:
        ``model="smollm2-135m", limit=10, templates="manual"`` is
        ``--model smollm2-135m --limit 10 --templates manual``, so Python callers get the
        CLI's defaults and checks, not a second copy of them."""
        parser = self.parser()
        args = parser.parse_args(settings_argv(parser, settings))
        return self.config_from_args(args), args

    def run(self, config: Any, out: str | Path) -> "Results":
        """Run (or resume) the study of `config` into `out`; its results, as a `Results`."""
        from kgprobe.studies.results import Results
        from kgprobe.studies.run_lock import run_folder_lock
        # the folder's writer lock before anything reads or pins its settings: two runs into
        # one folder would otherwise both pass the settings check and mix their units
        with run_folder_lock(out):
            self.execute(config, Path(out))
            return Results.from_path(out)

    def main(self, args: argparse.Namespace) -> int:
        """``kgprobe study NAME …``: check the settings, dry-run or run, print the summary."""
        from kgprobe.studies.options import dry_run_done
        from kgprobe.studies.run_lock import run_folder_lock
        from kgprobe.studies.settings import check_dry_run_folder

        config = self.config_from_args(args)
        with run_folder_lock(args.out):  # held until the summary is read: one writer at a time
            if getattr(args, "dry_run", False):
                check_dry_run_folder(Path(args.out), self.name)  # under the lock: no race
                return dry_run_done(args.out, self.dry_run(config, args.out))
            self.run(config, args.out)
            text = self.summary(Path(args.out))
        if text:
            print(text)
        print(f"wrote {args.out}/{self.written}; read {args.out}/report.md")
        return 0


class OptionsParser(argparse.ArgumentParser):
    """An argument parser that keeps the options it is given (`options`: dest → the action
    `add_argument` returned, groups' options included), so `settings_argv` reads them without
    argparse's private attributes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: dict[str, argparse.Action] = {}  # before the parser adds --help
        super().__init__(*args, **kwargs)

    def _keep(self, action: argparse.Action) -> argparse.Action:
        if action.option_strings:
            self.options[action.dest] = action
        return action

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:  # type: ignore[override]
        return self._keep(super().add_argument(*args, **kwargs))

    def _recording(self, group: Any) -> Any:
        add = group.add_argument
        group.add_argument = lambda *a, **k: self._keep(add(*a, **k))
        return group

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._recording(super().add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._recording(super().add_mutually_exclusive_group(**kwargs))


def settings_argv(parser: argparse.ArgumentParser, settings: dict) -> list[str]:
    """``{"limit": 10, "no_cache": True, "rules": ("rdfs9", "rdfs11")}`` as the options of
    `parser` (an `OptionsParser`): ``--limit 10 --no-cache --rules rdfs9,rdfs11``. An unknown
    setting is an error naming the study's settings."""
    options: dict[str, argparse.Action] = getattr(parser, "options", {})
    argv: list[str] = []
    for key, value in settings.items():
        action = options.get(key)
        if action is None:
            names = ", ".join(sorted(options))
            raise StudyError(f"{key}={value!r}: not a setting of this study; use one of {names}")
        flag = max(action.option_strings, key=len)
        if action.nargs == 0 and isinstance(action.default, bool):  # a flag: store_true/false
            if bool(value) != (action.default is True):
                argv.append(flag)
        elif value is None:
            continue
        elif action.nargs in ("+", "*"):
            argv += [flag, *map(str, value if isinstance(value, (list, tuple)) else [value])]
        elif isinstance(value, (list, tuple, set)):
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv
