"""How the fixtures here were cut from the published files (kept for the record; not a test).

    python tests/data/ontologies/make_slices.py SOURCE OUT.ttl [--classes N] [--props N]
        [--instances N] [--deprecated N] [--english] [--format xml|nt]

A slice keeps the ontology header, the annotation-property declarations, deprecated terms,
N classes with every ancestor (so the hierarchy reaches its roots), N properties, N
instances, and for every kept subject all its triples and the blank nodes hanging from them.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS

OBO_OBSOLETE = URIRef("http://www.geneontology.org/formats/oboInOwl#is_obsolete")
SUPERSEDED = (URIRef("http://schema.org/supersededBy"), URIRef("https://schema.org/supersededBy"))
TERM_STATUS = URIRef("http://www.w3.org/2003/06/sw-vocab-status/ns#term_status")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--format", default=None)
    ap.add_argument("--classes", type=int, default=40)
    ap.add_argument("--props", type=int, default=25)
    ap.add_argument("--instances", type=int, default=15)
    ap.add_argument("--deprecated", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--english", action="store_true",
                    help="keep only untagged and English literals (DCAT's six languages)")
    a = ap.parse_args()
    g = Graph()
    g.parse(a.source, format=a.format)
    rng = random.Random(a.seed)
    by_subject = defaultdict(list)
    for t in g:
        by_subject[t[0]].append(t)
    keep: set = set(g.subjects(RDF.type, OWL.Ontology))
    keep |= set(g.subjects(RDF.type, OWL.AnnotationProperty))
    deprecated = sorted({s for s in g.subjects(OWL.deprecated, None)} |
                        {s for s in g.subjects(OBO_OBSOLETE, None)} |
                        {s for p in SUPERSEDED for s in g.subjects(p, None)} |
                        {s for s, o in g.subject_objects(TERM_STATUS) if str(o) == "archaic"} |
                        {s for s, o in g.subject_objects(RDFS.label)
                         if str(o).lower().startswith("obsolete")}, key=str)
    keep |= set(rng.sample(deprecated, min(a.deprecated, len(deprecated))))
    classes = sorted({s for s in g.subjects(RDF.type, OWL.Class) if isinstance(s, URIRef)} |
                     {s for s in g.subjects(RDF.type, RDFS.Class) if isinstance(s, URIRef)}, key=str)
    props = sorted({s for t in (OWL.ObjectProperty, OWL.DatatypeProperty, RDF.Property)
                    for s in g.subjects(RDF.type, t) if isinstance(s, URIRef)}, key=str)
    schema = set(classes) | set(props) | keep
    insts = sorted({s for s, o in g.subject_objects(RDF.type)
                    if isinstance(s, URIRef) and o not in (OWL.Class, RDFS.Class) and
                    s not in schema and str(o).split("#")[0] not in (str(OWL)[:-1],)}, key=str)
    picked = set(rng.sample(classes, min(a.classes, len(classes))))
    picked |= set(rng.sample(props, min(a.props, len(props))))
    picked |= set(rng.sample(insts, min(a.instances, len(insts))))
    # ancestors, so the hierarchy reaches its roots
    stack = list(picked)
    while stack:
        node = stack.pop()
        for p in (RDFS.subClassOf, RDFS.subPropertyOf, RDF.type):
            for parent in g.objects(node, p):
                if isinstance(parent, URIRef) and parent not in picked and parent in by_subject:
                    picked.add(parent)
                    stack.append(parent)
    keep |= picked
    out = Graph()
    for prefix, ns in g.namespaces():
        out.bind(prefix, ns)
    todo = list(keep)
    seen = set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for t in by_subject.get(node, ()):
            if a.english and isinstance(t[2], Literal) and t[2].language not in (None, "en"):
                continue
            out.add(t)
            if isinstance(t[2], BNode):
                todo.append(t[2])
    out.serialize(a.out, format="turtle")


if __name__ == "__main__":
    main()
