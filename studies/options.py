"""Command-line options shared by several `kgprobe` commands."""

from __future__ import annotations

import argparse


def threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads``; `kgprobe.studies.cli.main` applies it before any command runs."""
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice); 1 is much faster when "
                             "other processes share the cores")


def apply_threads(args: argparse.Namespace) -> None:
    threads = getattr(args, "threads", None)
    if threads is not None:
        from ..prompts.models import set_threads

        set_threads(threads)
