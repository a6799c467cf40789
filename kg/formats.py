"""Query answers and graphs in the W3C formats, written by pyoxigraph's own serializers.

SELECT/ASK answers: SPARQL 1.1 Query Results JSON, CSV and TSV (CSV gives a literal's lexical
form only, as the spec says), and SPARQL Query Results XML.  CONSTRUCT/DESCRIBE answers and
exported graphs: Turtle, N-Triples, N-Quads, JSON-LD.  Hand-written serializers are where
escaping bugs live (the old `--format csv` quoted N-Triples literals again); Oxigraph's follow the
specs and are tested against rdflib's independent parsers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO, Iterable

import pyoxigraph as ox
from kgprobe.errors import KgprobeError
from kgprobe.kg.results import QueryResult
from kgprobe.kg.store import PREFIXES
from kgprobe.ontology.model import parse_literal
from kgprobe.terminal import printable

RESULT_FORMATS = {"json": ox.QueryResultsFormat.JSON, "csv": ox.QueryResultsFormat.CSV,
                  "tsv": ox.QueryResultsFormat.TSV, "xml": ox.QueryResultsFormat.XML}
GRAPH_FORMATS = {"turtle": ox.RdfFormat.TURTLE, "ntriples": ox.RdfFormat.N_TRIPLES,
                 "nquads": ox.RdfFormat.N_QUADS, "jsonld": ox.RdfFormat.JSON_LD}


class FormatError(KgprobeError):
    """The requested format does not fit the query's answer."""


def is_graph_answer(answer) -> bool:
    """CONSTRUCT/DESCRIBE answers (local QueryTriples or a remote endpoint's triple list)."""
    return not isinstance(answer, (ox.QuerySolutions, ox.QueryBoolean))


def write_answer(answer, fmt: str, out: BinaryIO) -> None:
    """Write a pyoxigraph answer (solutions, boolean, or triples) in `fmt`."""
    if is_graph_answer(answer):
        if fmt not in GRAPH_FORMATS:
            raise FormatError(f"--format {fmt}: a CONSTRUCT/DESCRIBE answer is RDF; use "
                              f"--format {'|'.join(GRAPH_FORMATS)} (or table)")
        write_graph(answer, fmt, out)
        return
    if fmt not in RESULT_FORMATS:
        raise FormatError(f"--format {fmt}: a SELECT/ASK answer is a results table; use "
                          f"--format {'|'.join(RESULT_FORMATS)} (or table)")
    answer.serialize(out, RESULT_FORMATS[fmt])


def write_graph(triples: Iterable[ox.Triple], fmt: str, out: BinaryIO | str | Path,
                graph: str | None = None) -> None:
    """Serialize triples; dataset formats (N-Quads, JSON-LD) place them in `graph` (an IRI)
    or the default graph, so `kg export --graph G --format nquads` keeps the graph's name."""
    rdf_format = GRAPH_FORMATS[fmt]
    if rdf_format.supports_datasets:
        name = ox.NamedNode(graph) if graph else ox.DefaultGraph()
        items = (ox.Quad(t.subject, t.predicate, t.object, name) for t in triples)
    else:
        items = triples  # streamed: 500k triples 1.9 s where a list took 3.0 s and +83 MB
    target = str(out) if isinstance(out, Path) else out
    prefixes = PREFIXES if fmt == "turtle" else None
    ox.serialize(items, target, rdf_format, prefixes=prefixes)


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


def print_result(result: QueryResult, out=sys.stdout) -> None:
    """The answer as a table for people (prefixed names, literals as their text; control
    characters escaped: a label must not drive the terminal)."""
    if result.kind == "ask":
        print("true" if result.boolean else "false", file=out)
        return
    cells = [[printable(_short(v)) for v in row] for row in result.rows]
    names = [printable(h) for h in result.variables]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(names)]
    print("  ".join(h.ljust(w) for h, w in zip(names, widths)), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip(), file=out)
    print(f"({len(cells)} row{'s' if len(cells) != 1 else ''})", file=out)
