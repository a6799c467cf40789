"""Loaders: the OntoProbe JSON pair and any RDF file rdflib parses.

Both produce a `Source`: the typed `Ontology` plus the exact triples the store should
hold for it. RDF files keep every parsed triple (nothing is lost by going through the
model); the JSON pair is turned into triples through the model.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.errors import OntologyError
from kgprobe.ontology.formats import RdfInput, detect, prepare
from kgprobe.ontology.model import Triple
from kgprobe.ontology.source import Source

if TYPE_CHECKING:
    from kgprobe.ontology.from_triples import BuildOptions

__all__ = ["ONTOPROBE_NS", "Source", "build_ontology", "bundled_ontology_dir",
           "bundled_source", "load_ontoprobe", "load_rdf", "load_source", "malformed", "open_rdf",
           "ox_term", "parse_rdf"]

#: Triple syntaxes pyoxigraph bulk-loads into one graph; quad syntaxes (TriG, N-Quads, JSON-LD
#: with named graphs) would fill graphs of their own, and TriX/Hextuples need rdflib: those
#: are parsed into Python triples (their named graphs merged) as before.
_BULK_FORMATS = ("TURTLE", "N_TRIPLES", "N3", "RDF_XML")
#: Files from this size on are bulk-loaded; smaller ones are parsed before the store is opened,
#: as always (a malformed small file never touches the store; the fuzz tests run this path).
BULK_MIN_BYTES = 8 << 20


#: Names this module offers from the modules that build models, imported on first use: a
#: command that only detects a file's format (the CLI's parsers) imports no networkx.
_LAZY = {"build_ontology": "from_triples", "load_ontoprobe": "ontoprobe_json",
         "ONTOPROBE_NS": "ontoprobe_json"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"kgprobe.ontology.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundled_ontology_dir() -> Path:
    """The OntoProbe ontology shipped with kgprobe (see ontology/data/README.md)."""
    return Path(str(resources.files("kgprobe.ontology") / "data"))


@functools.lru_cache(maxsize=2)
def bundled_source(word: bool = False) -> Source:
    """The default ontology, loaded into the graph named 'ontoprobe' (`word`: labels worded
    for prompts, see `load_ontoprobe`, its proper names kept as `bundled_names.toml` lists
    them; off: as its files write them, which the paper protocol and the paper's sets read).

    Read once per process and shared: a premise-ablation run read it four times (0.8 s
    each), and a process that runs several studies (`kgprobe.run`, the test suite) every
    time. Callers read it and never change it; the files ship with the package."""
    from kgprobe.ontology.ontoprobe_json import load_ontoprobe

    return load_ontoprobe(bundled_ontology_dir(), name="ontoprobe", word=word,
                          names=bundled_names() if word else ())


def bundled_names() -> tuple[str, ...]:
    """The proper names the bundled ontology's labels write (`bundled_names.toml`)."""
    from kgprobe.ontology.data_files import bundled_data_file, read_toml

    path = bundled_data_file("bundled_names.toml")
    return tuple(read_toml(path, OntologyError, "name list", path.name)["names"])


def load_source(path: str | Path, fmt: str | None = None, *, lazy: bool = False,
                options: BuildOptions | None = None, allow_imports: bool = False) -> Source:
    """Load a directory with class.json + property.json, or an RDF/OWL/OBO file.

    `fmt` overrides the syntax the suffix names (`--format`). `lazy`: a file of at least
    `BULK_MIN_BYTES` is only detected here; the store bulk-loads it and builds the model from
    what it stored (`Source.rdf` set, `triples` and `ontology` None until then).
    `allow_imports` (--allow-imports): parsers may fetch what the file points to (JSON-LD
    remote or `file:` contexts, OWL/XML imports); by default nothing is fetched or read."""
    p = Path(path)
    if p.is_dir():
        from kgprobe.ontology.ontoprobe_json import load_ontoprobe

        return load_ontoprobe(p)
    if not p.exists():
        raise OntologyError(f"{p}: no such file or directory; give an RDF file or a directory "
                            "holding class.json and property.json")
    rdf = open_rdf(p, fmt, allow_imports=allow_imports)
    if lazy and rdf.ox_format in _BULK_FORMATS and p.stat().st_size >= BULK_MIN_BYTES:
        return Source(p.name.split(".")[0] if rdf.gz else p.stem, str(p), None, None, rdf=rdf,
                      options=options)
    source = load_rdf(p, fmt=fmt, rdf=rdf, options=options, allow_imports=allow_imports)
    if not source.triples:  # a 0-triple graph would load, and generate empty probe sets
        raise OntologyError(f"{p}: holds no RDF statements (an empty or comment-only file); "
                            "give a file with triples")
    return source


# --------------------------------------------------------------------------- RDF files


def open_rdf(path: Path, fmt: str | None = None, *, allow_imports: bool = False) -> RdfInput:
    """The file's syntax (--format, else suffix checked by a sniff), converted to RDF if it is
    OWL/XML, functional or Manchester syntax, or OBO."""
    return prepare(detect(path, fmt), allow_imports=allow_imports)


def _rdflib_term(node) -> str:
    from rdflib import BNode, Literal

    if isinstance(node, BNode):
        return f"_:{node}"
    if isinstance(node, Literal):  # N-Triples form (rdflib's n3() writes """…""" for newlines)
        import pyoxigraph as ox

        if node.language:
            return str(ox.Literal(str(node), language=node.language))
        return str(ox.Literal(str(node), datatype=ox.NamedNode(node.datatype)
                              if node.datatype else None))
    return str(node)


def rdflib_triples(path: Path, fmt: str, rdf: RdfInput | None = None) -> list[Triple]:
    """The file's triples as rdflib reads them, for what pyoxigraph does not parse (JSON-LD
    contexts, quads) and to name the line of an RDF/XML error pyoxigraph reports without one
    (`kg.bulk`); a syntax error is one `malformed` line."""
    import rdflib

    graph = rdflib.Dataset(default_union=True)  # quad formats (TriX) fill named graphs
    try:
        if rdf is not None and not rdf.plain:
            with rdf.open() as fh:
                graph.parse(fh, format=fmt)
        else:
            graph.parse(str(path), format=fmt)
    except Exception as err:  # rdflib raises many unrelated types for bad syntax
        text = " ".join(str(err).split())
        line = re.search(r"line (\d+)", text)
        line = line.group(1) if line else getattr(err, "getLineNumber", lambda: None)()
        raise malformed(path, line, text) from None
    return sorted({(_rdflib_term(s), _rdflib_term(p), _rdflib_term(o))
                   for s, p, o, _ in graph.quads((None, None, None, None))})


def malformed(path: Path, line, text: str) -> OntologyError:
    where = f" line {line}:" if line else ":"
    text = text if len(text) <= 200 else text[:200] + "…"
    return OntologyError(f"{path}:{where} malformed RDF ({text}); fix the file and load it again")


def too_large(path: Path, err: MemoryError) -> OntologyError:
    """pyoxigraph's parser refuses a term over 16 MiB with a MemoryError ("Reached the buffer
    maximal size"); a real out-of-memory is one too. Either way one line, nothing stored."""
    if "buffer maximal size" in str(err):
        return OntologyError(f"{path}: holds a term (a literal or an IRI) over 16 MiB, more "
                             "than the RDF parser accepts; shorten or remove it and load again")
    return OntologyError(f"{path}: not enough memory to parse it; load it on a machine with "
                         "more memory, or split it into smaller files")


def parse_rdf(path: Path, fmt: str | None = None, rdf: RdfInput | None = None, *,
              allow_imports: bool = False) -> list[Triple]:
    """Every distinct triple of an RDF file (named graphs of TriG/N-Quads are merged).

    pyoxigraph parses, rdflib only reads what pyoxigraph cannot: pyoxigraph read
    dbpedia-ontology.ttl (34,680 triples) in 0.06 s against rdflib's 1.31 s here, and
    reports line and column of syntax errors where rdflib often reports neither.
    """
    rdf = rdf or open_rdf(path, fmt, allow_imports=allow_imports)
    ox_format, rdflib_format = rdf.ox_format, rdf.rdflib_format
    if ox_format is None or (allow_imports and ox_format == "JSON_LD"):
        return rdflib_triples(path, rdflib_format, rdf)  # rdflib fetches JSON-LD contexts
    try:
        with rdf.quads() as quads:
            triples = {(ox_term(q.subject), q.predicate.value, ox_term(q.object)) for q in quads}
    except SyntaxError as err:
        if "LoadDocumentCallback" in str(err.msg):  # pyoxigraph fetches no context
            raise OntologyError(f"{path}: its JSON-LD @context is a URL or file, which kgprobe "
                                "does not fetch unless asked; inline the context, or pass "
                                "--allow-imports to let rdflib fetch it") from None
        if err.lineno is None and ox_format == "RDF_XML":  # no position: ask rdflib where
            rdflib_triples(path, rdflib_format, rdf)
        raise malformed(path, err.lineno, str(err.msg)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise OntologyError(f"{path}: cannot read ({err}); check the path and encoding") from None
    except MemoryError as err:
        raise too_large(path, err) from None
    return sorted(triples)


def ox_term(term) -> str:
    """A pyoxigraph term in the model's str convention (IRI bare, ``_:b``, N-Triples literal)."""
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term)


def load_rdf(path: str | Path, name: str | None = None, fmt: str | None = None,
             rdf: RdfInput | None = None, options: BuildOptions | None = None, *,
             allow_imports: bool = False) -> Source:
    """Load any RDF file and build the model from its triples (with `options`: --lang …)."""
    path = Path(path)
    rdf = rdf or open_rdf(path, fmt, allow_imports=allow_imports)
    triples = parse_rdf(path, fmt, rdf, allow_imports=allow_imports)
    stem = path.name.split(".")[0] if path.suffix.lower() == ".gz" else path.stem
    from kgprobe.ontology.from_triples import build_ontology

    onto = build_ontology(name or stem, triples, options)
    onto.warnings[:0] = rdf.warnings  # what reading the file mended or left out, by line
    return Source(onto.name, str(path), onto, triples)
