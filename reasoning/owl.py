"""OWL classification with HermiT (the jar owlready2 ships): named subsumptions and types
that the six RDFS rules cannot derive (``Margherita ⊑ VegetarianPizzaEquivalent1`` follows
from an ``owl:equivalentClass`` intersection with a universal restriction).

Why the command line and not `owlready2.sync_reasoner`: owlready2's sync rewrites its
world's class tree (it drops asserted parents that became redundant), and kgprobe needs the
opposite, only what HermiT adds.  So the asserted triples go to HermiT as N-Triples, exactly
as owlready2 itself hands them over, with owlready2's classpath, and HermiT's direct
hierarchy (``SubClassOf( <A> <B> )``, ``EquivalentClasses(…)``, ``Type( <i> <C> )``,
``SubObjectPropertyOf(…)``) is read back.  Only statements between named terms are kept;
classes equivalent to ``owl:Nothing`` (unsatisfiable) are reported, not stated.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.ontology.formats import java
from kgprobe.ontology.model import (
    OWL,
    RDF_TYPE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    Triple,
    nt_term,
)

#: The provenance name of HermiT's conclusions, beside the RDFS rule names.
PROVENANCE = "owl:hermit"
_LINE = re.compile(r"^([A-Za-z]+)\( ((?:<[^>]+>\s*)+)\)$", re.MULTILINE)
_NOTHING, _THING, _IMPORTS = OWL + "Nothing", OWL + "Thing", OWL + "imports"
_SUB = {"SubClassOf": RDFS_SUBCLASSOF, "SubObjectPropertyOf": RDFS_SUBPROPERTYOF,
        "SubDataPropertyOf": RDFS_SUBPROPERTYOF}
_EQUIV = {"EquivalentClasses": RDFS_SUBCLASSOF, "EquivalentObjectProperties": RDFS_SUBPROPERTYOF,
          "EquivalentDataProperties": RDFS_SUBPROPERTYOF}
#: HermiT's heap (owlready2's default is 2000 MB).
JAVA_MEMORY_MB = 2000
#: `reason --owl --timeout`'s default, and how often a running HermiT is reported.
DEFAULT_TIMEOUT_S = 600.0
PROGRESS_EVERY_S = 10.0


class OwlReasonerError(KgprobeError):
    """HermiT cannot run (no Java) or refuses the ontology (inconsistent, unsupported)."""


@dataclass
class OwlResult:
    """HermiT's named conclusions, and the unsatisfiable classes it found."""

    triples: set[Triple] = field(default_factory=set)
    unsatisfiable: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. datatypes HermiT ignored


def write_ntriples(triples: Iterable[Triple], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for s, p, o in triples:
            fh.write(f"{nt_term(s)} {nt_term(p)} {nt_term(o)} .\n")


def parse_hermit(output: str) -> OwlResult:
    """The named statements of HermiT's `-c -O -D -I` output (direct hierarchy)."""
    result = OwlResult()
    for kind, body in _LINE.findall(output):
        iris = body.strip()[1:-1].split("> <")
        if kind in _SUB:
            sub, sup = iris
            if sup != _THING and sub != _NOTHING and not sub.startswith(OWL):
                result.triples.add((sub, _SUB[kind], sup))
        elif kind in _EQUIV:
            named = [i for i in iris if not i.startswith(OWL)]
            if _NOTHING in iris:
                result.unsatisfiable += named
                continue
            result.triples.update((a, _EQUIV[kind], b) for a in named for b in named if a != b)
        elif kind == "Type":  # realization: `Type( <individual> <class> )`
            individual, cls = iris
            if cls != _THING:
                result.triples.add((individual, RDF_TYPE, cls))
    result.unsatisfiable.sort()
    return result


def missing_imports(triples: set[Triple]) -> list[tuple[str, str]]:
    """(importing ontology, imported IRI) for each owl:imports whose target is not an
    ontology among `triples` (by its IRI or its owl:versionIRI)."""
    loaded = {s for s, p, o in triples if p == RDF_TYPE and o == OWL + "Ontology"}
    loaded |= {o for s, p, o in triples if p == OWL + "versionIRI" and s in loaded}
    return sorted((s, o) for s, p, o in triples if p == _IMPORTS and o not in loaded
                  and o.rstrip("#/") not in {i.rstrip("#/") for i in loaded})


def classify(triples: Iterable[Triple], *, timeout: float = DEFAULT_TIMEOUT_S,
             ignore_imports: bool = False,
             progress: Callable[[str], None] | None = None) -> OwlResult:
    """Run HermiT over `triples`; what it derives beyond them, between named terms.

    HermiT (the OWL API) would fetch every owl:imports from the network and, offline, fail
    with a message that blames OWL 2 DL.  So imports are checked here: one whose ontology is
    not in the store is named in one line (load it too, or --ignore-imports), and HermiT is
    never given an owl:imports triple, so it fetches nothing.

    HermiT refuses a datatype outside the OWL 2 datatype map (a user's rdfs:Datatype it has
    no definition for) before it reasons; it is then run once more ignoring such datatypes,
    and a warning in the result names the datatype.  The whole run stops at `timeout` seconds
    (the Java process is killed) with one line; `progress` (default: stderr) hears how HermiT
    is getting on every `PROGRESS_EVERY_S`."""
    triples = set(triples)
    missing = missing_imports(triples)
    if missing and not ignore_imports:
        importer, imported = missing[0]
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise OwlReasonerError(f"reason --owl: {importer} imports {imported}{more}, which is not "
                               "in the store and is never fetched; load the imported file too "
                               "(`kgprobe kg load FILE`), or pass --ignore-imports to classify "
                               "without it")
    exe = java("`kgprobe reason --owl` runs HermiT, which", "drop --owl")
    hermit = HermitRun(exe, timeout, progress or say)
    given = {t for t in triples if t[1] != _IMPORTS}
    with tempfile.TemporaryDirectory(prefix="kgprobe-owl-") as tmp:
        code, text, err, warnings = _classify_datatypes_aside(hermit, given, Path(tmp))
    if code != 0:
        raise hermit_error(err or text, code)
    result = parse_hermit(text)
    result.triples -= triples
    result.warnings = warnings
    return result


#: How many datatypes HermiT may refuse, one run each, before the refusal is the error.
MAX_DATATYPE_RUNS = 8
_XSD = "http://www.w3.org/2001/XMLSchema#"
#: The OWL 2 datatype map (OWL 2 Structural Specification, 4), all HermiT supports.
OWL2_DATATYPES = {_XSD + n for n in (
    "decimal", "integer", "nonNegativeInteger", "nonPositiveInteger", "positiveInteger",
    "negativeInteger", "long", "int", "short", "byte", "unsignedLong", "unsignedInt",
    "unsignedShort", "unsignedByte", "double", "float", "string", "normalizedString", "token",
    "language", "Name", "NCName", "NMTOKEN", "boolean", "hexBinary", "base64Binary", "anyURI",
    "dateTime", "dateTimeStamp")} | {
    OWL + "real", OWL + "rational", "http://www.w3.org/2000/01/rdf-schema#Literal",
    *(f"http://www.w3.org/1999/02/22-rdf-syntax-ns#{n}"
      for n in ("XMLLiteral", "PlainLiteral", "langString"))}


def _classify_datatypes_aside(hermit: HermitRun, given: set[Triple], tmp: Path
                              ) -> tuple[int, str, str, list[str]]:
    """HermiT over `given`; when it refuses a datatype outside the OWL 2 datatype map, again
    with its own `--ignoreUnsupportedDatatypes` (it covers ranges and ∃/∀ over a datatype)
    and without the facet restrictions on such datatypes (which it does not cover); a
    datatype it still refuses has all its axioms left out, one run each.  A warning names
    the datatypes set aside."""
    path, ignore, refused, left_out = tmp / "asserted.nt", False, [], 0
    write_ntriples(given, path)
    for _ in range(MAX_DATATYPE_RUNS):
        code, text, err = hermit.run(path, tmp, ignore_datatypes=ignore)
        found = _UNSUPPORTED.search(err) if code != 0 else None
        if found is None:
            break
        aside = [found.group(1)]
        if not ignore:  # and every facet restriction on an unsupported datatype
            aside += sorted({o for _, p, o in given if p == OWL + "onDatatype"
                             and o not in OWL2_DATATYPES} - set(aside))
        dropped = 0
        for datatype in aside if ignore or len(aside) > 1 else ():
            given, n = without_datatype(given, datatype)
            dropped += n
        if ignore and not dropped:
            break
        left_out += dropped
        refused += [d for d in aside if d not in refused]
        ignore = True
        if dropped:
            write_ntriples(given, path)
    warnings = [f"HermiT cannot use datatype{'s' * (len(refused) > 1)} "
                f"{', '.join(f'<{d}>' for d in refused)} (not in the OWL 2 datatype map, no "
                "definition it supports); classified ignoring unsupported datatypes"
                + (f" and leaving out the {left_out} triples that restrict them" if left_out
                   else "") + " (what follows from them is missing)"] if refused else []
    return code, text, err, warnings


def without_datatype(triples: set[Triple], datatype: str) -> tuple[set[Triple], int]:
    """`triples` less every axiom that uses `datatype`: the triples that name it or hold a
    literal of it, and each blank-node structure (restriction, data range, list) that
    reaches it, with the triple that states it.  Also returns how many triples went."""
    typed = f"^^<{datatype}>"

    def uses(term: str) -> bool:
        return term == datatype or term.endswith(typed)

    up: dict[str, set[str]] = {}  # blank node → the blank nodes that point at it
    down: dict[str, set[str]] = {}  # and those it points at
    for s, _, o in triples:
        if o.startswith("_:") and s.startswith("_:"):
            up.setdefault(o, set()).add(s)
            down.setdefault(s, set()).add(o)
    bad = _reach({s for s, p, o in triples if s.startswith("_:") and (uses(o) or uses(p))}, up)
    bad = _reach(bad, down)  # the axiom's root, then all of its structure (lists, facets)
    kept = {t for t in triples if not (t[0] in bad or t[2] in bad or uses(t[0]) or uses(t[2]))}
    return kept, len(triples) - len(kept)


def _reach(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def say(line: str) -> None:
    """`classify`'s default progress: a line on stderr, printable (an IRI may hold anything)."""
    import sys

    from kgprobe.terminal import printable

    print(f"kgprobe: {printable(line)}", file=sys.stderr, flush=True)


class HermitRun:
    """HermiT's command line as a child process with a deadline: its stdout and stderr go
    to files (a pipe HermiT fills would block it), its phase (`-v`) feeds `progress`, and at
    the deadline, or on Ctrl-C or any error here, its whole process group is killed."""

    def __init__(self, exe: str, timeout: float, progress: Callable[[str], None] | None):
        self.exe, self.timeout, self.progress = exe, timeout, progress
        self.start = time.monotonic()
        self.deadline = self.start + timeout

    def command(self, path: Path, ignore_datatypes: bool) -> list[str]:
        from owlready2.reasoning import _HERMIT_CLASSPATH

        return [self.exe, f"-Xmx{JAVA_MEMORY_MB}M", "-cp", _HERMIT_CLASSPATH,
                "org.semanticweb.HermiT.cli.CommandLine", "-v1",
                *(["--ignoreUnsupportedDatatypes"] if ignore_datatypes else []),
                "-c", "-O", "-D", "-I", path.resolve().as_uri()]

    def run(self, path: Path, tmp: Path, *, ignore_datatypes: bool = False
            ) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of one HermiT run; `OwlReasonerError` at the deadline."""
        out, err = tmp / "hermit.out", tmp / "hermit.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.Popen(self.command(path, ignore_datatypes), stdin=subprocess.DEVNULL,
                                    stdout=fo, stderr=fe, start_new_session=True,
                                    preexec_fn=_pdeathsig())  # noqa: PLW1509 (see _pdeathsig)
            try:
                self._wait(proc, err)
            finally:
                if proc.poll() is None:
                    _kill(proc)
        return (proc.returncode, out.read_text("utf-8", "replace"),
                err.read_text("utf-8", "replace"))

    def _wait(self, proc: subprocess.Popen, err: Path) -> None:
        note = time.monotonic() + PROGRESS_EVERY_S
        while True:
            try:
                proc.wait(timeout=max(0.0, min(self.deadline, note) - time.monotonic()))
                return
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now >= self.deadline:
                _kill(proc)
                raise OwlReasonerError(
                    f"reason --owl: HermiT did not finish within --timeout {self.timeout:g} s "
                    f"(it was {phase(err)}); it was stopped and nothing was stored; raise "
                    "--timeout, or run `kgprobe reason` without --owl")
            if now >= note:
                if self.progress is not None:
                    self.progress(f"HermiT: {phase(err)}, {now - self.start:.0f} s of "
                                  f"--timeout {self.timeout:g} s")
                note += PROGRESS_EVERY_S


#: HermiT's `-v` lines, last first → what it is doing after printing one.
_PHASES = (("Writing results", "writing its results"), ("Classifying", "classifying"),
           ("Reasoner created", "classifying"), ("Ontology parsed", "preprocessing the axioms"))


def phase(err: Path) -> str:
    """What HermiT is doing, from the `-v` lines it wrote to `err` so far."""
    try:
        text = err.read_text("utf-8", "replace")
    except OSError:
        text = ""
    last = max(((text.rfind(mark), what) for mark, what in _PHASES), default=(-1, ""))
    return last[1] if last[0] >= 0 else "reading the ontology"


def _pdeathsig() -> Callable[[], None] | None:
    """Linux: a `preexec_fn` that has the JVM get SIGKILL when kgprobe itself dies (kill -9),
    so it never outlives it.  The libc lookup happens here, in the parent: the child only
    makes the call, which takes no lock a thread of the parent could hold."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the JVM and anything it started
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


#: HermiT's own words for a datatype it does not support (the IRI follows in quotes).
_UNSUPPORTED = re.compile(r"UnsupportedDatatypeException.*?The datatype '([^']+)'", re.DOTALL)
_EXCEPTION = re.compile(r"^(?:Exception in thread \"[^\"]*\" )?([\w.$]+(?:Exception|Error))"
                        r"(?::\s*(.*))?$")


def java_exception(err: str) -> tuple[str, str] | None:
    """(exception class, its whole message) from a Java stack trace: the message may span
    lines (HermiT's do), up to the first `at …` frame."""
    lines = err.splitlines()
    for i, line in enumerate(lines):
        m = _EXCEPTION.match(line.strip())
        if m is None:
            continue
        message = [m.group(2) or ""]
        for more in lines[i + 1:]:
            if more.strip().startswith(("at ", "Caused by:", "...")):
                break
            message.append(more)
        return m.group(1).rsplit(".", 1)[-1], " ".join(" ".join(message).split())
    return None


def hermit_error(err: str, code: int) -> OwlReasonerError:
    """One whole line for a HermiT failure: what it refused, and what to do."""
    found = java_exception(err)
    name, message = found if found else ("", "")
    if "Inconsistent" in name or "inconsistent" in err.lower():
        return OwlReasonerError("HermiT: the ontology is inconsistent (it has no model), so "
                                "every subsumption follows; fix the ontology or drop --owl")
    if name == "OutOfMemoryError":
        return OwlReasonerError(f"HermiT ran out of its {JAVA_MEMORY_MB} MB Java heap; classify a "
                                "smaller ontology, or run `kgprobe reason` without --owl")
    if not found:
        lines = [ln for ln in err.splitlines() if ln.strip() and not _is_phase(ln)]
        name, message = f"exit status {code}", " ".join((lines[0] if lines else "").split())
    return OwlReasonerError(f"HermiT refused the ontology ({name}: {message or 'no message'}); "
                            "check that it is OWL 2 DL (e.g. with Protégé's OWL 2 DL profile "
                            "check), or run `kgprobe reason` without --owl")


def _is_phase(line: str) -> bool:
    return line.startswith(("Processing ", "Doing action", "...action")) or line.endswith(
        "actions") or any(line.startswith(mark) for mark, _ in _PHASES)
