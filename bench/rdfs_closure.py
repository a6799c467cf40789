"""Benchmark: kgprobe's RDFS closure against owlrl and `reasonable` on one synthetic graph.

    python bench/rdfs_closure.py [--sizes 10k,50k,1m] [--skip-owlrl] [--skip-reasonable] [--seed 0]

The graph (seeded, see `make_graph`) has a class tree with one subClassOf cycle, 20
properties with domains and ranges (some only on super-properties), subproperty
chains, a subPropertyOf cycle, typed entities, entity-valued facts and
literal-valued facts.  Sizes count asserted triples.

Every engine runs in its own fresh subprocess (same seed, same graph), so its peak
memory is that process's ru_maxrss; `input_mb` is the worker's RSS right before the
timed call (interpreter, imports and the input graph) for scale.  What is timed:

* kgprobe: `closure(triples)` from a list of str triples to the finished `Closure`
  (interning, saturation and the frozensets of Python str triples).
* owlrl: `DeductiveClosure(RDFS_Semantics, axiomatic_triples=False,
  datatype_axioms=False).expand(g)` on an rdflib Graph built beforehand (untimed).
  Skipped above 50k triples (it needs ~260 s at 50k).
* reasonable: `PyReasoner().from_graph(g)` then `.reason()`, from the same kind of
  rdflib Graph (built untimed); `reasonable_reason_only_s` times `.reason()` alone.
  It is an OWL 2 RL reasoner (Rust).

Agreement: each worker reduces its engine's output to the triples the six RDFS
rules can derive and reports a count and a SHA-256 of the sorted N-Triples-ish
lines; "agree" is true when all engines that ran give the same digest.  A
disagreement fails the bench: the JSON line is still printed, then one line per engine
on stderr saying how many triples each side has that the other lacks (with examples),
and the exit status is 1.  Both sides are compared as legal RDF: generalized triples
with a literal subject (``"name 1" rdf:type ex:Text``, rdfs3 on a literal object, which
kgprobe and owlrl both derive) are left out of both, so kgprobe's side is
`Closure.asserted | Closure.rdf_inferred`, the triples a store holds.  The reduction
otherwise removes only consequences of rules kgprobe does not implement, which on
this graph cannot feed the six rules (no vocabulary class is used as a class, and
rdf:type / rdfs:subPropertyOf have no domain, range or super-property):

* owlrl: triples whose object is rdfs:Resource, rdfs:Class, rdf:Property,
  rdfs:Literal, rdfs:Datatype or rdfs:ContainerMembershipProperty (rdf1, rdfs4,
  rdfs8, rdfs12, rdfs13); ``p rdfs:subPropertyOf p`` (rdfs6) unless kgprobe also
  derives it, which it does exactly for p on a subPropertyOf cycle (the generator
  knows which those are); triples with a literal subject (not legal RDF, left out of
  kgprobe's side too).
* reasonable: triples mentioning an owl: term (owl:Thing typing, owl:Class ...),
  and rdfs:domain / rdfs:range triples that were not asserted (OWL 2 RL rules
  scm-dom1/2 and scm-rng1/2 propagate them along the hierarchies; RDFS does not).
  reasonable 0.4.4 does not derive subPropertyOf transitivity (rdfs5 / OWL 2 RL
  scm-spo; its rdfs7 facts are still complete), so for this comparison the
  unasserted rdfs:subPropertyOf triples are dropped from kgprobe's output too.
  Its plain literals come back as xsd:string literals and are normalised back.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import time

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
TYPE, SCO, SPO, DOM, RNG = RDF + "type", RDFS + "subClassOf", RDFS + "subPropertyOf", RDFS + "domain", RDFS + "range"
EX = "http://example.org/bench/"
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"

SIZES = {"10k": 10_000, "50k": 50_000, "100k": 100_000, "200k": 200_000, "500k": 500_000, "1m": 1_000_000}
OWLRL_MAX = 50_000
N_PROPS = 20
# sub-property edges (child, parent): chains 1->0, 2->1, 3->2; a fan 5->4, 6->4; 8->7;
# a cycle 9 <-> 10 under 11; 13->12, 14->13; the literal-valued 19 has no parents.
SUBPROP = [(1, 0), (2, 1), (3, 2), (5, 4), (6, 4), (8, 7), (9, 10), (10, 9), (10, 11), (13, 12), (14, 13)]
SPO_CYCLE = {9, 10}
NO_DECL = {1, 2, 3, 5, 9, 14, 16}  # properties that only inherit domain/range (16: none at all)
LIT_PROP = 19


def parse_size(s: str) -> int:
    s = s.strip().lower()
    if s in SIZES:
        return SIZES[s]
    mult = 1_000_000 if s.endswith("m") else 1_000 if s.endswith("k") else 1
    return int(float(s.rstrip("mk")) * mult)


def label(n: int) -> str:
    for k, v in SIZES.items():
        if v == n:
            return k
    return str(n)


def make_graph(size: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """A seeded synthetic graph with about `size` distinct asserted triples."""
    rng = random.Random(seed)
    n_classes = max(30, size // 100)
    cls = [f"{EX}C{i}" for i in range(n_classes)]
    props = [f"{EX}p{i}" for i in range(N_PROPS)]
    triples: set[tuple[str, str, str]] = set()
    # class tree: node i's parent is (i - 1) // 4, plus a 2-cycle C1 <-> C2 and a second parent for some
    depth = [0] * n_classes
    for i in range(1, n_classes):
        parent = (i - 1) // 4
        depth[i] = depth[parent] + 1
        triples.add((cls[i], SCO, cls[parent]))
    triples.add((cls[1], SCO, cls[2]))
    for i in range(5, n_classes, 97):  # occasional multiple inheritance
        triples.add((cls[i], SCO, cls[rng.randrange(1, 5)]))
    upper = [c for c, d in zip(cls, depth) if 1 <= d <= 3]
    for child, parent in SUBPROP:
        triples.add((props[child], SPO, props[parent]))
    for i, p in enumerate(props):
        if i in NO_DECL:
            continue
        triples.add((p, DOM, rng.choice(upper)))
        if i != LIT_PROP:
            triples.add((p, RNG, rng.choice(upper)))
    triples.add((props[LIT_PROP], RNG, f"{EX}Text"))  # range on literal values: rdfs3 must skip them
    n_entities = max(50, size // 8)
    ents = [f"{EX}e{i}" for i in range(n_entities)]
    leaves = cls[n_classes // 4 :]
    for e in ents:
        triples.add((e, TYPE, rng.choice(leaves)))
    while len(triples) < size:
        i = rng.randrange(N_PROPS)
        s = rng.choice(ents)
        if i == LIT_PROP:
            triples.add((s, props[i], f'"name {rng.randrange(n_entities)}"'))
        elif rng.random() < 0.02:
            triples.add((s, props[i], f"_:b{rng.randrange(n_entities)}"))
        else:
            triples.add((s, props[i], rng.choice(ents)))
    return sorted(triples)


# ---------------------------------------------------------------------------------------
# normalisation shared by the workers


def rdflib_graph(triples):
    from rdflib import BNode, Graph, Literal, URIRef

    def term(t):
        if t.startswith("_:"):
            return BNode(t[2:])
        if t.startswith('"'):
            return Literal(t[1:-1])
        return URIRef(t)

    g = Graph()
    for s, p, o in triples:
        g.add((term(s), term(p), term(o)))
    return g


def to_str(t) -> str:
    from rdflib import BNode, Literal

    if isinstance(t, Literal):
        if t.language is None and (t.datatype is None or str(t.datatype) == XSD_STRING):
            return '"' + str(t) + '"'
        return t.n3()
    if isinstance(t, BNode):
        return "_:" + str(t)
    return str(t)


VOCAB_CLASSES = {RDFS + "Resource", RDFS + "Class", RDF + "Property", RDFS + "Literal", RDFS + "Datatype",
                 RDFS + "ContainerMembershipProperty"}
OWL = "http://www.w3.org/2002/07/owl#"


def restrict_owlrl(triples):
    reflexive_ok = {f"{EX}p{i}" for i in SPO_CYCLE}
    for s, p, o in triples:
        if s.startswith('"') or o in VOCAB_CLASSES:
            continue
        if p == SPO and s == o and s not in reflexive_ok:
            continue
        yield s, p, o


def restrict_reasonable(triples, asserted):
    for t in triples:
        if any(x.startswith(OWL) for x in t):
            continue
        if t[1] in (DOM, RNG, SPO) and t not in asserted:
            continue
        yield t


def digest(triples) -> tuple[int, str]:
    lines = sorted(" ".join(t) for t in set(triples))
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return len(lines), h.hexdigest()


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def dump(triples, path: str | None, suffix: str = "") -> None:
    """Write the compared triples, one a line, so a disagreement can name them."""
    if path:
        with open(path + suffix, "w", encoding="utf-8") as fh:
            fh.writelines(" ".join(t) + "\n" for t in sorted(set(triples)))


def differences(engine: str, theirs: str, ours: str, size: int, shown: int = 3) -> str:
    """One line: the triples `engine` and kgprobe disagree on, counted, with examples."""
    def read(path):
        with open(path, encoding="utf-8") as fh:
            return set(fh.read().splitlines())

    a, b = read(ours), read(theirs)
    only_k, only_e = sorted(a - b), sorted(b - a)
    return (f"rdfs_closure: DISAGREEMENT at {label(size)}: kgprobe has {len(only_k)} triples "
            f"{engine} lacks (e.g. {only_k[:shown]}), {engine} has {len(only_e)} kgprobe lacks "
            f"(e.g. {only_e[:shown]})")


def worker(engine: str, size: int, seed: int, dump_to: str | None = None) -> dict:
    triples = make_graph(size, seed)
    asserted = set(triples)
    if engine == "kgprobe":
        from kgprobe.reasoning.rdfs import closure

        base = rss_mb()
        t0 = time.perf_counter()
        c = closure(triples)
        dt = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out = c.asserted | c.rdf_inferred  # legal RDF, as the others' outputs
        vs_reasonable = [t for t in out if t[1] != SPO or t in asserted]
        extra = {"inferred": len(c.inferred),
                 "digest_vs_reasonable": digest(vs_reasonable)[1]}
        dump(vs_reasonable, dump_to, ".vs-reasonable")
    elif engine == "owlrl":
        import owlrl

        g = rdflib_graph(triples)
        base = rss_mb()
        t0 = time.perf_counter()
        owlrl.DeductiveClosure(owlrl.RDFS_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(g)
        dt = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out = restrict_owlrl((to_str(s), to_str(p), to_str(o)) for s, p, o in g)
        extra = {}
    elif engine == "reasonable":
        import reasonable

        g = rdflib_graph(triples)
        base = rss_mb()
        t0 = time.perf_counter()
        r = reasonable.PyReasoner()
        r.from_graph(g)
        t1 = time.perf_counter()
        res = r.reason()
        t2 = time.perf_counter()
        dt, reason_only = t2 - t0, t2 - t1
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out = restrict_reasonable(((to_str(s), to_str(p), to_str(o)) for s, p, o in res), asserted)
        extra = {"reason_only_s": reason_only}
    else:
        raise SystemExit(f"unknown engine {engine}")
    out = set(out)
    dump(out, dump_to)
    n, h = digest(out)
    return {"engine": engine, "seconds": dt, "peak_mb": round(peak, 1), "input_mb": round(base, 1),
            "closure_triples": n, "digest": h, **extra}


def run_worker(engine: str, size: int, seed: int, dump_to: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--sizes", str(size),
           "--seed", str(seed), "--dump", dump_to]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{engine} worker failed at size {size}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10k,50k,1m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-owlrl", action="store_true")
    ap.add_argument("--skip-reasonable", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if args.worker:
        print(json.dumps(worker(args.worker, sizes[0], args.seed, args.dump)))
        return 0
    import tempfile

    if not args.skip_reasonable and importlib.util.find_spec("reasonable") is None:
        print("bench/rdfs_closure: `reasonable` is not installed: install the bench extra "
              "(pip install -e '.[bench]') or pass --skip-reasonable", file=sys.stderr)
        return 2
    failed = False
    tmp = tempfile.TemporaryDirectory(prefix="rdfs-closure-")
    for size in sizes:
        out = {e: os.path.join(tmp.name, f"{e}-{size}.nt") for e in ("kgprobe", "owlrl", "reasonable")}
        res = {"kgprobe": run_worker("kgprobe", size, args.seed, out["kgprobe"])}
        if not args.skip_owlrl and size <= OWLRL_MAX:
            res["owlrl"] = run_worker("owlrl", size, args.seed, out["owlrl"])
        if not args.skip_reasonable:
            res["reasonable"] = run_worker("reasonable", size, args.seed, out["reasonable"])
        k = res["kgprobe"]
        line = {"bench": "rdfs_closure", "engines": sorted(res), "size": label(size), "triples": size, "closure_triples": k["closure_triples"],
                "kgprobe_s": round(k["seconds"], 3), "owlrl_s": None, "reasonable_s": None,
                "kgprobe_peak_mb": k["peak_mb"], "kgprobe_input_mb": k["input_mb"]}
        for eng in ("owlrl", "reasonable"):
            if eng in res:
                line[f"{eng}_s"] = round(res[eng]["seconds"], 3)
                line[f"{eng}_peak_mb"] = res[eng]["peak_mb"]
                line[f"{eng}_input_mb"] = res[eng]["input_mb"]
        if "reasonable" in res:
            line["reasonable_reason_only_s"] = round(res["reasonable"]["reason_only_s"], 3)
        line["speedup_vs_owlrl"] = round(line["owlrl_s"] / k["seconds"], 1) if line["owlrl_s"] else None
        line["speedup_vs_reasonable"] = round(line["reasonable_s"] / k["seconds"], 2) if line["reasonable_s"] else None
        if "reasonable" in res:
            line["speedup_vs_reasonable_reason_only"] = round(res["reasonable"]["reason_only_s"] / k["seconds"], 2)
        agree = {"owlrl": k["digest"], "reasonable": k["digest_vs_reasonable"]}
        others = [e for e in res if e != "kgprobe"]
        line["agree"] = all(res[e]["digest"] == agree[e] for e in others) if others else None
        if line["agree"] is False:
            line["counts"] = {e: r["closure_triples"] for e, r in res.items()}
        print(json.dumps(line), flush=True)
        for e in others:
            if res[e]["digest"] != agree[e]:
                ours = out["kgprobe"] + (".vs-reasonable" if e == "reasonable" else "")
                print(differences(e, out[e], ours, size), file=sys.stderr, flush=True)
                failed = True
    tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
