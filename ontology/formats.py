"""Which syntax a source file is in, and turning the ones pyoxigraph cannot read into RDF.

Detection: `--format` if given, else the file suffix (``.gz`` is stripped and the file read
through gzip), checked against a sniff of the first kilobytes: a Turtle file named ``.owl`` or
an OWL/XML file named ``.ttl`` fails with one line naming the syntax it looks like and the
``--format`` that loads it, instead of "malformed RDF".

Conversion (OWL syntaxes that are not RDF, and OBO) happens before the store is touched, to
RDF bytes pyoxigraph then parses like any file:

* OWL/XML: owlready2's own parser (no Java), saved as N-Triples;
* OWL functional and Manchester syntax: the OWL API inside the HermiT jar owlready2 ships,
  through owlready2's `Save` class (needs Java), saved as RDF/XML;
* OBO 1.4: `fastobo` and its OBO→OWL mapping, as RDF/XML; lines of released files that
  fastobo refuses are mended or left out with a warning (`ontology/obo.py`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kgprobe.errors import OntologyError

#: syntax name → (pyoxigraph RdfFormat name or None, rdflib format name or None, label)
SYNTAXES = {
    "turtle": ("TURTLE", "turtle", "Turtle"), "ntriples": ("N_TRIPLES", "nt", "N-Triples"),
    "n3": ("N3", "n3", "N3"), "rdfxml": ("RDF_XML", "xml", "RDF/XML"),
    "jsonld": ("JSON_LD", "json-ld", "JSON-LD"), "trig": ("TRIG", "trig", "TriG"),
    "nquads": ("N_QUADS", "nquads", "N-Quads"), "trix": (None, "trix", "TriX"),
    "hext": (None, "hext", "Hextuples"), "owlxml": (None, None, "OWL/XML"),
    "functional": (None, None, "OWL functional syntax"),
    "manchester": (None, None, "OWL Manchester syntax"), "obo": (None, None, "OBO"),
}
SUFFIXES = {
    ".ttl": "turtle", ".turtle": "turtle", ".nt": "ntriples", ".ntriples": "ntriples",
    ".n3": "n3", ".owl": "rdfxml", ".rdf": "rdfxml", ".xml": "rdfxml", ".jsonld": "jsonld",
    ".json-ld": "jsonld", ".trig": "trig", ".nq": "nquads", ".trix": "trix", ".hext": "hext",
    ".owx": "owlxml", ".ofn": "functional", ".omn": "manchester", ".obo": "obo",
}
#: Syntaxes one parser reads (N-Triples is Turtle; a sniff cannot tell them apart).
_FAMILY = {"ntriples": "turtle", "n3": "turtle", "trig": "turtle", "nquads": "turtle"}


@dataclass(frozen=True)
class RdfInput:
    """A file to parse: its syntax, whether it is gzipped, and converted RDF if it needed it."""

    path: Path
    syntax: str
    gz: bool = False
    data: bytes | None = None  # RDF bytes for OWL/XML, functional, Manchester, OBO
    data_syntax: str | None = None  # the syntax of `data`
    #: what reading it noticed but kept going past (an OBO line mended or left out), each
    #: naming its line; the loader adds them to the model's warnings
    warnings: tuple[str, ...] = ()

    @property
    def ox_format(self) -> str | None:
        return SYNTAXES[self.data_syntax or self.syntax][0]

    @property
    def rdflib_format(self) -> str | None:
        return SYNTAXES[self.data_syntax or self.syntax][1]

    @property
    def plain(self) -> bool:
        """A file parsers can read by path (not gzipped, not converted)."""
        return not self.gz and self.data is None

    @contextlib.contextmanager
    def quads(self):
        """pyoxigraph's parse of the RDF (by path when `plain`, else streamed from `open`);
        the iterator is read inside the block."""
        import pyoxigraph as ox

        fmt = getattr(ox.RdfFormat, self.ox_format)
        if self.plain:
            yield ox.parse(path=str(self.path), format=fmt)
            return
        with self.open() as fh:
            yield ox.parse(fh, fmt)

    def open(self) -> IO[bytes]:
        """The RDF bytes to parse (decompressed, or converted)."""
        if self.data is not None:
            return io.BytesIO(self.data)
        return gzip.open(self.path, "rb") if self.gz else open(self.path, "rb")


def sniff(head: bytes) -> str | None:
    """The syntax the start of a file looks like, or None when it is not clear."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#")).lstrip()
    if body.startswith("<?xml") or (body.startswith("<") and not re.match(r"<[^>\s]*>\s", body)):
        if re.search(r"<(\w+:)?Ontology[\s>]", body) and "owl#" in body and not re.search(
                r"<(\w+:)?RDF[\s>]", body):
            return "owlxml"
        if re.search(r"<(\w+:)?RDF[\s>]", body) or "22-rdf-syntax-ns#" in body:
            return "rdfxml"
        if "<TriX" in body:
            return "trix"
        return None
    if re.match(r"(Prefix|Import|Ontology)\(", body):
        return "functional"
    if re.match(r"(Prefix|Ontology|Class|ObjectProperty|Individual):\s", body):
        return "manchester"
    if re.match(r"(format-version|data-version|ontology):", body) or body.startswith("[Term]"):
        return "obo"
    if re.match(r"(@prefix|@base|PREFIX|BASE)\s", body, re.IGNORECASE):
        return "turtle"
    if body.startswith(("{", "[")):
        return "jsonld"
    if re.match(r"(<[^>\s]*>|_:\S+)\s+<[^>\s]*>\s", body):
        return "ntriples"
    return None


def _read_head(path: Path, gz: bool) -> bytes:
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            return fh.read(4096)
    except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError
        raise OntologyError(f"{path}: cannot read ({' '.join(str(err).split())}); check the "
                            "file" + (" is gzip-compressed" if gz else "")) from None


def detect(path: Path, fmt: str | None = None) -> RdfInput:
    """The syntax of `path` from `fmt` (--format), else its suffix checked against a sniff."""
    gz = path.suffix.lower() == ".gz"
    inner = Path(path.stem) if gz else path
    if fmt is not None:
        if fmt not in SYNTAXES:
            raise OntologyError(f"--format {fmt}: unknown syntax; use one of "
                                f"{', '.join(SYNTAXES)}")
        return RdfInput(path, fmt, gz)
    syntax = SUFFIXES.get(inner.suffix.lower())
    looks = sniff(_read_head(path, gz))
    if syntax is None:
        hint = f"; it looks like {SYNTAXES[looks][2]}: load it with --format {looks}" if looks else \
            f"; use one of {', '.join(sorted(SUFFIXES))} (optionally .gz) or --format"
        raise OntologyError(f"{path}: unknown RDF file type '{inner.suffix}'{hint}")
    if looks is not None and _FAMILY.get(looks, looks) != _FAMILY.get(syntax, syntax):
        raise OntologyError(f"{path}: looks like {SYNTAXES[looks][2]}, not "
                            f"{SYNTAXES[syntax][2]} as '{inner.suffix}' says; load it with "
                            f"--format {looks}")
    return RdfInput(path, syntax, gz)


def prepare(rdf: RdfInput, *, allow_imports: bool = False) -> RdfInput:
    """Convert a non-RDF syntax to RDF bytes (other inputs are returned as they are); refuse
    RDF/XML whose DTD entities would expand without bound (`xml_entities`).  `allow_imports`:
    owlready2 may fetch an OWL/XML file's imports (by default they are kept as owl:imports
    triples and not read)."""
    if rdf.syntax == "rdfxml":
        from kgprobe.ontology.xml_entities import check_entities

        with rdf.open() as fh:
            check_entities(fh, rdf.path)
    convert = {"owlxml": _owlxml, "functional": _owlapi, "manchester": _owlapi}
    if rdf.syntax not in convert and rdf.syntax != "obo":
        return rdf
    with rdf.open() as fh:
        raw = fh.read()
    if rdf.syntax == "obo":
        data, warnings = _obo(rdf, raw)
        return RdfInput(rdf.path, rdf.syntax, rdf.gz, data, "rdfxml", tuple(warnings))
    data, data_syntax = convert[rdf.syntax](rdf, raw, allow_imports)
    return RdfInput(rdf.path, rdf.syntax, rdf.gz, data, data_syntax)


def _fail(rdf: RdfInput, err: object) -> OntologyError:
    text = " ".join(str(err).split())[:200] or type(err).__name__
    return OntologyError(f"{rdf.path}: malformed {SYNTAXES[rdf.syntax][2]} ({text}); fix the file "
                         "or give its syntax with --format")


def _owlxml(rdf: RdfInput, raw: bytes, allow_imports: bool = False) -> tuple[bytes, str]:
    import owlready2

    world = owlready2.World()
    try:
        with contextlib.redirect_stderr(io.StringIO()), _no_imports(world, allow_imports):
            onto = world.get_ontology(rdf.path.resolve().as_uri()).load(
                fileobj=io.BytesIO(raw), format="owlxml")
            out = io.BytesIO()
            onto.save(out, format="ntriples")
    except Exception as err:  # owlready2 raises its own and expat's error types
        raise _fail(rdf, err.args[-1] if err.args else err) from None
    finally:
        world.close()
    return out.getvalue(), "ntriples"


@contextlib.contextmanager
def _no_imports(world, allow: bool):
    """While an OWL/XML file is read, owlready2 loads each `<Import>` it names right after
    parsing, from the URL (or a `file:` path): network and files the user did not ask for.
    Unless `allow` (--allow-imports), an imported ontology of this world is marked loaded
    without reading it; the file's owl:imports triple is kept, so `reason --owl` can name it."""
    if allow:
        yield
        return
    from owlready2.namespace import Ontology

    original = Ontology.load
    first: list = []

    def load(self, *args, **kwargs):
        if self.world is not world or (first and self is not first[0]):
            if self.world is world:  # an import: never fetched
                self.loaded = True
                return self
            return original(self, *args, **kwargs)
        first.append(self)
        return original(self, *args, **kwargs)

    Ontology.load = load
    try:
        yield
    finally:
        Ontology.load = original


def java(needed_for: str, drop: str) -> str:
    """The java executable, or one line saying what needs it and how to do without."""
    exe = shutil.which("java")
    if exe is None:
        raise JavaMissingError(f"java: not found on PATH; {needed_for} needs Java 8 or newer: "
                               f"install a JRE (e.g. openjdk-17-jre) or {drop}")
    return exe


class JavaMissingError(OntologyError):
    """An OWL tool (HermiT, the OWL API) needs Java and there is none."""


#: `Import(<iri>)` / `Import: <iri>`, and the ontology's IRI, in functional / Manchester syntax.
_IMPORT = {"functional": re.compile(rb"Import\(\s*<([^>\s]*)>\s*\)"),
           "manchester": re.compile(rb"\bImport:\s*<([^>\s]*)>")}
_ONTOLOGY_IRI = {"functional": re.compile(rb"Ontology\(\s*<([^>\s]*)>"),
                 "manchester": re.compile(rb"\bOntology:\s*<([^>\s]*)>")}


def _owlapi(rdf: RdfInput, raw: bytes, allow_imports: bool = False) -> tuple[bytes, str]:
    """Functional or Manchester syntax → RDF with the OWL API (owlready2's `Save`).

    The OWL API loads every import from its URL and fails offline; unless `allow_imports`,
    the imports are taken out of the text it sees and put back as owl:imports triples (the
    result is then N-Triples), so nothing is fetched and `reason --owl` can name them."""
    imports = [] if allow_imports else _IMPORT[rdf.syntax].findall(raw)
    if not imports:
        return _owlapi_run(rdf, raw)
    data, _ = _owlapi_run(rdf, _IMPORT[rdf.syntax].sub(b"", raw))
    import pyoxigraph as ox

    iri = _ONTOLOGY_IRI[rdf.syntax].search(raw)
    quads = list(ox.parse(data, ox.RdfFormat.RDF_XML))
    if iri:
        owl_imports = ox.NamedNode("http://www.w3.org/2002/07/owl#imports")
        subject = ox.NamedNode(iri.group(1).decode())
        quads += [ox.Quad(subject, owl_imports, ox.NamedNode(i.decode())) for i in imports]
    return ox.serialize([q.triple for q in quads], format=ox.RdfFormat.N_TRIPLES), "ntriples"


def _owlapi_run(rdf: RdfInput, raw: bytes) -> tuple[bytes, str]:
    from owlready2.reasoning import _HERMIT_CLASSPATH

    label = SYNTAXES[rdf.syntax][2]
    exe = java(f"reading {label} ({rdf.path})", "convert the file to RDF/XML or Turtle")
    with tempfile.TemporaryDirectory(prefix="kgprobe-owlapi-") as tmp:
        src, out = Path(tmp) / f"in.{rdf.syntax}", Path(tmp) / "out.rdf"
        src.write_bytes(raw)
        try:
            done = subprocess.run([exe, "-cp", _HERMIT_CLASSPATH, "Save", str(src), "rdf", str(out)],
                                  capture_output=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise _fail(rdf, "the OWL API did not finish within 600 s") from None
        if done.returncode != 0 or not out.exists():
            lines = [ln for ln in done.stderr.decode("utf-8", "replace").splitlines()
                     if "Exception" in ln or "rror" in ln]
            raise _fail(rdf, lines[0] if lines else f"the OWL API exited {done.returncode}")
        return out.read_bytes(), "rdfxml"


def _obo(rdf: RdfInput, raw: bytes) -> tuple[bytes, list[str]]:
    """OBO → RDF/XML with fastobo's OBO→OWL mapping; the lines fastobo refuses are mended or
    left out with a warning naming each (`ontology.obo`)."""
    import fastobo

    from kgprobe.ontology.obo import read_obo

    doc, warnings = read_obo(rdf.path, raw)
    try:
        # fastobo's OWL mapping needs an ontology and a default namespace; files omit them
        name = next((str(c.ontology) for c in doc.header
                     if isinstance(c, fastobo.header.OntologyClause)), None)
        if name is None:
            name = re.sub(r"[^\w.-]", "_", rdf.path.name.split(".")[0]) or "ontology"
            doc.header.append(fastobo.header.OntologyClause(name))
        if not any(isinstance(c, fastobo.header.DefaultNamespaceClause) for c in doc.header):
            doc.header.append(fastobo.header.DefaultNamespaceClause(fastobo.id.UnprefixedIdent(name)))
        out = io.BytesIO()
        fastobo.dump_owl(doc, out, format="rdf")
    except (SyntaxError, ValueError, TypeError) as err:
        text = " ".join(str(getattr(err, "msg", err)).split())[:300] or type(err).__name__
        raise OntologyError(f"{rdf.path}: read as OBO, but its translation to OWL failed "
                            f"({text}); check the file's header (ontology:, "
                            "default-namespace:)") from None
    return out.getvalue(), warnings
