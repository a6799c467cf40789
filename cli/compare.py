"""`kgprobe compare RUN RUN …`: one study's runs on different models, paired by item.

Building the parser imports nothing heavy; the comparison (`studies/compare.py`) and its
files (`studies/compare_report.py`) are imported when the command runs.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .registry import command


@command("compare")
def cmd_compare(args: argparse.Namespace) -> int:
    """Compare the runs, write compare.csv/.md/.png, print where they are."""
    from kgprobe.studies.compare import compare
    from kgprobe.studies.compare_report import write_outputs

    table = compare(args.runs, baseline=args.baseline, metric=args.metric,
                    resamples=args.resamples, seed=args.seed)
    csv_path, md_path, png_path = write_outputs(table, args.out, command_line(args))
    print(f"wrote {md_path}, {csv_path} and {png_path} ({table.study}, {table.metric}, "
          f"{len(table.runs)} runs, baseline {table.baseline.label})")
    return 0


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces the comparison (compare.md quotes it)."""
    argv = ["kgprobe", "compare", *map(str, args.runs)]
    for option in ("baseline", "metric", "resamples", "seed"):
        value = getattr(args, option)
        if value is not None and value != DEFAULTS.get(option):
            argv += [f"--{option}", str(value)]
    return " ".join(shlex.quote(a) for a in [*argv, "--out", str(args.out)])


#: The options' defaults (left out of the quoted command).
DEFAULTS = {"resamples": 2000, "seed": 0}


def add_parsers(sub) -> None:
    """`compare RUN RUN … --out DIR`."""
    p = sub.add_parser("compare", help="compare one study's runs on different models, cell by "
                       "cell, paired by item (intervals, paired tests, Holm)")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run folders (each a study's --out) of one study, differing only in the model")
    p.add_argument("--baseline", type=Path, default=None, metavar="RUN",
                   help="the run every other is compared with (default: the first RUN)")
    p.add_argument("--metric", default=None,
                   help="a per-item metric of the study (default: MRR where it has one, else accuracy)")
    p.add_argument("--resamples", type=int, default=DEFAULTS["resamples"],
                   help="bootstrap resamples per interval (the permutation tests draw 10 times more)")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="seed of the resampling")
    p.add_argument("--out", type=Path, required=True,
                   help="folder for compare.md, compare.csv and compare.png")
