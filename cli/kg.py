"""`kgprobe kg …` and `kgprobe reason`: the knowledge graph (`generate.py` writes its probes).

Only light modules are imported here (pyoxigraph, the ontology model): these commands start at
once and never load torch or a language model.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from kgprobe.errors import KgprobeError, OntologyError
from kgprobe.kg.formats import print_result
from kgprobe.kg.store import KnowledgeGraph, default_store_path, graph_iri
from kgprobe.ontology.formats import SYNTAXES
from kgprobe.ontology.loaders import Source, bundled_source, load_source
from kgprobe.ontology.skos import MODES as SKOS_MODES
from kgprobe.reasoning.rule_names import RULES
from kgprobe.studies.ontology_source import model_args, model_options
from kgprobe.studies.options import comma_list
from kgprobe.terminal import printable

from .kg_options import (
    check_graph_name,
    max_inferred_arg,
    memory_arg,
    open_reader,
    open_store,
    reader_args,
    writer_args,
)
from .registry import command, warn

if TYPE_CHECKING:
    from kgprobe.ontology.from_triples import BuildOptions


# ------------------------------------------------------------------------------ kg


def parse_sources(paths: Sequence[str], default: bool, name: str | None,
                  options: BuildOptions | None = None, fmt: str | None = None,
                  lazy: bool = False, allow_imports: bool = False) -> list[Source]:
    """Read every source before the store is opened: a bad file changes nothing. `lazy`:
    files are only detected (and converted) here; the store bulk-loads them and builds their
    model, and a syntax error there also leaves the store as it was."""
    if fmt is not None and len(paths) != 1:
        raise OntologyError(f"--format {fmt}: names the syntax of one file, but {len(paths)} "
                            "were given; load them one at a time")
    sources = [bundled_source()] if default else []
    for path in paths:
        # The label options change the model the summary counts (bulk-loaded files: the
        # store builds theirs with the defaults); the stored triples are the same.
        sources.append(load_source(path, fmt, lazy=lazy, options=options,
                                   allow_imports=allow_imports))
    if not sources:
        raise OntologyError("nothing to load; give SOURCE paths or --default")
    if name is not None:
        check_graph_name(name)
        if len(sources) != 1:
            raise OntologyError(f"--name {name}: names one source, but {len(sources)} were given; "
                                "load them one at a time")
        sources[0].name = name
    print_warnings(sources)
    return sources


def print_warnings(sources: list[Source]) -> None:
    for src in sources:  # a bulk-loaded file's (no model yet) once the store has built it
        for w in [*(src.rdf.warnings if src.rdf else ()), *src.ontology.warnings] if src.ontology else []:
            warn(f"{src.path}: {w}")
        if src.ontology is not None and src.ontology.excluded:
            warn(f"{src.path}: `kgprobe generate` lists the {len(src.ontology.excluded)} "
                 "excluded terms in excluded.tsv beside summary.json")


def load_sources(kg: KnowledgeGraph, paths: Sequence[str], default: bool,
                 name: str | None = None, replace: bool = False) -> list[Source]:
    """Parse every source first, then write them all in one transaction."""
    sources = parse_sources(paths, default, name)
    kg.add_sources(sources, replace=replace)
    return sources


@contextlib.contextmanager
def created_store(args: argparse.Namespace):
    """Open (or create) the store for writing; a store this command created is removed
    again if the command fails before its first commit, so a failed first load leaves
    nothing behind. After the commit the store is the user's: a failure later (a closed
    pipe while printing, Ctrl-C) leaves it in place."""
    kg = KnowledgeGraph(args.store or default_store_path(), create=True, wait=args.wait)
    try:
        yield kg
    except BaseException:
        if kg.created and not kg.committed:
            kg.discard()
        else:
            kg.close(quiet=True)
        raise
    kg.close()


@command("kg load")
def cmd_kg_load(args: argparse.Namespace) -> int:
    sources = parse_sources(args.sources, args.default, args.name, model_options(args),
                            args.format, lazy=True, allow_imports=args.allow_imports)
    with created_store(args) as kg:
        kg.add_sources(sources, replace=args.replace)
        print_warnings([s for s in sources if s.rdf is not None])  # models built by the store
        for src in sources:
            o = src.ontology
            print(f"loaded {src.path} into graph '{src.name}': {src.size} triples, "
                  f"{len(o.classes)} classes, {len(o.properties)} properties, "
                  f"{len(o.instances)} instances")
        if args.reason:
            print_reason(kg, skos=args.skos, max_inferred=args.max_inferred)
        elif kg.inferred_state() == "stale":
            print("inferences are now stale; run `kgprobe reason` before generating probes")
        print(f"store {kg.path}: {kg.count()} triples")
    return 0


@command("kg remove")
def cmd_kg_remove(args: argparse.Namespace) -> int:
    with open_store(args, write=True) as kg:
        record = kg.remove_source(args.name)
        print(f"removed graph '{args.name}' ({record.path})")
        if kg.inferred_state() == "stale":
            print("inferences are now stale; run `kgprobe reason` before generating probes")
    return 0


def read_query(text: str) -> str:
    if text.startswith("@"):
        path = Path(text[1:])
        if not path.is_file():
            raise KgprobeError(f"{path}: query file not found")
        return path.read_text(encoding="utf-8")
    return text


@command("kg query")
def cmd_kg_query(args: argparse.Namespace) -> int:
    """Table for people; otherwise the W3C format, written by pyoxigraph's serializers.
    SERVICE clauses are refused unless --allow-federation (`kg/sparql_guard.py`)."""
    from kgprobe.kg.sparql_guard import refuse_federation

    sparql = read_query(args.query)
    refuse_federation(sparql, allow=args.allow_federation)
    if getattr(args, "endpoint", None):  # each request is bounded by --timeout already
        answer_query(args, sparql)
        return 0
    # pyoxigraph cannot cancel a query: it runs in a child that is killed at --timeout
    from kgprobe.deadline import run_with_deadline

    run_with_deadline(lambda: answer_query(args, sparql), args.timeout,
                      f"the query ran past --timeout {args.timeout:g} s and was stopped; narrow "
                      "it (a LIMIT, more specific patterns) or raise --timeout")
    return 0


def answer_query(args: argparse.Namespace, sparql: str) -> None:
    with open_reader(args) as kg:
        if args.format == "table":
            print_result(kg.query(sparql))
            return
        from kgprobe.kg.formats import write_answer

        sys.stdout.flush()
        write_answer(kg.solutions(sparql), args.format, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def print_stats(kg: KnowledgeGraph) -> None:
    stats = kg.stats()
    names = {s.graph: printable(s.graph) for s in stats}  # an endpoint's names are its own
    width = max([len("graph")] + [len(n) for n in names.values()])
    print(f"{'graph'.ljust(width)}  {'triples':>8}  {'classes':>7}  {'properties':>10}  "
          f"{'instances':>9}")
    for s in stats:
        print(f"{names[s.graph].ljust(width)}  {s.triples:>8}  {s.classes:>7}  {s.properties:>10}  "
              f"{s.instances:>9}")
    print(f"{'(union)'.ljust(width)}  {kg.count():>8}")


@command("kg stats")
def cmd_kg_stats(args: argparse.Namespace) -> int:
    with open_reader(args) as kg:
        kg.require_fresh()
        print_stats(kg)
    return 0


@command("kg export")
def cmd_kg_export(args: argparse.Namespace) -> int:
    """The union graph, or one named graph (`--graph`: an IRI or a source's name)."""
    from kgprobe.atomic import atomic_path
    from kgprobe.kg.formats import write_graph

    with open_reader(args) as kg:
        graph = None
        if args.graph is not None:
            graph = args.graph if ":" in args.graph else graph_iri(args.graph)
            if graph not in kg.graphs():
                raise KgprobeError(f"--graph {args.graph}: no such graph; `kgprobe kg stats` "
                                   f"lists them ({', '.join(kg.graphs()) or 'none'})")
        where = f"GRAPH <{graph}> {{ ?s ?p ?o }}" if graph else "?s ?p ?o"
        triples = kg.solutions(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {where} }}")
        if args.out is None:
            sys.stdout.flush()
            write_graph(triples, args.format, sys.stdout.buffer, graph)
            sys.stdout.buffer.flush()
            return 0
        with atomic_path(args.out) as tmp:
            write_graph(triples, args.format, Path(tmp), graph)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ reason


def provenance_size(text: str) -> int | None:
    """`--max-provenance`: a size as `--max-memory` reads it; None (0, off): no limit."""
    from kgprobe.guard import parse_size

    return parse_size(text, "--max-provenance")


def print_reason(kg: KnowledgeGraph, rules=None, provenance: Path | None = None, *,
                 owl: bool = False, ignore_imports: bool = False,
                 max_provenance: int | None = None, skos: str = "auto",
                 owl_timeout: float | None = None, max_inferred: int | None = None) -> None:
    """Reason and say what was derived. `rules=None` (the `--reason` flags): as the store was
    last reasoned (its rules, HermiT, its `--skos`), else every RDFS rule and `skos`.
    `provenance` is written after the inferences are stored, at most `max_provenance` bytes;
    `max_inferred`: `--max-inferred` (None: the default tied to the input, 0: no limit)."""
    from kgprobe.reasoning.materialize import materialize, reason_again

    report = reason_again(kg, skos=skos, max_inferred=max_inferred) if rules is None else \
        materialize(kg, rules, owl=owl, ignore_imports=ignore_imports, skos=skos,
                    owl_timeout=owl_timeout, max_inferred=max_inferred)
    for line in report.warnings:
        warn(line)
    print(f"reasoned over {report.asserted} asserted triples with {', '.join(report.rules)} "
          f"in {report.seconds:.2f} s")
    for rule in report.rules:
        print(f"  {rule:7s} {report.derived_by.get(rule, 0):>9} triples")
    print(f"inferred graph: {report.inferred} triples ({report.added} new); "
          f"{report.held_back} generalized triples held back (not legal RDF)")
    if report.unsatisfiable:
        warn(f"HermiT: {len(report.unsatisfiable)} unsatisfiable class(es) (equivalent to "
             f"owl:Nothing), not stated: {', '.join(report.unsatisfiable[:5])}"
             f"{' …' if len(report.unsatisfiable) > 5 else ''}")
    if provenance:
        n = report.write_provenance(provenance, max_provenance)
        print(f"wrote {n} derivations to {provenance}")


@command("reason")
def cmd_reason(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.materialize import clear

    with open_store(args, write=True) as kg:
        if args.clear:
            print(f"removed the inferred graph ({clear(kg)} triples)")
            return 0
        print_reason(kg, comma_list(args.rules), args.provenance, owl=args.owl, skos=args.skos,
                     ignore_imports=args.ignore_imports, max_provenance=args.max_provenance,
                     owl_timeout=args.timeout, max_inferred=args.max_inferred)
    return 0


#: The superclass chain of a class, specific → general: an ancestor's depth is the number
#: of distinct classes on the way up to it.
DEMO_QUERY = """SELECT DISTINCT ?ancestor ?label ?depth WHERE {
  { SELECT ?ancestor (COUNT(DISTINCT ?mid) AS ?depth) WHERE {
      ?class rdfs:label "soccer player"@en ;
             rdfs:subClassOf+ ?mid .
      ?mid rdfs:subClassOf* ?ancestor .
    } GROUP BY ?ancestor }
  ?ancestor rdfs:label ?label .
  FILTER(lang(?label) = "en")
} ORDER BY ?depth"""


@command("kg tour")
def cmd_kg_tour(args: argparse.Namespace) -> int:
    """Build the knowledge graph from the bundled ontology and look at it."""
    start = time.perf_counter()
    with created_store(args) as kg:
        load_sources(kg, [], default=True, replace=True)
        print(f"built the knowledge graph in {kg.path} "
              f"({time.perf_counter() - start:.1f} s)\n")
        print_stats(kg)
        print(f"\nSPARQL: the superclasses of 'soccer player'\n{DEMO_QUERY}\n")
        print_result(kg.query(DEMO_QUERY))
    return 0


# ------------------------------------------------------------------------------ parser


def add_parsers(sub) -> None:
    """`kg load|query|stats|export|tour`, `reason` (`generate …` is in `generate.py`); returns
    the `kg` sub-parsers so `kg_remote` adds `serve` and `pull` beside them."""
    kg = sub.add_parser("kg", help="the knowledge graph: load, query, stats, export, tour, "
                        "serve, pull, check")
    kg_sub = kg.add_subparsers(dest="kg_command", required=True)
    p = kg_sub.add_parser("load", help="load ontology sources into the store")
    p.add_argument("sources", nargs="*", help="an RDF file, or a directory with class.json and "
                   "property.json")
    p.add_argument("--default", action="store_true", help="load the bundled OntoProbe ontology")
    p.add_argument("--name", default=None, help="graph name for the one source (default: the "
                   "file name without suffix)")
    p.add_argument("--replace", action="store_true",
                   help="let a source replace a graph that holds a different file")
    p.add_argument("--reason", action="store_true", help="reason afterwards, as `kgprobe reason` "
                   "last ran on this store (its --rules and --owl), else with every RDFS rule")
    max_inferred_arg(p)
    model_args(p)
    p.add_argument("--allow-imports", action="store_true", help="let parsers fetch what a file "
                   "points to: JSON-LD remote or file: @context, OWL/XML imports (default: "
                   "nothing is fetched or read)")
    p.add_argument("--format", default=None, choices=list(SYNTAXES), help="the syntax of the one "
                   "SOURCE file (default: from its suffix, checked against its content; .gz is "
                   "read through gzip)")
    writer_args(p)
    memory_arg(p)
    p = kg_sub.add_parser("remove", help="remove a source graph (inferences become stale)")
    p.add_argument("name", help="the graph name, as `kg stats` shows it after urn:kgprobe:source:")
    writer_args(p)
    memory_arg(p)
    p = kg_sub.add_parser("query", help="run a SPARQL SELECT/ASK/CONSTRUCT over all graphs")
    p.add_argument("query", help="the query text, or @FILE")
    p.add_argument("--format", default="table",
                   choices=["table", "json", "csv", "tsv", "xml", "turtle", "ntriples", "nquads",
                            "jsonld"],
                   help="table (people); SELECT/ASK: json, csv, tsv, xml (W3C SPARQL results); "
                        "CONSTRUCT/DESCRIBE: turtle, ntriples, nquads, jsonld")
    p.add_argument("--allow-federation", action="store_true", help="let SERVICE clauses send "
                   "requests to other servers (default: such a query is refused)")
    # the one --timeout bounds a local query as a whole, too
    reader_args(p, timeout_help="seconds the query may take, its output included (default 30); "
                                "with --endpoint, each request")
    memory_arg(p)
    p = kg_sub.add_parser("stats", help="triples, classes, properties, instances per graph")
    reader_args(p)
    memory_arg(p)
    p = kg_sub.add_parser("export", help="serialize the union graph, or one named graph")
    p.add_argument("--format", choices=["turtle", "ntriples", "nquads", "jsonld"], default="turtle",
                   help="the RDF syntax to write")
    p.add_argument("--graph", default=None, help="only this named graph (its IRI, or a source "
                   "name as `kg stats` shows it after urn:kgprobe:source:)")
    p.add_argument("--out", type=Path, default=None, help="output file (default: stdout)")
    reader_args(p)
    memory_arg(p)
    p = kg_sub.add_parser("tour", help="build the graph from the bundled ontology and query it")
    writer_args(p)
    memory_arg(p)

    p = sub.add_parser("reason", help="materialize the RDFS closure into urn:kgprobe:inferred")
    p.add_argument("--rules", default=",".join(RULES),
                   help=f"comma-separated subset of {','.join(RULES)}")
    p.add_argument("--clear", action="store_true", help="remove the inferred graph instead")
    p.add_argument("--skos", choices=SKOS_MODES, default="auto", help="SKOS thesauri: store "
                   "skos:broader as rdfs:subClassOf as `generate --skos` reads it")
    p.add_argument("--owl", action="store_true", help="also classify with HermiT (OWL 2; needs "
                   "Java): its named subsumptions and types join the inferred graph with "
                   "provenance owl:hermit and feed generation")
    p.add_argument("--ignore-imports", action="store_true", help="with --owl: classify without "
                   "the ontologies owl:imports names that are not loaded (default: exit 2 "
                   "naming them)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="with --owl: stop HermiT after S seconds (default 600), exit 2 with the "
                        "store as it was (progress is on stderr every 10 s)")
    p.add_argument("--provenance", type=Path, default=None,
                   help="write every one-step derivation (rule, conclusion, premises) as JSONL")
    p.add_argument("--max-provenance", type=provenance_size, default="1G", metavar="SIZE",
                   help="stop with one line (exit 2) and no file when --provenance passes SIZE "
                        "(e.g. 1G, 512M; 0: no limit; derivations grow with a chain's depth "
                        "cubed)")
    max_inferred_arg(p)
    writer_args(p)
    memory_arg(p)
    return kg_sub
