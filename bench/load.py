"""Benchmark: `kgprobe kg load` of a LUBM-like file against rdflib's parse of the same file.

    python bench/load.py [--triples 1000000] [--seed 0] [--format nt|ttl]

Writes one seeded LUBM-like file (universities → departments → faculty, students, courses,
publications; a class tree with domains and ranges) into a temporary directory, then runs,
each in its own fresh subprocess so peak RSS (ru_maxrss) is that run's alone:

* kgprobe: `kgprobe kg load FILE` into a new store (bulk load straight into the new graph,
  marked pending; the typed model built from the same file in a thread beside the loader;
  published by one small SPARQL update), wall time;
* rdflib: `rdflib.Graph().parse(FILE)`, the parse alone.

Prints one JSON line: triples, file MB, seconds and peak MB of each, and the ratio.

    python bench/load.py --obo FILE [--namespace IRI-PREFIX] [--repeat 1]

times what a user runs on an OBO release, each command in a fresh process with a new store
and an empty tag cache (a first run: spaCy tags every label), median of `--repeat`:

* ``load_reason``: ``kgprobe kg load FILE --store S --reason [--namespace …]``;
* ``memorizing``: ``kgprobe generate memorizing --store S --out M [--namespace …]``;
* ``reasoning``: ``kgprobe generate reasoning --no-pseudowords --store S --out R [--namespace …]``;
* the anchor ``fastobo_rdflib``: the file read into an rdflib graph the plain way (fastobo's
  parse, its OWL mapping as RDF/XML, rdflib's parse of that), in the same run.

Prints one JSON line: wall and CPU seconds (user + system) of each, ``load_to_generate`` (the
three together), the ratio of load+reason's CPU to the anchor's, and whether the targets hold
(load+reason ≤ 30 s, load → generate ≤ 120 s of wall time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup import timed  # bench/ is the script's folder: sys.path[0]

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"

#: class → superclass (LUBM's univ-bench, abridged)
CLASSES = {
    "Person": None, "Employee": "Person", "Faculty": "Employee", "Professor": "Faculty",
    "FullProfessor": "Professor", "AssociateProfessor": "Professor",
    "AssistantProfessor": "Professor", "Lecturer": "Faculty", "Student": "Person",
    "UndergraduateStudent": "Student", "GraduateStudent": "Student", "Organization": None,
    "University": "Organization", "Department": "Organization", "ResearchGroup": "Organization",
    "Work": None, "Course": "Work", "GraduateCourse": "Course", "Publication": "Work",
}
#: property → (domain, range); None range: a literal
PROPERTIES = {
    "subOrganizationOf": ("Organization", "Organization"), "worksFor": ("Employee", "Organization"),
    "headOf": ("Employee", "Organization"), "memberOf": ("Person", "Organization"),
    "teacherOf": ("Faculty", "Course"), "takesCourse": ("Student", "Course"),
    "advisor": ("Student", "Professor"), "publicationAuthor": ("Publication", "Person"),
    "degreeFrom": ("Person", "University"), "name": ("Person", None),
    "emailAddress": ("Person", None), "telephone": ("Person", None),
    "researchInterest": ("Professor", None),
}


def _iri(local: str) -> str:
    return f"<{UB}{local}>"


def schema_lines() -> list[str]:
    lines = []
    for cls, parent in CLASSES.items():
        lines.append(f"{_iri(cls)} <{RDF_TYPE}> <{OWL}Class> .")
        lines.append(f'{_iri(cls)} <{RDFS}label> "{cls.lower()}" .')
        if parent:
            lines.append(f"{_iri(cls)} <{RDFS}subClassOf> {_iri(parent)} .")
    for prop, (dom, rng) in PROPERTIES.items():
        kind = "ObjectProperty" if rng else "DatatypeProperty"
        lines.append(f"{_iri(prop)} <{RDF_TYPE}> <{OWL}{kind}> .")
        lines.append(f"{_iri(prop)} <{RDFS}domain> {_iri(dom)} .")
        if rng:
            lines.append(f"{_iri(prop)} <{RDFS}range> {_iri(rng)} .")
    return lines


def _person(out, rng: random.Random, iri: str, cls: str, dept: str, univs: list[str]) -> None:
    out.append(f"<{iri}> <{RDF_TYPE}> {_iri(cls)} .")
    out.append(f'<{iri}> {_iri("name")} "{iri.rsplit("/", 1)[1]}" .')
    out.append(f'<{iri}> {_iri("emailAddress")} "{iri.rsplit("/", 1)[1]}@example.edu" .')
    out.append(f'<{iri}> {_iri("telephone")} "{rng.randrange(10**9)}" .')
    out.append(f"<{iri}> {_iri('memberOf')} <{dept}> .")
    out.append(f"<{iri}> {_iri('degreeFrom')} <{rng.choice(univs)}> .")


def department(out: list[str], rng: random.Random, univ: str, d: int, univs: list[str]) -> None:
    """One department: ~3,000 triples, like a LUBM department."""
    dept = f"{univ}/Department{d}"
    out += [f"<{dept}> <{RDF_TYPE}> {_iri('Department')} .",
            f"<{dept}> {_iri('subOrganizationOf')} <{univ}> ."]
    courses = [f"{dept}/Course{c}" for c in range(40)]
    for c in courses:
        out.append(f"<{c}> <{RDF_TYPE}> {_iri(rng.choice(['Course', 'GraduateCourse']))} .")
    profs = []
    for i, cls in enumerate(["FullProfessor"] * 8 + ["AssociateProfessor"] * 10
                            + ["AssistantProfessor"] * 8 + ["Lecturer"] * 6):
        iri = f"{dept}/{cls}{i}"
        _person(out, rng, iri, cls, dept, univs)
        out.append(f"<{iri}> {_iri('worksFor')} <{dept}> .")
        for c in rng.sample(courses, 2):
            out.append(f"<{iri}> {_iri('teacherOf')} <{c}> .")
        if cls != "Lecturer":
            profs.append(iri)
            out.append(f'<{iri}> {_iri("researchInterest")} "Research{rng.randrange(30)}" .')
            for p in range(rng.randrange(3, 9)):
                pub = f"{iri}/Publication{p}"
                out += [f"<{pub}> <{RDF_TYPE}> {_iri('Publication')} .",
                        f"<{pub}> {_iri('publicationAuthor')} <{iri}> ."]
    out.append(f"<{profs[0]}> {_iri('headOf')} <{dept}> .")
    for i in range(rng.randrange(180, 260)):
        cls = "GraduateStudent" if i % 4 == 0 else "UndergraduateStudent"
        iri = f"{dept}/{cls}{i}"
        _person(out, rng, iri, cls, dept, univs)
        for c in rng.sample(courses, rng.randrange(2, 4)):
            out.append(f"<{iri}> {_iri('takesCourse')} <{c}> .")
        if cls == "GraduateStudent" or rng.random() < 0.2:
            out.append(f"<{iri}> {_iri('advisor')} <{rng.choice(profs)}> .")


def write_lubm(path: Path, triples: int, seed: int) -> int:
    """A seeded LUBM-like N-Triples file of about `triples` lines; returns the exact count."""
    rng = random.Random(seed)
    univs = [f"http://www.University{u}.edu" for u in range(1000)]
    lines = schema_lines()
    u = 0
    while len(lines) < triples:
        univ = univs[u]
        lines.append(f"<{univ}> <{RDF_TYPE}> {_iri('University')} .")
        for d in range(15):
            department(lines, rng, univ, d, univs)
            if len(lines) >= triples:
                break
        u += 1
    lines = lines[:triples]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def to_turtle(nt: Path, ttl: Path) -> None:
    import pyoxigraph as ox

    ox.serialize(ox.parse(path=str(nt), format=ox.RdfFormat.N_TRIPLES), str(ttl),
                 format=ox.RdfFormat.TURTLE, prefixes={"ub": UB})


def _worker(kind: str, path: str, store: str) -> None:
    start = time.perf_counter()
    if kind == "kgprobe":
        from kgprobe.cli import main

        code = main(["kg", "load", path, "--store", store])
        assert code == 0, code
    else:
        import rdflib

        g = rdflib.Graph()
        g.parse(path, format="nt" if path.endswith(".nt") else "turtle")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": round(seconds, 2), "peak_mb": round(peak)}))


def run(kind: str, path: Path, store: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--worker", kind, str(path), str(store)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: The targets for a 1–2 MB OBO release on 2 idle cores (wall seconds).
OBO_TARGETS = {"load_reason": 30, "load_to_generate": 120}

ANCHOR = """
import io, sys, fastobo, rdflib
doc = fastobo.load(sys.argv[1])
h = fastobo.header
if not any(isinstance(c, h.OntologyClause) for c in doc.header):  # the OWL mapping needs both
    doc.header.append(h.OntologyClause("anchor"))
if not any(isinstance(c, h.DefaultNamespaceClause) for c in doc.header):
    doc.header.append(h.DefaultNamespaceClause(fastobo.id.UnprefixedIdent("anchor")))
out = io.BytesIO()
fastobo.dump_owl(doc, out, format="rdf")
graph = rdflib.Graph().parse(data=out.getvalue(), format="xml")
print(len(graph))
"""


def obo_once(path: Path, namespace: str | None, tmp: Path) -> dict[str, tuple[float, float]]:
    """One first run of the three commands (new store, empty caches) and of the anchor."""
    env = {k: v for k, v in os.environ.items() if k != "KGPROBE_TAG_CACHE_DIR"}
    env.update(OMP_NUM_THREADS="1", KGPROBE_CACHE_DIR=str(tmp / "cache"))
    cli = [sys.executable, "-m", "kgprobe.cli"]
    ns = ["--namespace", namespace] if namespace else []
    store = ["--store", str(tmp / "store")]
    runs = {"load_reason": [*cli, "kg", "load", str(path), *store, "--reason", *ns],
            "memorizing": [*cli, "generate", "memorizing", *store, "--out", str(tmp / "m"), *ns],
            "reasoning": [*cli, "generate", "reasoning", "--no-pseudowords", *store,
                          "--out", str(tmp / "r"), *ns],
            "fastobo_rdflib": [sys.executable, "-c", ANCHOR, str(path)]}
    return {name: timed(argv, env=env) for name, argv in runs.items()}


def obo_bench(path: Path, namespace: str | None, repeat: int) -> dict:
    rounds = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            rounds.append(obo_once(path, namespace, Path(tmp)))
    steps = ("load_reason", "memorizing", "reasoning")
    for r in rounds:
        r["load_to_generate"] = tuple(sum(r[s][i] for s in steps) for i in (0, 1))
    med = {name: {"wall_s": round(statistics.median(r[name][0] for r in rounds), 2),
                  "cpu_s": round(statistics.median(r[name][1] for r in rounds), 2)}
           for name in rounds[0]}
    data = path.read_bytes()
    return {"bench": "load_obo", "file": path.name, "file_mb": round(len(data) / 1e6, 2),
            "sha256": hashlib.sha256(data).hexdigest()[:16],
            "terms": data.count(b"\n[Term]"), "namespace": namespace, "repeat": repeat,
            **med, "cpu_vs_anchor": round(med["load_reason"]["cpu_s"]
                                          / med["fastobo_rdflib"]["cpu_s"], 2),
            "targets_s": OBO_TARGETS,
            "within_targets": all(med[k]["wall_s"] <= v for k, v in OBO_TARGETS.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triples", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--format", choices=["nt", "ttl"], default="nt")
    ap.add_argument("--obo", type=Path, help="time kg load --reason and both generate "
                    "commands on this OBO file instead (see above)")
    ap.add_argument("--namespace", help="with --obo: the ontology's own IRI prefix")
    ap.add_argument("--repeat", type=int, default=1, help="with --obo: runs (median)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(*args.worker)
        return
    if args.obo:
        print(json.dumps(obo_bench(args.obo, args.namespace, args.repeat)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lubm.nt"
        n = write_lubm(path, args.triples, args.seed)
        if args.format == "ttl":
            to_turtle(path, Path(tmp) / "lubm.ttl")
            path = Path(tmp) / "lubm.ttl"
        ours = run("kgprobe", path, Path(tmp) / "store")
        theirs = run("rdflib", path, Path(tmp) / "unused")
        print(json.dumps({"bench": "load", "triples": n, "format": args.format, "seed": args.seed,
                          "file_mb": round(path.stat().st_size / 2**20, 1),
                          "kgprobe_load_s": ours["seconds"], "kgprobe_peak_mb": ours["peak_mb"],
                          "rdflib_parse_s": theirs["seconds"], "rdflib_peak_mb": theirs["peak_mb"],
                          "speedup": round(theirs["seconds"] / ours["seconds"], 1)}))


if __name__ == "__main__":
    main()
