"""`kgprobe cache stats|clear`: the persistent score cache every study shares
(`kgprobe.models.score_cache`)."""

from __future__ import annotations

import argparse

from .registry import command


@command("cache stats")
def cmd_stats(args: argparse.Namespace) -> int:
    from kgprobe.models.score_cache import ScoreCache

    stats = ScoreCache().stats()
    print(f"{stats.path}: {stats.rows} score rows of {stats.models} model(s), "
          f"{stats.bytes / 1e6:.1f} MB")
    return 0


@command("cache clear")
def cmd_clear(args: argparse.Namespace) -> int:
    from kgprobe.models.score_cache import ScoreCache

    cache = ScoreCache()
    print(f"removed {cache.clear()} score rows from {cache.path}")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("cache", help="the persistent score cache shared by every study "
                       "(stats, clear); KGPROBE_CACHE_DIR moves it")
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    cache_sub.add_parser("stats", help="where it is, how many rows, how big")
    cache_sub.add_parser("clear", help="delete every stored score")
