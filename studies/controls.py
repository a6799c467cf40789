"""Controls run beside a study's model: the same requests, scored by models that cannot reason.

A control is a model of the baseline family (`models.registry.BASELINES`: ``frequency``,
``copy``, ``random``; the premise-blind priors `models.registry.PRIORS`: ``general``, the
most general candidate first, and ``test-prior``, each cell's own golds by frequency) or the
model's own content-free prior (``prior`` = ``prior:MODEL``, `models.prior`). ``--controls``
names them; by default (`default_controls`) every weightless one, and ``prior`` where the run
loads a language model (`models.names.is_language_model`: a preset, a hub id, a directory, a
``.gguf`` file, a served model): a baseline, a heuristic or a user model gets the weightless
ones only (``--controls prior`` asks a user model's prior all the same). each is asked **exactly the requests the model was
asked** — the same units, built from the same setup (the model's premise split, pseudowords,
candidates), only the scorer swapped — so a control's number in a cell is what a model without
the ability scores on the very prompts and items the model's number comes from (a selection
effect shows up in the control too).

**Where their predictions live, and why units.** Each control gets its own run folder,
``OUT/controls/NAME`` (``prior:M`` → ``prior``: a run folder holds one model, so one prior),
scored through `runner.run_units` like the model: a unit file per cell, written as it
finishes, resumed after a kill, and a ``predictions.jsonl`` the report reads with the model's
own reader. The weightless controls would be cheap enough to recompute at the end, but
``prior`` asks a language model, as expensive as the run itself, and one code path for all
of them is what keeps "the same requests" true. A control that is the run's model itself
(``--model frequency`` with the frequency control) is not scored again: its folder is OUT.

A control never changes the model's units, so ``--controls`` is recorded in ``config.json``
beside the report's settings and not compared: a rerun with another list resumes the model's
units and scores only the controls not scored yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kgprobe.errors import StudyError
from kgprobe.models.registry import BASELINES, CONTROLS

#: The baselines as controls (no network, seconds).
FREE = tuple(BASELINES)
#: Every control that needs no language model: the baselines and the premise-blind priors.
WEIGHTLESS = tuple(CONTROLS)
#: What ``--controls`` accepts (``prior``: the run's model asked with the content removed).
CHOICES = (*WEIGHTLESS, "prior")
#: The controls that only rank a ranking study's requests: ``prior`` (a content-free prompt
#: has nothing to complete, no question to answer) and ``test-prior`` (handed the golds of the
#: requests it ranks, `studies.probes.score_requests`): no open answers, no option letters.
RANKING_ONLY = ("test-prior", "prior")
#: The folder under a run folder that holds the controls' run folders.
FOLDER = "controls"


def controls_option(parser, note: str = "") -> None:
    """``--controls LIST``, the same on every study that runs controls beside its model
    (`parse_controls` reads it); `note` adds what the study does differently."""
    parser.add_argument("--controls", default=None, metavar="LIST",
                        help="controls scored on the same prompts and shown beside every cell: "
                             "frequency, copy, random, general (the most general candidate "
                             "first), test-prior (each cell's own golds by frequency: the best "
                             "premise-blind prior), prior (the model with the content removed), "
                             "comma-separated, or none (default: frequency,copy,random,general,"
                             "test-prior, and prior where --model is a language model)"
                             + (f"; {note}" if note else ""))


def default_controls(model: str | None, *, ranking: bool = True) -> tuple[str, ...]:
    """The controls a run scores unless ``--controls`` says otherwise: every weightless one,
    and ``prior`` where `model` is a language model (a run of a baseline, a heuristic or a user
    model has no content-free prior of its own to ask by default). `ranking` false (open
    answers): without the `RANKING_ONLY` ones."""
    from kgprobe.models.names import is_language_model

    chosen = (*WEIGHTLESS, "prior") if is_language_model(model) else WEIGHTLESS
    return tuple(c for c in chosen if ranking or c not in RANKING_ONLY)


def parse_controls(text: str | Sequence[str] | None, model: str | None = None, *,
                   ranking: bool = True) -> tuple[str, ...]:
    """``--controls frequency,copy`` → the names in `CHOICES` order; ``none`` → no control;
    None → `default_controls` of `model` (`ranking`: whether the run ranks candidates). Anything
    else is one line naming the choices."""
    if text is None:
        return default_controls(model, ranking=ranking)
    items = [x.strip() for x in (text.split(",") if isinstance(text, str) else text)]
    items = [x for x in items if x]
    if items == ["none"]:
        return ()
    bad = [x for x in items if x not in CHOICES]
    if bad or not items:
        raise StudyError(f"--controls {text if isinstance(text, str) else ','.join(text)}: use "
                         f"one or more of {', '.join(CHOICES)} (comma-separated), or none")
    return tuple(c for c in CHOICES if c in items)


def is_control(model: str | None) -> bool:
    """Whether `model` is itself a control (a baseline or a prior): its run can show no
    reasoning, so nothing it scores is claimed. Decided by the model family's registry."""
    from kgprobe.models.names import is_control_model

    return is_control_model(model)


def control_model(control: str, model: str) -> str:
    """The model name a control loads: ``prior`` → ``prior:MODEL`` (a control's prior is the
    control itself: it has no content to remove), any other control its own name."""
    if control != "prior":
        return control
    return model if is_control(model) else f"prior:{model}"


def control_folder(out: Path, control: str, model: str | None) -> Path:
    """Where `control`'s units and predictions live; OUT itself when it is the run's model."""
    if model is not None and control_model(control, model) == model:
        return Path(out)
    return Path(out) / FOLDER / control


@dataclass(frozen=True)
class ControlSettings:
    """How a run's controls are loaded and scored: the run's own device, dtype, seed, score
    cache and chat wrap (for `study`, whose instruction the wrap asks). Built once per run from
    its config (`of`) and handed whole to `run_controls`, `load_control` and `control_scorer`,
    so no study spells the list out itself and none can drop a setting: a control loaded
    otherwise than the model would read other prompts (a bare cloze beside a wrapped one)."""

    device: str = "auto"
    dtype: str = "float32"
    seed: int = 0
    cache: bool = True  # the score cache, where the control keeps one (a prior)
    chat_template: str = "none"
    study: str = ""

    @classmethod
    def of(cls, config: Any, study: str) -> ControlSettings:
        """The settings of a study's `config` (its `ModelSettings` and its seed; a config
        without a seed keeps the default: multiple choice has none), for `study`."""
        held = config.settings  # the config's ModelSettings
        values = {f.name: getattr(held, f.name) for f in fields(cls) if hasattr(held, f.name)}
        if hasattr(config, "seed"):
            values["seed"] = config.seed
        return cls(**values, study=study)


def load_control(control: str, model: str, settings: ControlSettings = ControlSettings()) -> Any:
    """The control's model, loaded as the run's model is (`load_as_run`): for a study that
    builds its scorers itself (one per task, each trained on that task's answers:
    memorization), exactly as it builds them from its own model."""
    return load_as_run(control_model(control, model), settings)


def load_as_run(name: str, settings: ControlSettings) -> Any:
    """`name` (`models.loading.load_model`) loaded with the run's seed, device and dtype and
    wrapped in the run's chat template for its study (`options.use_chat`: a ``prior:MODEL``
    reads the same wrapped prompts as the model): the run's model and each control alike."""
    from kgprobe.models.loading import load_model
    from kgprobe.studies.options import use_chat

    s = settings
    return use_chat(load_model(name, device=s.device, dtype=s.dtype, seed=s.seed),
                    s.chat_template, s.study)


def control_scorer(control: str, model: str, *, answers: Callable[[], Iterable],
                   settings: ControlSettings = ControlSettings()) -> Any:
    """The control's ranking scorer, set up as the model's is: loaded with the run's seed
    and chat wrap (`load_control`), handed the relation's training answers
    (`LanguageModel.trained_on`; `answers` makes a fresh iterable of them), behind the score
    cache where the model keeps one (a prior) and `settings` keeps it on."""
    from kgprobe.models.score_cache import cached_scorer

    loaded = load_control(control, model, settings)
    return cached_scorer(loaded.trained_on(answers()).scorer(masks="multi"), loaded,
                         enabled=settings.cache)


def run_controls(out: Path, controls: Sequence[str], model: str,
                 units_for: Callable[[Any], list], columns: Sequence[str], *,
                 settings: ControlSettings, answers: Callable[[], Iterable] | None = None,
                 progress: bool = True, results: bool = False) -> dict[str, Path]:
    """Score every control in its folder (`control_folder`) through the units `units_for`
    builds — the study's own units, only the model swapped. With `answers` (a study that
    asks one scorer for the whole run, trained on those answers) `units_for` receives the
    control's scorer (`control_scorer`); without, the control's loaded model
    (`load_control`), from which the study builds its scorers as from its own (ranking or
    open answers). `results`: write each control folder's ``results.csv`` (its unit rows), as
    a run of the control alone would. → control → its run folder."""
    from kgprobe.studies.runner import run_units

    folders = {}
    for control in controls:
        folder = control_folder(out, control, model)
        if folder != Path(out):
            if progress:
                import sys

                print(f"kgprobe: control {control_model(control, model)} on the same prompts "
                      f"({folder})", file=sys.stderr, flush=True)
            if answers is None:
                made = load_control(control, model, settings)
            else:
                made = control_scorer(control, model, answers=answers, settings=settings)
            run_units(folder, units_for(made), columns, progress=progress, results=results)
        folders[control] = folder
    return folders


# ------------------------------------------------------------ the controls beside each row


def control_columns(controls: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """results.csv's columns for the controls: ``MRR_copy``, ``MRR_copy_lo``,
    ``MRR_copy_hi``, … per control and metric, in that order."""
    return [f"{m}_{c}{suffix}" for c in controls for m in metrics for suffix in ("", "_lo", "_hi")]


def beside(rows: list[dict], tables: dict[str, list[dict]], keys: Sequence[str],
           metrics: Sequence[str]) -> list[dict]:
    """`rows` with each control's value and interval (``M``, ``M_lo``, ``M_hi`` of its own
    row in `tables`) in the same cell beside the model's, matched on `keys` (the cell's
    columns that do not name the model: not its masks or pooling). A cell the control has
    no row for is left empty, never filled from another."""
    def key(row: dict) -> tuple:
        return tuple(str(row.get(k) or "") for k in keys)

    for control, table in tables.items():
        by_key = {key(r): r for r in table}
        for row in rows:
            other = by_key.get(key(row), {})
            for m in metrics:
                for suffix in ("", "_lo", "_hi"):
                    row[f"{m}_{control}{suffix}"] = other.get(f"{m}{suffix}", "")
    return rows


def control_view(row: dict, control: str, metrics: Sequence[str]) -> dict | None:
    """A results.csv row's values of `control` under the metric names (``MRR``, ``MRR_lo``,
    …), so a report formats them with the model's own cell code; None where it has none."""
    view = {f"{m}{suffix}": row.get(f"{m}_{control}{suffix}", "")
            for m in metrics for suffix in ("", "_lo", "_hi")}
    return view if any(str(view[m]) != "" for m in metrics) else None


def shown_controls(rows: Sequence[dict], metrics: Sequence[str]) -> list[str]:
    """The controls (in `CHOICES` order) whose columns a results table holds."""
    held = set(rows[0]) if rows else set()
    return [c for c in CHOICES if any(f"{m}_{c}" in held for m in metrics)]
