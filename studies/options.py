"""Command-line options shared by several `kgprobe` commands.

They live with the studies (not in `kgprobe.cli`) because each study package registers its own
sub-command, and a study must never import the layer above it.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from kgprobe.errors import KgprobeError


def threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads``; `kgprobe.cli.main` applies it before any command runs."""
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice); 1 is much faster when "
                             "other processes share the cores")


def scale_options(parser: argparse.ArgumentParser) -> None:
    """``--device``, ``--dtype`` and ``--no-cache``: where and how a model study computes."""
    parser.add_argument("--device", default="auto",
                        help="auto (cuda when present, else cpu), cpu or cuda")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                        help="the weights' dtype (bfloat16 on a GPU; ranks like float32)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the persistent score cache "
                             "(`kgprobe cache stats|clear`)")


def candidates_option(parser: argparse.ArgumentParser, default: str = "all") -> None:
    """``--candidates all|K``: the candidate protocol (`reasoning.distractors`), the same on
    every command that ranks candidates. Handlers check it with `parse_protocol` (a bad value
    is then one line and exit 2, where argparse would print its usage too)."""
    parser.add_argument("--candidates", default=default, metavar="all|K",
                        help="all: rank the gold against every candidate of its kind (the "
                             "paper's §3); K: the gold and K-1 seeded distractors of its kind "
                             f"that are no gold of the item (the paper's §5 uses 20; default "
                             f"{default})")


def ranking_option(parser: argparse.ArgumentParser) -> None:
    """``--ranking filtered|raw`` (`reasoning.filtering`); handlers check it with
    `parse_ranking`, so a bad value is one line and exit 2."""
    parser.add_argument("--ranking", default="filtered", metavar="filtered|raw",
                        help="filtered (default): an item's other true answers (entailed "
                             "superclasses, superproperties, domain/range classes; a record's "
                             "other golds) are left out when its gold is ranked, as in "
                             "knowledge-graph completion; raw: every candidate counts")


def dry_run_option(parser: argparse.ArgumentParser) -> None:
    """``--dry-run``: write ``OUT/prompts.jsonl`` (`studies.dry_run`) and load no model."""
    parser.add_argument("--dry-run", action="store_true",
                        help="write OUT/prompts.jsonl, one line per prompt the study would score, "
                             "without loading a model (--model not needed)")


def dry_run_done(out, n: int) -> int:
    """What every study's ``--dry-run`` prints when it has written its prompts."""
    print(f"wrote {out}/prompts.jsonl ({n} prompts; no model loaded)")
    return 0


def apply_threads(args: argparse.Namespace) -> None:
    threads = getattr(args, "threads", None)
    if threads is not None:
        from kgprobe.models.loading import set_threads

        set_threads(threads)


def comma_list(text: str | None, *, choices: Sequence[str] | None = None,
               option: str = "", lower: bool = False) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``: the one parser of every comma-separated option.

    With `choices`, an unknown entry is a one-line error naming `option` and the valid values.
    """
    if text is None:
        return []
    items = [x.strip() for x in str(text).split(",") if x.strip()]
    if lower:
        items = [x.lower() for x in items]
    if choices is not None:
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise KgprobeError(f"{option} {text}: use one or more of {', '.join(choices)} "
                               "(comma-separated)")
    return items
