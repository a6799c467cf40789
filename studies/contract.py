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
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Sequence

from kgprobe.errors import StudyError

if TYPE_CHECKING:
    from kgprobe.studies.dry_run import PromptRecord
    from kgprobe.studies.results import Results
    from kgprobe.studies.runner import Unit


class Plan:
    """What a run of one configuration asks, built before any model loads (`Study.plan`).

    One object per run is the study's single request stream: the run scores `units`, the
    dry run writes `prompts` and ``kgprobe export lm-eval`` converts `requests`; the three
    read the same requests, so they cannot drift. The lifecycle (`Study.execute`) owns
    everything else: the folder's lock and pinned settings, loading the model, running the
    units, the controls on the same units, the report. A study only says what it asks.
    """

    #: results.csv's (and each unit row's) columns
    columns: Sequence[str] = ()
    #: `run_units` writes results.csv from the unit rows; False: the study's report writes
    #: it (premise ablation: averages and intervals beside the cells)
    results: bool = True
    #: the controls asked the same units, and whether each control's folder gets its own
    #: results.csv (`controls.run_controls`)
    controls: Sequence[str] = ()
    control_results: bool = True
    #: the controls are handed as ranking scorers trained on `answers()` (a study that asks
    #: one scorer for the whole run) instead of as loaded models
    scorer_controls: bool = False
    progress: bool = True
    #: the study's registered name (`Study.plan_of` sets it)
    study: str = ""
    #: the seconds `Study.load` took (the lifecycle measures it; STA's summary.json says it)
    load_seconds: float = 0.0

    def __init__(self, config: Any) -> None:
        self.config = config
        self.progress = getattr(config, "progress", self.progress)  # STA's config says

    def requests(self) -> list:
        """The planned units with their requests (what `units` scores and `prompts` lists)."""
        raise StudyError("this study has no request plan to export")

    def prompts(self) -> Iterable["PromptRecord"]:
        """The dry run's lines: every prompt the run would score, in its order."""
        raise StudyError("this study has no --dry-run")

    def dry_run_record(self, out: Path) -> None:
        """Write beside the dry run's prompts what they came from (premise ablation: its
        settings, `settings.record_dry_run`), after them; by default nothing."""

    def chat(self) -> Any:
        """What a dry run shows of a prompt under ``--chat-template`` (`dry_run.chat_view`)."""
        from kgprobe.studies.dry_run import chat_view

        return chat_view(self.config.settings.chat_template, self.config.model, self.study)

    def pinned(self, model: Any) -> dict:
        """The settings the run folder is pinned to (`settings.pin_settings`)."""
        return self.config.pinned()

    def recorded(self) -> dict:
        """Settings written beside the pinned ones and never compared (the report's)."""
        report = getattr(self.config, "report_settings", None)
        return report() if report is not None else {}

    def check(self, model: Any) -> None:
        """Refuse, before the folder is pinned, what `model` cannot do (a masked LM asked to
        write answers)."""

    def prepare(self, model: Any, out: Path) -> Any:
        """The model-dependent work before the first unit (premises classified by the
        model, soft prompts trained); returns what `units` scores with."""
        return model

    def units(self, scored: Any) -> list["Unit"]:
        """The run's units, scored by `scored`: the run's model (`prepare`'s result) or a
        control (its loaded model, or its scorer under `scorer_controls`): the same
        requests, only the model swapped."""
        raise NotImplementedError

    def answers(self) -> Iterable:
        """The answers a control's scorer is trained on, under `scorer_controls`."""
        return ()

    def finish(self, out: Path, controls: dict[str, Path]) -> None:
        """Work after the model and every control have run (tables that join them); the
        report is written after it."""

    def report(self, out: Path, rows: list[dict]) -> Path | None:
        """The run's report written from the model's unit rows as scored, where they hold
        more than the folder's files (STA: results.csv rounds what its tables show); None:
        the study's `Study.report` rebuilds it from the files, as ``kgprobe report`` does."""
        return None


class Study:
    """One study: its name, options, configuration, run and report.

    Subclasses set `name`, `help` and `config` (a dataclass with a ``from_args(args)``
    classmethod: every check of the settings happens there, once, for the CLI and the Python
    API alike) and implement `add_arguments`, `plan` and `report`; the run (`execute`), the
    dry run (`dry_run`), `load`, `summary` and `observations` have defaults.
    """

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str | None] = None
    config: ClassVar[type]
    #: Other spellings on the command line, as (group, name): ``("probe", "memorizing")``.
    aliases: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The columns of ``results.csv`` that name a row's cell (the rest are its numbers).
    cell_columns: ClassVar[tuple[str, ...]] = ()
    #: False: `load` gives the bare model (no chat wrap, `load_model`'s own seed), for a study
    #: that wraps its prompts itself (multiple choice's letter form) or asks no cloze (STA).
    wraps_model: ClassVar[bool] = True
    #: What a finished run has written into its folder, for the command's last line.
    written: ClassVar[str] = "results.csv, predictions.jsonl and report.md"
    #: The cell columns whose value for an item comes from the model's own answers (the
    #: premise-ablation study's P1/P2: a premise the model recalls is "implicit"), so two
    #: models may put one item in different cells; `kgprobe compare` pairs items only where
    #: both models put them in the cell, and checks the items of the other columns.
    model_assigned: ClassVar[tuple[str, ...]] = ()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        raise NotImplementedError

    def plan(self, config: Any) -> Plan:
        """The run of `config` as a `Plan`: its units of requests, built before any model
        loads. Every study defines it; the lifecycle (`execute`), the dry run (`dry_run`)
        and the lm-eval export read it."""
        raise StudyError(f"kgprobe study {self.name} has no request plan")

    def plan_of(self, config: Any) -> Plan:
        plan = self.plan(config)
        plan.study = self.name
        return plan

    def load(self, config: Any) -> Any:
        """The run's model, loaded as its controls are (`controls.load_as_run`: the run's
        device, dtype, seed and chat wrap); a study whose prompts take no wrap (`wraps_model`
        False) gets the bare model on the run's device and dtype."""
        if not self.wraps_model:
            from kgprobe.models.loading import load_model

            return load_model(config.model, device=config.settings.device,
                              dtype=config.settings.dtype)
        from kgprobe.studies.controls import ControlSettings, load_as_run

        return load_as_run(config.model, ControlSettings.of(config, self.name))

    def execute(self, config: Any, out: Path, *, progress: bool = True) -> list[dict]:
        """Run (or resume) the study into `out`, the one lifecycle every study shares: plan
        (every request built and checked), load the model, pin the folder's settings (a
        failure until here leaves a new folder as it was), the model's units, the same
        units through every control, then the report. Each unit is written as soon as it
        is scored, so a killed run resumes where it stopped. → the model's unit rows."""
        from kgprobe.studies.controls import ControlSettings, run_controls
        from kgprobe.studies.runner import run_units
        from kgprobe.studies.settings import first_pin, pin_settings

        out = Path(out)
        with first_pin(out):
            plan = self.plan_of(config)
            plan.progress = plan.progress and progress
            started = time.perf_counter()
            model = self.load(config)
            plan.load_seconds = time.perf_counter() - started
            plan.check(model)
            out.mkdir(parents=True, exist_ok=True)
            pin_settings(out, plan.pinned(model), report=plan.recorded(), study=self.name)
        scored = plan.prepare(model, out)
        rows = run_units(out, plan.units(scored), plan.columns, progress=plan.progress,
                         results=plan.results)
        folders: dict[str, Path] = {}
        if plan.controls:
            folders = run_controls(
                out, plan.controls, config.model, plan.units, plan.columns,
                settings=ControlSettings.of(config, self.name), progress=plan.progress,
                answers=plan.answers if plan.scorer_controls else None,
                results=plan.control_results)
        plan.finish(out, folders)
        if plan.report(out, rows) is None:
            self.report(out)
        return rows

    def report(self, out: Path) -> Path:
        """Rebuild ``report.md`` (and figures) from the files in `out`; return its path.
        (`kgprobe report` calls it through `rebuild_report`, which holds the folder's lock.)"""
        raise NotImplementedError

    def dry_run(self, config: Any, out: Path) -> int:
        """Write ``out/prompts.jsonl`` (the plan's prompts) without loading a model; return
        the number of prompts."""
        from kgprobe.studies.dry_run import write_prompts

        plan = self.plan_of(config)
        Path(out).mkdir(parents=True, exist_ok=True)
        n = write_prompts(out, plan.prompts(), chat=plan.chat())
        plan.dry_run_record(Path(out))
        return n

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

    def run(self, config: Any, out: str | Path, *, progress: bool = True) -> "Results":
        """Run (or resume) the study of `config` into `out`; its results, as a `Results`."""
        from kgprobe.studies.results import Results
        from kgprobe.studies.run_lock import run_folder_lock
        # the folder's writer lock before anything reads or pins its settings: two runs into
        # one folder would otherwise both pass the settings check and mix their units
        with run_folder_lock(out):
            self.execute(config, Path(out), progress=progress)
            return Results.from_path(out)

    def run_rows(self, config: Any, out: str | Path, *, progress: bool = True) -> list[dict]:
        """`run`, returning the model's unit rows as scored (numbers, not results.csv's
        text): the Python shortcuts (`memorization.study.run_memorization`, …) use it."""
        from kgprobe.studies.run_lock import run_folder_lock

        with run_folder_lock(out):
            return self.execute(config, Path(out), progress=progress)

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
