"""`kgprobe kg …`, `kgprobe reason` and `kgprobe generate …`: the knowledge graph and its probes.

Only light modules are imported here (pyoxigraph, the ontology model): these commands start at
once and never load torch or a language model.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from kgprobe.errors import KgprobeError, OntologyError
from kgprobe.kg.store import PREFIXES, KnowledgeGraph, QueryResult, default_store_path
from kgprobe.ontology.formats import SYNTAXES
from kgprobe.ontology.loaders import Source, bundled_source, load_source
from kgprobe.ontology.model import parse_literal
from kgprobe.reasoning.rdfs import RULES
from kgprobe.studies.options import comma_list

from .registry import command, warn


def store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="store directory (default: $KGPROBE_STORE, else .kgprobe/store)")


def writer_args(parser: argparse.ArgumentParser) -> None:
    """--store, and --wait: a writing command waits for another writer instead of stopping."""
    store_arg(parser)
    parser.add_argument("--wait", action="store_true", help="if another kgprobe process is "
                        "writing to the store, wait for it to finish (default: exit 2)")


def open_store(args: argparse.Namespace, *, write: bool = False) -> KnowledgeGraph:
    """Writers take the store's writer lock; readers open it read-only and run beside them."""
    return KnowledgeGraph(args.store or default_store_path(), create=False, read_only=not write,
                          wait=getattr(args, "wait", False))


# ------------------------------------------------------------------------------ kg


def parse_sources(paths: Sequence[str], default: bool, name: str | None,
                  fmt: str | None = None, lazy: bool = False) -> list[Source]:
    """Read every source before the store is opened: a bad file changes nothing. `lazy`:
    files are only detected (and converted) here; the store bulk-loads them and builds their
    model, and a syntax error there also leaves the store as it was."""
    if fmt is not None and len(paths) != 1:
        raise OntologyError(f"--format {fmt}: names the syntax of one file, but {len(paths)} "
                            "were given; load them one at a time")
    sources = [bundled_source()] if default else []
    sources += [load_source(p, fmt, lazy=lazy) for p in paths]
    if not sources:
        raise OntologyError("nothing to load; give SOURCE paths or --default")
    if name is not None:
        if len(sources) != 1:
            raise OntologyError(f"--name {name}: names one source, but {len(sources)} were given; "
                                "load them one at a time")
        sources[0].name = name
    print_warnings(sources)
    return sources


def print_warnings(sources: list[Source]) -> None:
    for src in sources:
        for w in src.ontology.warnings if src.ontology is not None else []:
            warn(f"{src.path}: {w}")


def load_sources(kg: KnowledgeGraph, paths: Sequence[str], default: bool,
                 name: str | None = None, replace: bool = False) -> list[Source]:
    """Parse every source first, then write them all in one transaction."""
    sources = parse_sources(paths, default, name)
    kg.add_sources(sources, replace=replace)
    return sources


@contextlib.contextmanager
def created_store(args: argparse.Namespace):
    """Open (or create) the store for writing; a store this command created is removed
    again if the command fails, so a failed first load leaves nothing behind."""
    kg = KnowledgeGraph(args.store or default_store_path(), create=True, wait=args.wait)
    try:
        yield kg
    except BaseException:
        if kg.created:
            kg.discard()
        raise
    finally:
        kg.close()


@command("kg load")
def cmd_kg_load(args: argparse.Namespace) -> int:
    sources = parse_sources(args.sources, args.default, args.name, args.format, lazy=True)
    with created_store(args) as kg:
        kg.add_sources(sources, replace=args.replace)
        print_warnings([s for s in sources if s.rdf is not None])  # models built by the store
        for src in sources:
            o = src.ontology
            print(f"loaded {src.path} into graph '{src.name}': {src.size} triples, "
                  f"{len(o.classes)} classes, {len(o.properties)} properties, "
                  f"{len(o.instances)} instances")
        if args.reason:
            print_reason(kg, RULES)
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


def _short(term: str | None) -> str:
    """Compact rendering for tables: prefixed names, literals as their text."""
    if term is None:
        return ""
    if term.startswith('"'):
        return parse_literal(term)[0]
    for prefix, ns in PREFIXES.items():
        if term.startswith(ns) and "/" not in term[len(ns):]:
            return f"{prefix}:{term[len(ns):]}"
    return term


def print_result(result: QueryResult, fmt: str, out=sys.stdout) -> None:
    if result.kind == "ask":
        value = "true" if result.boolean else "false"
        print(json.dumps({"boolean": result.boolean}) if fmt == "json" else value, file=out)
        return
    if fmt == "json":
        rows = [dict(zip(result.variables, row)) for row in result.rows]
        print(json.dumps(rows, ensure_ascii=False, indent=1), file=out)
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(result.variables)
        writer.writerows([[v or "" for v in row] for row in result.rows])
    else:
        cells = [[_short(v) for v in row] for row in result.rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(result.variables)]
        print("  ".join(h.ljust(w) for h, w in zip(result.variables, widths)), file=out)
        print("  ".join("-" * w for w in widths), file=out)
        for row in cells:
            print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip(), file=out)
        print(f"({len(cells)} row{'s' if len(cells) != 1 else ''})", file=out)


def read_query(text: str) -> str:
    if text.startswith("@"):
        path = Path(text[1:])
        if not path.is_file():
            raise KgprobeError(f"{path}: query file not found")
        return path.read_text(encoding="utf-8")
    return text


@command("kg query")
def cmd_kg_query(args: argparse.Namespace) -> int:
    with open_store(args) as kg:
        print_result(kg.query(read_query(args.query)), args.format)
    return 0


def print_stats(kg: KnowledgeGraph) -> None:
    stats = kg.stats()
    width = max([len("graph")] + [len(s.graph) for s in stats])
    print(f"{'graph'.ljust(width)}  {'triples':>8}  {'classes':>7}  {'properties':>10}  "
          f"{'instances':>9}")
    for s in stats:
        print(f"{s.graph.ljust(width)}  {s.triples:>8}  {s.classes:>7}  {s.properties:>10}  "
              f"{s.instances:>9}")
    print(f"{'(union)'.ljust(width)}  {kg.count():>8}")


@command("kg stats")
def cmd_kg_stats(args: argparse.Namespace) -> int:
    with open_store(args) as kg:
        kg.require_fresh()
        print_stats(kg)
    return 0


@command("kg export")
def cmd_kg_export(args: argparse.Namespace) -> int:
    with open_store(args) as kg:
        data = kg.export(args.format, args.out)
        if data is not None:
            sys.stdout.buffer.write(data)
        else:
            print(f"wrote {args.out}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ reason


def print_reason(kg: KnowledgeGraph, rules, provenance: Path | None = None, *,
                 owl: bool = False) -> None:
    from kgprobe.reasoning.materialize import materialize

    report = materialize(kg, rules, owl=owl)
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
        n = report.write_provenance(provenance)
        print(f"wrote {n} derivations to {provenance}")


@command("reason")
def cmd_reason(args: argparse.Namespace) -> int:
    from kgprobe.reasoning.materialize import clear

    with open_store(args, write=True) as kg:
        if args.clear:
            print(f"removed the inferred graph ({clear(kg)} triples)")
            return 0
        print_reason(kg, comma_list(args.rules), args.provenance, owl=args.owl)
    return 0


# ------------------------------------------------------------------------------ generate


@command("generate memorizing")
def cmd_generate_memorizing(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_json, write_jsonl
    from kgprobe.reasoning.memorizing import candidate_sets, generate_memorizing

    with open_store(args, write=args.reason) as kg:
        if args.reason and kg.inferred_state() == "stale":
            print_reason(kg, RULES)
        onto = kg.ontology()
    records = generate_memorizing(onto, seed=args.seed)
    out = Path(args.out)
    summary = {}
    for relation, recs in records.items():
        write_jsonl(out / f"{relation}.jsonl", (r.to_json() for r in recs))
        summary[relation] = {split: sum(r.split == split for r in recs)
                             for split in ("train", "dev", "test")}
        print(f"{relation:14s} {len(recs):>6} records  {summary[relation]}")
    write_json(out / "candidates.json", candidate_sets(onto))
    write_json(out / "summary.json", {"tasks": summary, "seed": args.seed})
    print(f"wrote {out}")
    return 0


@command("generate reasoning")
def cmd_generate_reasoning(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_json, write_jsonl
    from kgprobe.ontology.loaders import build_ontology
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.items import reasoning_items, rule_summary
    from kgprobe.reasoning.materialize import reasoning_base
    from kgprobe.reasoning.memorizing import candidate_sets
    from kgprobe.reasoning.rdfs import closure

    templates = load_templates(args.templates)
    with open_store(args) as kg:
        asserted, owl = reasoning_base(kg)
    triples = asserted | owl
    onto = build_ontology("store", triples)
    items = reasoning_items(onto, closure(triples, RULES), templates,
                            rules=comma_list(args.rules), pseudowords=not args.no_pseudowords,
                            asserted=asserted)
    out = Path(args.out)
    for rule, rule_items in items.items():
        write_jsonl(out / f"{rule}.jsonl", (i.to_json() for i in rule_items))
    summary = rule_summary(items)
    for rule, entry in summary.items():
        print(f"{rule:7s} {entry['items']:>6} items from {entry['derivations']:>7} derivations"
              f"{'  (' + entry['note'] + ')' if 'note' in entry else ''}")
    write_json(out / "candidates.json", candidate_sets(onto))
    write_json(out / "summary.json", {"rules": summary, "pseudowords": not args.no_pseudowords,
                                      "templates": templates.path})
    print(f"wrote {out}")
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
        print_result(kg.query(DEMO_QUERY), "table")
    return 0




# ------------------------------------------------------------------------------ parser


def add_parsers(sub) -> None:
    """`kg load|query|stats|export|tour`, `reason`, `generate memorizing|reasoning`."""
    kg = sub.add_parser("kg", help="the knowledge graph: load, query, stats, export, tour")
    kg_sub = kg.add_subparsers(dest="kg_command", required=True)
    p = kg_sub.add_parser("load", help="load ontology sources into the store")
    p.add_argument("sources", nargs="*", help="an RDF file, or a directory with class.json and "
                   "property.json")
    p.add_argument("--default", action="store_true", help="load the bundled OntoProbe ontology")
    p.add_argument("--name", default=None, help="graph name for the one source (default: the "
                   "file name without suffix)")
    p.add_argument("--replace", action="store_true",
                   help="let a source replace a graph that holds a different file")
    p.add_argument("--reason", action="store_true", help="materialize the RDFS closure afterwards")
    p.add_argument("--format", default=None, choices=list(SYNTAXES), help="the syntax of the one "
                   "SOURCE file (default: from its suffix, checked against its content; .gz is "
                   "read through gzip)")
    writer_args(p)
    p = kg_sub.add_parser("remove", help="remove a source graph (inferences become stale)")
    p.add_argument("name", help="the graph name, as `kg stats` shows it after urn:kgprobe:source:")
    writer_args(p)
    p = kg_sub.add_parser("query", help="run a SPARQL SELECT/ASK/CONSTRUCT over all graphs")
    p.add_argument("query", help="the query text, or @FILE")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    store_arg(p)
    p = kg_sub.add_parser("stats", help="triples, classes, properties, instances per graph")
    store_arg(p)
    p = kg_sub.add_parser("export", help="serialize the union graph")
    p.add_argument("--format", choices=["turtle", "ntriples"], default="turtle")
    p.add_argument("--out", type=Path, default=None, help="output file (default: stdout)")
    store_arg(p)
    p = kg_sub.add_parser("tour", help="build the graph from the bundled ontology and query it")
    writer_args(p)

    p = sub.add_parser("reason", help="materialize the RDFS closure into urn:kgprobe:inferred")
    p.add_argument("--rules", default=",".join(RULES),
                   help=f"comma-separated subset of {','.join(RULES)}")
    p.add_argument("--clear", action="store_true", help="remove the inferred graph instead")
    p.add_argument("--owl", action="store_true", help="also classify with HermiT (OWL 2; needs "
                   "Java): its named subsumptions and types join the inferred graph with "
                   "provenance owl:hermit and feed generation")
    p.add_argument("--provenance", type=Path, default=None,
                   help="write every one-step derivation (rule, conclusion, premises) as JSONL")
    writer_args(p)

    gen = sub.add_parser("generate", help="write probe sets from the knowledge graph")
    gen_sub = gen.add_subparsers(dest="generate_command", required=True)
    p = gen_sub.add_parser("memorizing", help="TP/SCO/SPO/DM/RG records, one JSONL per relation")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev/test split")
    p.add_argument("--reason", action="store_true", help="re-run `kgprobe reason` first if the "
                   "inferences are stale")
    writer_args(p)
    p = gen_sub.add_parser("reasoning", help="premise/hypothesis items, one JSONL per rule")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--rules", default=",".join(RULES))
    p.add_argument("--no-pseudowords", action="store_true",
                   help="write real labels instead of the [X]/[Y] slots (confound analysis)")
    p.add_argument("--templates", type=Path, default=None,
                   help="a template TOML file (default: the paper's templates)")
    store_arg(p)
