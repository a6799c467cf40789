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

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

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


class OwlReasonerError(KgprobeError):
    """HermiT cannot run (no Java) or refuses the ontology (inconsistent, unsupported)."""


@dataclass
class OwlResult:
    """HermiT's named conclusions, and the unsatisfiable classes it found."""

    triples: set[Triple] = field(default_factory=set)
    unsatisfiable: list[str] = field(default_factory=list)


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


def classify(triples: Iterable[Triple], *, timeout: float = 600,
             ignore_imports: bool = False) -> OwlResult:
    """Run HermiT over `triples`; what it derives beyond them, between named terms.

    HermiT (the OWL API) would fetch every owl:imports from the network and, offline, fail
    with a message that blames OWL 2 DL.  So imports are checked here: one whose ontology is
    not in the store is named in one line (load it too, or --ignore-imports), and HermiT is
    never given an owl:imports triple, so it fetches nothing."""
    from owlready2.reasoning import _HERMIT_CLASSPATH

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
    with tempfile.TemporaryDirectory(prefix="kgprobe-owl-") as tmp:
        path = Path(tmp) / "asserted.nt"
        write_ntriples((t for t in triples if t[1] != _IMPORTS), path)
        command = [exe, f"-Xmx{JAVA_MEMORY_MB}M", "-cp", _HERMIT_CLASSPATH,
                   "org.semanticweb.HermiT.cli.CommandLine", "-c", "-O", "-D", "-I",
                   path.resolve().as_uri()]
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise OwlReasonerError(f"HermiT did not finish within {timeout:.0f} s; run "
                                   "`kgprobe reason` without --owl") from None
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        err = (done.stderr or done.stdout).decode("utf-8", "replace")
        if "Inconsistent ontology" in err or "inconsistent" in err.lower():
            raise OwlReasonerError("HermiT: the ontology is inconsistent (it has no model), so "
                                   "every subsumption follows; fix the ontology or drop --owl")
        lines = [ln for ln in err.splitlines() if ln.strip()]
        reason = " ".join((lines[0] if lines else "no message").split())[:200]
        raise OwlReasonerError(f"HermiT failed ({reason}); check the ontology is OWL 2 DL, or "
                               "drop --owl")
    result = parse_hermit(text)
    result.triples -= triples
    return result
