"""The options and openers every store command shares: `--store`, `--wait`, `--max-memory`,
`--endpoint`, and the graph-name check (`kg.py`, `kg_remote.py`, `kg_check.py`, `generate.py`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.kg.endpoint_options import endpoint_options, open_endpoint
from kgprobe.kg.store import GraphNameError, KnowledgeGraph, default_store_path


def store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="store directory (default: $KGPROBE_STORE, else .kgprobe/store)")


def memory_arg(parser: argparse.ArgumentParser) -> None:
    """--max-memory: the command runs under the memory guard (`kgprobe.guard`)."""
    parser.add_argument("--max-memory", default=None, metavar="SIZE",
                        help="stop with one line (exit 2) when the command's memory passes SIZE "
                             "(e.g. 2G, 512M; 0: no limit; default: $KGPROBE_MAX_MEMORY, else "
                             "half of this machine's memory)")


def max_inferred_arg(parser: argparse.ArgumentParser) -> None:
    """--max-inferred: the bound on what reasoning may store (`materialize.default_max_inferred`)."""
    from kgprobe.reasoning.materialize import INFERRED_FLOOR, INFERRED_PER_ASSERTED

    parser.add_argument("--max-inferred", type=int, default=None, metavar="N",
                        help="stop with one line (exit 2), storing nothing, when reasoning "
                             "derives more than N triples (0: no limit; default: "
                             f"{INFERRED_PER_ASSERTED} per triple reasoned over, at least "
                             f"{INFERRED_FLOOR:,}; a chain of n classes derives n²/2)")


#: What the memory guard's line says when it stops these commands (`guard.supervise`): they
#: read no file, so nothing is corrupt, and a reason commits all of its inferences or none.
GUARD_WHY = {"reason": "the closure needed more memory than that (the store is intact: a "
                       "stopped `reason` stores all of its inferences or none): lower "
                       "--max-inferred"}


def writer_args(parser: argparse.ArgumentParser) -> None:
    """--store, and --wait: a writing command waits for another writer instead of stopping."""
    store_arg(parser)
    parser.add_argument("--wait", action="store_true", help="if another kgprobe process is "
                        "writing to the store, wait for it to finish (default: exit 2)")


def open_store(args: argparse.Namespace, *, write: bool = False) -> KnowledgeGraph:
    """Writers take the store's writer lock; readers open it read-only and run beside them."""
    return KnowledgeGraph(args.store or default_store_path(), create=False, read_only=not write,
                          wait=getattr(args, "wait", False))


def reader_args(parser: argparse.ArgumentParser, *, timeout_help: str | None = None) -> None:
    """--store, or --endpoint URL (with its timeout, retries and page size)."""
    store_arg(parser)
    endpoint_options(parser, timeout_help=timeout_help)


def open_reader(args: argparse.Namespace):
    """The store read-only, or the SPARQL endpoint `--endpoint` names: the same read interface."""
    return open_endpoint(args) if getattr(args, "endpoint", None) else open_store(args)


def check_graph_name(name: str, option: str = "--name") -> str:
    """Refuse a name that names no graph: '' would make the bare `urn:kgprobe:source:`."""
    if not name.strip():
        raise GraphNameError(f"{option} {name!r}: a graph name must not be empty; give one, "
                             f"e.g. {option} zoo")
    return name
