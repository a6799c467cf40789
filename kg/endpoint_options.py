"""`--endpoint URL` and its tuning options, shared by the `kg` commands and the studies.

They live in kg/ (not in the CLI) because studies register their own options and must never
import the layer above them.
"""

from __future__ import annotations

import argparse

from kgprobe.errors import KgprobeError


def endpoint_options(parser: argparse.ArgumentParser, *, required: bool = False,
                     timeout_help: str | None = None) -> None:
    """Add --endpoint, --timeout (each request, its whole answer included, or what
    `timeout_help` says), --retries, --max-answer and --page-size."""
    parser.add_argument("--endpoint", default=None, required=required, metavar="URL",
                        help="read from this SPARQL 1.1 query endpoint instead of the local store "
                             "(e.g. http://127.0.0.1:7878/query, https://dbpedia.org/sparql)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S",
                        help=timeout_help or "seconds per endpoint request, the whole answer "
                                             "included (default 30)")
    parser.add_argument("--retries", type=int, default=3,
                        help="further tries after a network error or 5xx answer, with "
                             "exponential backoff (default 3)")
    parser.add_argument("--max-answer", default="512M", metavar="SIZE",
                        help="the largest endpoint answer read (default 512M; 0: no limit); a "
                             "larger one exits 2 with one line")
    parser.add_argument("--page-size", type=int, default=None,
                        help="rows per LIMIT/OFFSET page of bulk reads (default: whole answers, "
                             "paged at the endpoint's own cap when it has one)")


def open_endpoint(args: argparse.Namespace, *, store_is_target: bool = False):
    """The SparqlEndpoint `--endpoint` names (checked: --store cannot be given with it, unless
    `store_is_target`: `kg pull` reads the endpoint into --store)."""
    from kgprobe.kg.endpoint import SparqlEndpoint
    from kgprobe.kg.sparql_client import SparqlClient

    if not store_is_target and getattr(args, "store", None) is not None:
        raise KgprobeError("--store and --endpoint both name a knowledge graph; give one")
    if (args.page_size is not None and args.page_size < 1) or args.retries < 0 or args.timeout <= 0:
        raise KgprobeError("--page-size must be ≥ 1, --retries ≥ 0 and --timeout > 0")
    from kgprobe.guard import parse_size

    cap = parse_size(str(getattr(args, "max_answer", "512M")), "--max-answer")
    client = SparqlClient(args.endpoint, timeout=args.timeout, retries=args.retries,
                          max_answer=cap if cap is not None else 1 << 62)
    return SparqlEndpoint(client, page_size=args.page_size)
