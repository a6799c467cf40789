"""The `kgprobe` command line.

User errors (`KgprobeError`) are caught here, once: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import KgprobeError, OntologyError
from ..kg.store import PREFIXES, KnowledgeGraph, QueryResult, default_store_path
from ..ontology.loaders import Source, bundled_source, load_source
from ..ontology.model import parse_literal
from ..reasoning.rdfs import RULES
from .options import apply_threads, threads_option

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}
#: The main job's model and size, chosen so `make demo` ends in about 15 minutes on 2 cores
#: (see README: the default model probes best on the memorization tasks).
DEFAULT_MODEL = "gemma3-270m"
DEMO_LIMIT = 3
DEMO_SOFT_EPOCHS = 5
#: Modules of `kgprobe.studies` that each provide `register_cli(study_subparsers)`.
STUDY_MODULES = ("premise_ablation", "copen", "sta")


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn
    return register


def _store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=None,
                        help="store directory (default: $KGPROBE_STORE, else .kgprobe/store)")


def open_store(args: argparse.Namespace, *, create: bool = False) -> KnowledgeGraph:
    return KnowledgeGraph(args.store or default_store_path(), create=create)


def rule_list(text: str) -> list[str]:
    return [r.strip() for r in text.split(",") if r.strip()]


def warn(message: str) -> None:
    print(f"kgprobe: warning: {message}", file=sys.stderr)


# ------------------------------------------------------------------------------ kg


def load_sources(kg: KnowledgeGraph, paths: Sequence[str], default: bool) -> list[Source]:
    """Parse every source first, then write them all in one transaction."""
    sources = [bundled_source()] if default else []
    sources += [load_source(p) for p in paths]
    if not sources:
        raise OntologyError("nothing to load; give SOURCE paths or --default")
    for src in sources:
        for w in src.ontology.warnings:
            warn(f"{src.path}: {w}")
    kg.add_sources(sources)
    return sources


@command("kg load")
def cmd_kg_load(args: argparse.Namespace) -> int:
    with open_store(args, create=True) as kg:
        for src in load_sources(kg, args.sources, args.default):
            o = src.ontology
            print(f"loaded {src.path} into graph '{src.name}': {len(src.triples)} triples, "
                  f"{len(o.classes)} classes, {len(o.properties)} properties, "
                  f"{len(o.instances)} instances")
        print(f"store {kg.path}: {kg.count()} triples")
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


@command("reason")
def cmd_reason(args: argparse.Namespace) -> int:
    from ..reasoning.materialize import clear, materialize

    with open_store(args) as kg:
        if args.clear:
            print(f"removed the inferred graph ({clear(kg)} triples)")
            return 0
        report = materialize(kg, rule_list(args.rules))
        print(f"reasoned over {report.asserted} asserted triples with {', '.join(report.rules)} "
              f"in {report.seconds:.2f} s")
        for rule in report.rules:
            print(f"  {rule:7s} {report.derived_by.get(rule, 0):>9} triples")
        print(f"inferred graph: {report.inferred} triples ({report.added} new)")
        if args.provenance:
            n = report.closure.write_jsonl(args.provenance)
            print(f"wrote {n} derivations to {args.provenance}")
    return 0


# ------------------------------------------------------------------------------ generate


@command("generate memorizing")
def cmd_generate_memorizing(args: argparse.Namespace) -> int:
    from ..atomic import write_json, write_jsonl
    from ..reasoning.memorizing import candidate_sets, generate_memorizing

    with open_store(args) as kg:
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
    from ..atomic import write_json, write_jsonl
    from ..ontology.loaders import build_ontology
    from ..ontology.verbalize import load_templates
    from ..reasoning.items import reasoning_items, rule_summary
    from ..reasoning.materialize import asserted_triples
    from ..reasoning.memorizing import candidate_sets
    from ..reasoning.rdfs import closure

    templates = load_templates(args.templates)
    with open_store(args) as kg:
        triples = asserted_triples(kg)
    onto = build_ontology("store", triples)
    items = reasoning_items(onto, closure(triples, RULES), templates,
                            rules=rule_list(args.rules), pseudowords=not args.no_pseudowords)
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


# ------------------------------------------------------------------------------ probe


@command("probe memorizing")
def cmd_probe_memorizing(args: argparse.Namespace) -> int:
    from .memorization import RELATIONS, format_table, run_memorization

    tasks = list(RELATIONS) if args.task == "all" else [args.task]
    rows = run_memorization(args.model, args.out, tasks=tasks, templates=args.template,
                            masks=args.masks, pooling=args.pooling, split=args.split,
                            limit=args.limit, seed=args.seed, probes=args.probes,
                            device=args.device, batch_size=args.batch_size)
    print(format_table(rows))
    print(f"wrote {args.out}/results.csv and predictions.jsonl")
    return 0


@command("probe multiple-choice")
def cmd_probe_multiple_choice(args: argparse.Namespace) -> int:
    from .multiple_choice import format_table, run_multiple_choice

    chat = {"auto": None, "on": True, "off": False}[args.chat]
    rows = run_multiple_choice(args.model, args.out, tasks=args.task, data=args.data,
                               limit=args.limit, instruction=args.instruction, chat=chat,
                               answer=args.answer, device=args.device, batch_size=args.batch_size)
    print(format_table(rows))
    print(f"wrote {args.out}/results.csv and predictions.jsonl")
    return 0


# ------------------------------------------------------------------------------ report


@command("report")
def cmd_report(args: argparse.Namespace) -> int:
    from .ablation_report import write_report

    print(f"wrote {write_report(args.dir)}")
    return 0


# ------------------------------------------------------------------------------ demo

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
    with open_store(args, create=True) as kg:
        load_sources(kg, [], default=True)
        print(f"built the knowledge graph in {kg.path} "
              f"({time.perf_counter() - start:.1f} s)\n")
        print_stats(kg)
        print(f"\nSPARQL: the superclasses of 'soccer player'\n{DEMO_QUERY}\n")
        print_result(kg.query(DEMO_QUERY), "table")
    return 0


@command("demo")
def cmd_demo(args: argparse.Namespace) -> int:
    """The main job: the premise-ablation study on the bundled ontology, default model."""
    from .ablation_report import SETTINGS, WORDS, grid, load_rows
    from .premise_ablation import AblationConfig, run_premise_ablation

    config = AblationConfig(args.model, limit=args.limit, templates=tuple(args.templates.split(",")),
                            soft_epochs=args.soft_epochs, seed=0)
    print(f"premise-ablation study: model {config.model}, {config.limit} items per rule, "
          f"{' and '.join(config.templates)} templates -> {args.out}", file=sys.stderr)
    run_premise_ablation(config, args.out)
    rows = load_rows(Path(args.out))
    for template in config.templates:
        values, _ = grid(rows, None, template)
        print(f"\nMRR (%), mean over the six rules, {template} templates")
        print(f"{'P1 / P2':18s}" + "".join(f"{WORDS[s]:>18s}" for s in SETTINGS))
        for i, p1 in enumerate(SETTINGS):
            print(f"{WORDS[p1]:18s}" + "".join(
                f"{'empty' if values[i][j] is None else f'{100 * values[i][j]:.1f}':>18s}"
                for j in range(3)))
    print(f"\nreport: {args.out}/report.md (figures: {args.out}/summary.png, "
          f"{args.out}/heatmap_rdfs*.png)")
    return 0


# ------------------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgprobe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    kg = sub.add_parser("kg", help="the knowledge graph: load, query, stats, export")
    kg_sub = kg.add_subparsers(dest="kg_command", required=True)
    p = kg_sub.add_parser("load", help="load ontology sources into the store")
    p.add_argument("sources", nargs="*", help="an RDF file, or a directory with class.json and "
                   "property.json")
    p.add_argument("--default", action="store_true", help="load the bundled OntoProbe ontology")
    _store_arg(p)
    p = kg_sub.add_parser("query", help="run a SPARQL SELECT/ASK/CONSTRUCT over all graphs")
    p.add_argument("query", help="the query text, or @FILE")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    _store_arg(p)
    p = kg_sub.add_parser("stats", help="triples, classes, properties, instances per graph")
    _store_arg(p)
    p = kg_sub.add_parser("export", help="serialize the union graph")
    p.add_argument("--format", choices=["turtle", "ntriples"], default="turtle")
    p.add_argument("--out", type=Path, default=None, help="output file (default: stdout)")
    _store_arg(p)

    p = sub.add_parser("reason", help="materialize the RDFS closure into urn:kgprobe:inferred")
    p.add_argument("--rules", default=",".join(RULES),
                   help=f"comma-separated subset of {','.join(RULES)}")
    p.add_argument("--clear", action="store_true", help="remove the inferred graph instead")
    p.add_argument("--provenance", type=Path, default=None,
                   help="write every one-step derivation (rule, conclusion, premises) as JSONL")
    _store_arg(p)

    gen = sub.add_parser("generate", help="write probe sets from the knowledge graph")
    gen_sub = gen.add_subparsers(dest="generate_command", required=True)
    p = gen_sub.add_parser("memorizing", help="TP/SCO/SPO/DM/RG records, one JSONL per relation")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev/test split")
    _store_arg(p)
    p = gen_sub.add_parser("reasoning", help="premise/hypothesis items, one JSONL per rule")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--rules", default=",".join(RULES))
    p.add_argument("--no-pseudowords", action="store_true",
                   help="write real labels instead of the [X]/[Y] slots (confound analysis)")
    p.add_argument("--templates", type=Path, default=None,
                   help="a template TOML file (default: the paper's templates)")
    _store_arg(p)

    probe = sub.add_parser("probe", help="probe a model")
    probe_sub = probe.add_subparsers(dest="probe_command", required=True)
    p = probe_sub.add_parser("memorizing", help="the memorization study (TP, SCO, SPO, DM, RG)")
    p.add_argument("--model", required=True,
                   help="a preset (smollm2-135m, gemma3-270m), HF id, local dir, .gguf file, "
                        "or a baseline: frequency, random")
    p.add_argument("--task", default="all",
                   help="type|subClassOf|subPropertyOf|domain|range (or TP|SCO|SPO|DM|RG) or all")
    p.add_argument("--template", default="all", help="manual template index, or all")
    p.add_argument("--masks", choices=["multi", "single"], default="multi",
                   help="masked LMs: one [MASK] per candidate token, or a single one")
    p.add_argument("--pooling", choices=["mean", "max", "first", "sum"], default=None,
                   help="pool token log-probabilities (default: mean for masked, sum for causal)")
    p.add_argument("--split", choices=["train", "dev", "test"], default="test")
    p.add_argument("--limit", type=int, default=None,
                   help="records per task (default: the paper's, 500 for TP and SCO, all others)")
    p.add_argument("--probes", type=Path, default=None,
                   help="a directory from `kgprobe generate memorizing` (default: the paper's sets)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=64)
    threads_option(p)
    p.add_argument("--out", required=True, type=Path)

    p = probe_sub.add_parser("multiple-choice", help="the paper's 20-option questions (§5), accuracy")
    p.add_argument("--model", required=True,
                   help="a preset, HF id, local dir or .gguf file (causal for --answer letter)")
    p.add_argument("--task", default="all",
                   help="all, memorizing, reasoning, or a comma list: type…range (TP…RG), "
                        "rdfs2…rdfs11, or one file such as rdfs9-12")
    p.add_argument("--data", type=Path, default=None,
                   help="a directory with memorizing/ and reasoning/ question files "
                        "(default: the paper's, bundled)")
    p.add_argument("--limit", type=int, default=None, help="questions per file (default: all)")
    p.add_argument("--instruction", default=None,
                   help="text after each question (default: 'Answer with the letter of the "
                        "correct option.'; '' for none)")
    p.add_argument("--answer", choices=["letter", "text"], default="letter",
                   help="letter: the paper's protocol, the option letter as the next token (causal "
                        "models); text: each option's text in an 'Answer: [MASK]' slot after the "
                        "question without its option list (any model)")
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the question in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=4)
    threads_option(p)
    p.add_argument("--out", required=True, type=Path)

    study = sub.add_parser("study", help="run a study: premise-ablation, copen, sta")
    study_sub = study.add_subparsers(dest="study_command", required=True)
    for module in STUDY_MODULES:
        try:
            mod = importlib.import_module(f"kgprobe.studies.{module}")
        except ModuleNotFoundError as err:
            if err.name != f"kgprobe.studies.{module}":
                raise
            continue
        # Each study module adds its own `study NAME` parser with set_defaults(func=...).
        mod.register_cli(study_sub)

    p = sub.add_parser("report", help="rebuild report.md and figures of a premise-ablation run")
    p.add_argument("dir", type=Path)

    p = kg_sub.add_parser("tour", help="build the graph from the bundled ontology and query it")
    _store_arg(p)

    p = sub.add_parser("demo", help="the main job: the premise-ablation study, default model")
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--limit", type=int, default=DEMO_LIMIT, help="items per rule")
    p.add_argument("--soft-epochs", type=int, default=DEMO_SOFT_EPOCHS)
    p.add_argument("--templates", default="manual",
                   help="manual (default: soft training takes about an hour on 2 cores), "
                        "or manual,soft")
    threads_option(p)
    p.add_argument("--out", type=Path, default=Path("out") / "premise-ablation")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sub_name = (getattr(args, "kg_command", None) or getattr(args, "generate_command", None)
                or getattr(args, "probe_command", None))
    name = f"{args.command} {sub_name}" if sub_name else args.command
    handler = getattr(args, "func", None) or COMMANDS[name]
    try:
        apply_threads(args)
        return handler(args)
    except KgprobeError as err:
        print(f"kgprobe: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgprobe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
