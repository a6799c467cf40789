"""`kgprobe kg check`: verify a store's files, indexes and recorded figures (kg/check.py)."""

from __future__ import annotations

import argparse
import sys

from kgprobe.kg.store import default_store_path
from kgprobe.terminal import printable

from .kg_options import store_arg
from .registry import command


@command("kg check")
def cmd_kg_check(args: argparse.Namespace) -> int:
    """One line per problem; exit 0 when the store is whole, 2 when it is damaged."""
    from kgprobe.kg.check import check_store

    report = check_store(args.store or default_store_path())
    for note in report.notes:
        print(f"note: {printable(note)}")
    for problem in report.problems:
        print(f"kgprobe: damaged: {printable(problem)}", file=sys.stderr)
    if not report.ok:
        return 2
    print(f"store {report.path}: ok ({report.graphs} graphs, {report.quads} quads; every index "
          "read and checksummed, every loaded graph as recorded)")
    return 0


def add_parsers(kg_sub) -> None:
    p = kg_sub.add_parser("check", help="verify the store: every index read (RocksDB checksums), "
                          "indexes agree, graphs as recorded when loaded; exit 2 if damaged")
    store_arg(p)
