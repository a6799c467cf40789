"""The Python API: run any study from a notebook and get its results back.

    import kgprobe
    results = kgprobe.run("memorization", model="frequency", out="out/frequency", task="domain")
    results.get_metric("MRR")           # a pandas Series, one value per cell
    kgprobe.Results.from_path("out/frequency").frame   # the same rows, read back later

Settings are the study's command-line options spelled as keywords (``--soft-epochs 5`` is
``soft_epochs=5``, a flag is ``no_cache=True``, a list may be a Python list), turned into the
same options and checked by the same `Config.from_args`, so both entries share every default
and every error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgprobe.errors import StudyError
from kgprobe.studies.registry import get_study, study_names
from kgprobe.studies.results import Results

__all__ = ["run", "Results", "study_names", "config"]


def config(study: str, **settings: Any) -> Any:
    """The checked configuration `run` would use (the study's ``Config`` dataclass)."""
    settings.setdefault("out", ".")
    return get_study(study).config_from_settings(**settings)[0]


def run(study: str, *, out: str | Path, threads: int | None = None, **settings: Any) -> Results:
    """Run (or resume) `study` into the folder `out` and return its `Results`.

    `threads`: torch CPU threads (1 is fastest when other processes share the cores).
    A rerun into the same folder with the same settings resumes, rescoring nothing finished.
    """
    from kgprobe.atomic import check_output
    from kgprobe.studies.options import apply_threads

    definition = get_study(study)
    if settings.get("dry_run"):
        raise StudyError("dry_run: use the command line (`kgprobe study NAME --dry-run`); "
                         "run() returns results")
    config, args = definition.config_from_settings(out=str(out), **settings)
    check_output(Path(out), "out", folder=True)
    model = getattr(args, "model", None)
    if isinstance(model, str):
        from kgprobe.models.names import check_model_name

        check_model_name(model)
    args.threads = threads
    apply_threads(args)
    return definition.run(config, out)
