"""Materializing the RDFS closure into the store's `urn:kgprobe:inferred` graph.

A SKOS thesaurus is reasoned over as `generate` reads it (`ontology/skos.py`, `--skos`): its
`skos:broader` edges, where read as `rdfs:subClassOf`, are stored in the inferred graph and
feed the closure, so `kg query` sees the subclass triples the probes are written from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from kgprobe.errors import InferenceLimitError
from kgprobe.kg.store import INFERRED_GRAPH, KnowledgeGraph
from kgprobe.ontology.skos import skos_mapping
from kgprobe.reasoning.owl import PROVENANCE
from kgprobe.reasoning.rdfs import RULES, Closure, closure


@dataclass
class ReasonReport:
    rules: tuple[str, ...]
    asserted: int  # distinct triples reasoned over
    inferred: int  # triples in the inferred graph afterwards
    added: int  # how many of those the store did not hold before
    held_back: int  # inferred generalized triples that are not legal RDF (never stored)
    derived_by: dict[str, int]
    seconds: float
    closure: Closure
    #: HermiT's conclusions beyond the asserted triples (`--owl`), stored with provenance
    #: ``owl:hermit``; the RDFS rules then run over asserted ∪ these.
    owl: set = field(default_factory=set)
    unsatisfiable: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # HermiT's (datatypes it ignored)

    def write_provenance(self, path, max_bytes: int | None = None) -> int:
        """Every one-step derivation as JSONL: HermiT's conclusions first (rule
        ``owl:hermit``, no premises: HermiT gives no justification), then the RDFS ones;
        at most `max_bytes` (else an `OutputError` and no file)."""
        hermit = ({"rule": PROVENANCE, "conclusion": list(t), "premises": []}
                  for t in sorted(self.owl))
        return self.closure.write_jsonl(path, head=hermit, max_bytes=max_bytes)


def asserted_triples(kg: KnowledgeGraph) -> set:
    return {t for g in kg.asserted_graphs() for t in kg.triples(g)}


def reasoning_base(kg: KnowledgeGraph) -> tuple[set, set]:
    """(asserted triples, HermiT's stored conclusions): what generation reasons from.

    HermiT's conclusions are premises like asserted triples (an OWL subsumption then feeds
    rdfs9/rdfs11 items), but only while the inferred graph is fresh."""
    asserted = asserted_triples(kg)
    owl = kg.provenance(PROVENANCE)
    if owl:
        kg.require_fresh()
    return asserted, owl


#: The default `--max-inferred`: this many inferred triples per triple reasoned over, and at
#: least `INFERRED_FLOOR`. Published ontologies derive less than one triple per asserted one
#: (the DBpedia ontology 0.06, pizza 0.11, the test ontologies at most 0.5) and an instance
#: graph about four (bench/rdfs_closure.py: 1M asserted, 3.7M inferred), so 10 leaves room;
#: a chain of n classes derives n/2 per triple (n²/2 in all), the growth the bound exists for.
INFERRED_PER_ASSERTED = 10
#: A small input may still derive this many: storing 500,000 inferred triples took 0.9 GB and
#: 23 s on the 2-core development machine, so a million is about twice that, within a laptop's
#: memory; a 2,000-class chain (1,999 triples, two million inferred) is past it.
INFERRED_FLOOR = 1_000_000


def default_max_inferred(asserted: int) -> int:
    """The bound `reason` applies when `--max-inferred` is not given: tied to the input, so a
    big graph may derive in proportion and a small file cannot derive millions."""
    return max(INFERRED_FLOOR, INFERRED_PER_ASSERTED * asserted)


def inference_limit(asserted: int, max_inferred: int | None) -> int | None:
    """`max_inferred` as the engine takes it: None → the default, 0 → no limit."""
    if max_inferred is None:
        return default_max_inferred(asserted)
    return max_inferred or None


def _suggest(derived: int) -> int:
    """A round `--max-inferred` above `derived` (two significant digits)."""
    step = 10 ** max(len(str(derived)) - 2, 0)
    return -(-derived // step) * step


def too_many(err: InferenceLimitError, asserted: int, explicit: bool) -> InferenceLimitError:
    """The one line a refused `reason` prints: the count, the bound, where it came from, and
    the fix. Deriving stops as soon as the bound is passed (that is what keeps its memory
    small), so the count is often a lower bound: then no number is suggested."""
    origin = (f"--max-inferred {err.limit:,}" if explicit else
              f"the default --max-inferred {err.limit:,} ({INFERRED_PER_ASSERTED} per triple "
              f"reasoned over, at least {INFERRED_FLOOR:,})")
    count, fix = (f"{err.derived:,}", f"`kgprobe reason --max-inferred {_suggest(err.derived)}`")
    if not err.exact:
        count, fix = f"at least {err.derived:,}", "`kgprobe reason` with a larger --max-inferred"
    return InferenceLimitError(
        err.derived, err.limit, f"reasoning over {asserted:,} triples derives {count} triples, "
        f"more than {origin}; nothing was stored (the inferred graph is as it was): run {fix} "
        "to allow it (0: no limit), or pass fewer --rules", exact=err.exact)


#: How `reasoned_with` records the SKOS reading: ``skos:MODE`` (the `--skos` asked for).
SKOS_MARK = "skos:"


def skos_edges(asserted: set, mode: str = "auto") -> set:
    """The subclass (and in ``leaves`` mode type) triples the SKOS reading `mode` derives from
    `asserted`, as `generate` reads them (none for a topical scheme under ``auto``)."""
    mapping = skos_mapping(asserted, mode)
    return set(mapping.triples) if mapping else set()


def stored_skos_mode(kg: KnowledgeGraph) -> str | None:
    """The `--skos` the inferred graph was last computed with (``auto`` when reasoned before
    the reading was recorded), or None when the store was never reasoned."""
    last = kg.reasoned_with()
    if not last:
        return None
    return next((r[len(SKOS_MARK):] for r in last if r.startswith(SKOS_MARK)), "auto")


def materialize(kg: KnowledgeGraph, rules: Iterable[str] = RULES, *,
                owl: bool = False, ignore_imports: bool = False,
                skos: str = "auto", owl_timeout: float | None = None,
                progress=None, max_inferred: int | None = None) -> ReasonReport:
    """Replace the inferred graph with the closure of every other graph.

    The closure is computed completely before the store is touched, and only its legal
    RDF triples replace the inferred graph, in one transaction together with the
    fingerprint of the sources it was computed from: a failure or a crash leaves the old
    inferences (and their freshness) as they were.  Reasoning always starts from the
    asserted graphs, so running it twice adds nothing.  `owl_timeout` (seconds, default
    `owl.DEFAULT_TIMEOUT_S`) stops HermiT, and with it the whole run, before anything is
    stored; `progress` hears how HermiT is getting on.  `max_inferred` bounds the triples the
    inferred graph may hold (None: `default_max_inferred` of the input; 0: no limit): past it
    an `InferenceLimitError` while deriving, and nothing is stored.
    """
    start = time.perf_counter()
    asserted = asserted_triples(kg)
    hermit, unsatisfiable, warnings = set(), [], []
    if owl:
        from kgprobe.reasoning.owl import DEFAULT_TIMEOUT_S, classify

        found = classify(asserted, ignore_imports=ignore_imports, progress=progress,
                         timeout=owl_timeout or DEFAULT_TIMEOUT_S)
        hermit, unsatisfiable, warnings = found.triples, found.unsatisfiable, found.warnings
    mapped = skos_edges(asserted, skos) - asserted
    base = asserted | hermit | mapped
    limit = inference_limit(len(base), max_inferred)
    try:
        result = closure(base, rules, max_inferred=limit)
        stored = result.rdf_inferred | hermit | mapped
        if limit is not None and len(stored) > limit:
            raise InferenceLimitError(len(stored), limit, exact=True)
    except InferenceLimitError as err:
        raise too_many(err, len(base), max_inferred is not None) from None
    before = set(kg.triples(INFERRED_GRAPH))
    mark = f"{SKOS_MARK}{skos}"
    used = tuple(result.rules) + ((PROVENANCE,) if owl else ()) + (
        (mark,) if mapped or skos != "auto" else ())
    kg.replace_inferred(sorted(stored), provenance={PROVENANCE: sorted(hermit)} if hermit else None,
                        reasoned_with=used)
    derived_by = result.derived_by()
    if owl:
        derived_by[PROVENANCE] = len(hermit)
    if mark in used:
        derived_by[mark] = len(mapped)
    return ReasonReport(used, len(asserted),
                        len(stored), len(stored - before), len(result.held_back), derived_by,
                        time.perf_counter() - start, result, hermit, unsatisfiable, warnings)


def reason_again(kg: KnowledgeGraph, progress=None, skos: str = "auto",
                 max_inferred: int | None = None) -> ReasonReport:
    """`--reason`: re-run reasoning as the store was last reasoned (its rules; HermiT when
    that was `reason --owl`), or every RDFS rule when it never was.  Imports that are not
    loaded are ignored, as `reason --owl` had them (its check already ran; `kg load --reason`
    has no --ignore-imports to offer). `skos`: the `--skos` the load was given; a mode other
    than ``auto`` wins over the stored one, so `kg load --skos classes --reason` stores the
    subclass edges that `generate --skos classes` reads. `max_inferred`: as `materialize`."""
    last = kg.reasoned_with()
    rules = [r for r in last if r != PROVENANCE and not r.startswith(SKOS_MARK)] or RULES
    mode = skos if skos != "auto" else stored_skos_mode(kg) or "auto"
    return materialize(kg, rules, owl=PROVENANCE in last, ignore_imports=True,
                       skos=mode, progress=progress, max_inferred=max_inferred)


def clear(kg: KnowledgeGraph) -> int:
    """Remove the inferred graph; returns how many triples it held."""
    n = kg.count(INFERRED_GRAPH)
    kg.clear_inferred()
    return n
