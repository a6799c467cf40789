"""`kgprobe kg pull`: the OntoProbe paper's §2.1 ontology, built from a SPARQL endpoint.

The paper retrieves DBpedia's classes, their superclasses by the subclass-of relation, 20
sampled instances per class by the type relation, and properties with their domain, range and
superproperties, cleansed "using the collected class set as vocabulary".  We do the same against
any endpoint:

1. classes: every IRI typed owl:Class or rdfs:Class (optionally only under `--namespace`);
2. superclass chains: each class's rdfs:subClassOf edges to other collected classes (the chains
   are these edges' transitive closure, which `kgprobe reason` materializes);
3. instances: per class, up to `pool` instances in IRI order, of which `instances` are drawn
   with a generator seeded by (seed, class IRI): the same seed gives the same sample whatever
   the order of the classes;
4. properties (rdf:Property, owl:ObjectProperty, owl:DatatypeProperty) with rdfs:domain and
   rdfs:range kept when they are collected classes, rdfs:subPropertyOf kept between properties;
5. English (`--lang`) rdfs:labels of everything collected.

Every query text is recorded with the endpoint, seed and sample size in the store's meta graph.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Iterator

from kgprobe.kg.endpoint import SparqlEndpoint
from kgprobe.kg.terms import lit
from kgprobe.ontology.loaders import ox_term as from_ox
from kgprobe.ontology.model import KGP, OWL, RDF, RDFS, Triple

_BATCH = 100  # IRIs per VALUES block: short enough for any endpoint's request limit


@dataclass
class PullOptions:
    instances: int = 20
    seed: int = 0
    namespace: str | None = None
    lang: str = "en"
    pool: int = 1000


@dataclass
class PullReport:
    triples: list[Triple]
    classes: int = 0
    subclass_edges: int = 0
    instances: int = 0
    properties: int = 0
    queries: list[str] = field(default_factory=list)  # the query templates, in order


def _ns_filter(var: str, namespace: str | None) -> str:
    return f'FILTER(isIRI(?{var}) && STRSTARTS(STR(?{var}), {lit(namespace)}))' if namespace \
        else f"FILTER(isIRI(?{var}))"


def _batches(items: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(items), _BATCH):
        yield items[i:i + _BATCH]


class Puller:
    """Runs the §2.1 queries against one endpoint and collects the triples and the queries."""

    def __init__(self, endpoint: SparqlEndpoint, opts: PullOptions):
        self.endpoint, self.opts = endpoint, opts
        self.report = PullReport(triples=[])

    def _record(self, template: str) -> str:
        if template not in self.report.queries:
            self.report.queries.append(template)
        return template

    def _values(self, template: str, iris: list[str]) -> Iterable:
        """Run a query with `{values}` replaced by batches of IRIs (VALUES ?s { … })."""
        self._record(template)
        for batch in _batches(iris):
            yield from self.endpoint.select(template.replace(
                "{values}", "VALUES ?s { " + " ".join(f"<{i}>" for i in batch) + " }"))

    def classes(self) -> list[str]:
        q = self._record("SELECT DISTINCT ?c WHERE { { ?c a owl:Class } UNION { ?c a rdfs:Class } "
                         f"{_ns_filter('c', self.opts.namespace)} }}")
        return sorted(row["c"].value for row in self.endpoint.select_paged(q, "?c"))

    def superclasses(self, classes: list[str]) -> list[Triple]:
        known = set(classes)
        rows = self._values("SELECT ?s ?o WHERE { {values} ?s rdfs:subClassOf ?o }", classes)
        return sorted({(r["s"].value, RDFS + "subClassOf", r["o"].value) for r in rows
                       if r["o"].value in known and r["o"].value != r["s"].value})

    def sample_instances(self, cls: str) -> list[str]:
        template = self._record("SELECT DISTINCT ?i WHERE { ?i a <CLASS> FILTER(isIRI(?i)) } "
                                "ORDER BY ?i LIMIT POOL")
        q = template.replace("CLASS", cls).replace("POOL", str(self.opts.pool))
        pool = [row["i"].value for row in self.endpoint.select(q)]
        rng = random.Random(f"{self.opts.seed}:{cls}")
        return sorted(rng.sample(pool, min(self.opts.instances, len(pool))))

    def properties(self) -> dict[str, str]:
        q = self._record("SELECT ?p ?k WHERE { VALUES ?k { rdf:Property owl:ObjectProperty "
                         f"owl:DatatypeProperty }} ?p a ?k {_ns_filter('p', self.opts.namespace)} }}")
        kinds: dict[str, str] = {}
        rows = self.endpoint.select_paged(q, "?p ?k")
        for row in sorted(rows, key=lambda r: (r["p"].value, r["k"].value)):
            kinds.setdefault(row["p"].value, row["k"].value)
        return kinds

    def property_facts(self, props: list[str], classes: set[str]) -> list[Triple]:
        out = set()
        for pred, vocabulary in (("domain", classes), ("range", classes),
                                 ("subPropertyOf", set(props))):
            rows = self._values(f"SELECT ?s ?o WHERE {{ {{values}} ?s rdfs:{pred} ?o }}", props)
            out |= {(r["s"].value, RDFS + pred, r["o"].value) for r in rows
                    if r["o"].value in vocabulary and r["o"].value != r["s"].value}
        return sorted(out)

    def labels(self, iris: list[str]) -> list[Triple]:
        lang = lit(self.opts.lang)
        rows = self._values("SELECT ?s ?o WHERE { {values} ?s rdfs:label ?o "
                            f"FILTER(langMatches(lang(?o), {lang})) }}", iris)
        return sorted({(r["s"].value, RDFS + "label", from_ox(r["o"])) for r in rows})

    def run(self) -> PullReport:
        classes = self.classes()
        triples = [(c, RDF + "type", OWL + "Class") for c in classes]
        edges = self.superclasses(classes)
        members: list[str] = []
        for cls in classes:
            for inst in self.sample_instances(cls):
                triples.append((inst, RDF + "type", cls))
                members.append(inst)
        kinds = self.properties()
        props = sorted(kinds)
        triples += [(p, RDF + "type", kinds[p]) for p in props]
        facts = self.property_facts(props, set(classes))
        labelled = sorted(set(classes) | set(props) | set(members))
        triples += edges + facts + self.labels(labelled)
        r = self.report
        r.triples = sorted(set(triples))
        r.classes, r.subclass_edges, r.properties = len(classes), len(edges), len(props)
        r.instances = len(set(members))
        return r


def provenance(endpoint_url: str, opts: PullOptions, report: PullReport) -> list[tuple[str, str]]:
    """(predicate, SPARQL object) pairs for the meta graph: where the graph came from and how."""
    now = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    facts = [(KGP + "pulledFrom", f"<{endpoint_url}>"),
             (KGP + "pulledAt", f'"{now}"^^<http://www.w3.org/2001/XMLSchema#dateTime>'),
             (KGP + "pullSeed", lit(str(opts.seed))),
             (KGP + "pullInstancesPerClass", lit(str(opts.instances))),
             (KGP + "pullPool", lit(str(opts.pool)))]
    if opts.namespace:
        facts.append((KGP + "pullNamespace", lit(opts.namespace)))
    facts += [(KGP + "pullQuery", lit(q)) for q in report.queries]
    return facts
