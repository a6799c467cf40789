"""`kgprobe kg serve` and `kgprobe kg pull`: the store as an endpoint, an endpoint into the store."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.kg.endpoint_options import endpoint_options, open_endpoint
from kgprobe.kg.store import default_store_path, graph_iri

from .kg import created_store
from .kg_options import check_graph_name, writer_args
from .registry import command


@command("kg serve")
def cmd_kg_serve(args: argparse.Namespace) -> int:
    from kgprobe.errors import KgprobeError
    from kgprobe.kg.integrity import require_openable
    from kgprobe.kg.serve import ServeOptions, serve

    if args.read_only and args.allow_updates:
        raise KgprobeError("kg serve: --read-only and --allow-updates contradict each other; "
                           "give one (read-only is the default)")
    # the Oxigraph server, like any writer, would start an empty store over a damaged one
    require_openable(Path(args.store or default_store_path()))
    opts = ServeOptions(Path(args.store or default_store_path()), bind=args.bind,
                        allow_updates=args.allow_updates, allow_federation=args.allow_federation,
                        wait=args.wait, timeout_s=args.query_timeout,
                        request_timeout_s=args.request_timeout,
                        max_connections=args.max_connections)
    return serve(opts, announce=lambda line: print(line, flush=True))


@command("kg pull")
def cmd_kg_pull(args: argparse.Namespace) -> int:
    from kgprobe.kg.pull import Puller, PullOptions, provenance
    from kgprobe.ontology.source import Source

    check_graph_name(args.name)
    opts = PullOptions(instances=args.instances, seed=args.seed, namespace=args.namespace,
                       lang=args.lang, pool=args.pool)
    with open_endpoint(args, store_is_target=True) as endpoint:
        report = Puller(endpoint, opts).run()
    # the store keeps triples only: no model is needed to write them
    source = Source(args.name, args.endpoint, None, report.triples)
    with created_store(args) as kg:
        kg.add_sources([source], replace=True,
                       provenance={graph_iri(args.name): provenance(args.endpoint, opts, report)})
        print(f"pulled {report.classes} classes ({report.subclass_edges} subclass edges), "
              f"{report.instances} instances, {report.properties} properties from {args.endpoint} "
              f"into graph '{args.name}' ({len(report.triples)} triples, {len(report.queries)} "
              "queries recorded in urn:kgprobe:meta)")
        if kg.inferred_state() == "stale":
            print("inferences are now stale; run `kgprobe reason` before generating probes")
        print(f"store {kg.path}: {kg.count()} triples")
    return 0


def add_parsers(kg_sub) -> None:
    """`kg serve` and `kg pull`, beside the other `kg` commands."""
    p = kg_sub.add_parser("serve", help="serve the store as a SPARQL 1.1 endpoint (Oxigraph "
                          "server; read-only unless --allow-updates); Ctrl-C stops")
    p.add_argument("--bind", default="127.0.0.1:7878", help="host:port (default 127.0.0.1:7878)")
    p.add_argument("--read-only", action="store_true",
                   help="refuse SPARQL updates (the default; kept for scripts that say so)")
    p.add_argument("--allow-updates", action="store_true",
                   help="accept SPARQL updates and Graph Store writes that carry the bearer "
                        "token printed at start; they make the inferences stale")
    p.add_argument("--allow-federation", action="store_true",
                   help="let queries and updates reach other hosts (SERVICE, LOAD); refused "
                        "by default")
    p.add_argument("--query-timeout", type=float, default=30.0, metavar="S",
                   help="seconds each request has for its whole answer (default 30); a query "
                        "past it is answered 503 and stopped by restarting the server")
    p.add_argument("--request-timeout", type=float, default=60.0, metavar="S",
                   help="seconds a client has to send its whole request, headers and body "
                        "(default 60); a slower one is disconnected")
    p.add_argument("--max-connections", type=int, default=64, metavar="N",
                   help="connections served at once (default 64); one more is answered 503")
    writer_args(p)
    p = kg_sub.add_parser("pull", help="build an ontology from a SPARQL endpoint as the OntoProbe "
                          "paper did from DBpedia (§2.1) into a named graph")
    endpoint_options(p, required=True)
    p.add_argument("--name", default="pull", help="graph name (default: pull); replaced if present")
    p.add_argument("--instances", type=int, default=20, help="instances sampled per class (default "
                   "20, as the paper)")
    p.add_argument("--seed", type=int, default=0, help="seed of the instance sample")
    p.add_argument("--pool", type=int, default=1000, help="instances per class (in IRI order) the "
                   "sample is drawn from (default 1000)")
    p.add_argument("--namespace", default=None, help="keep only classes and properties under this "
                   "IRI prefix (e.g. http://dbpedia.org/ontology/)")
    p.add_argument("--lang", default="en", help="label language (default en)")
    writer_args(p)
