"""RDFS entailment: the closure of a set of triples under six W3C RDF 1.1 Semantics rules.

Algorithm (chosen by measurement; the numbers are in the comment after the imports):

* Terms are interned to integer ids in *sorted string order* (so every enumeration
  order below is deterministic and independent of input order and hash seed), and
  the triples of each predicate are kept as one sorted, duplicate-free ``int64``
  numpy array of keys ``subject * N + object``.  A predicate-independent key means
  rdfs7 moves facts between predicates without decoding them.
* Each rule is an *operator* that reads some predicates ("schema" ones such as
  ``rdfs:subClassOf`` for rdfs9, and "fact" ones such as ``rdf:type``) and adds
  triples.  Operators are evaluated semi-naively: each remembers how much of every
  predicate's append-log it has consumed; when a schema predicate changed it
  re-runs over everything, otherwise it joins only the new facts with the full
  schema.  rdfs7 and rdfs9 propagate along the *reachability* relation of the
  subPropertyOf / subClassOf graph (iterated application of the rule), rdfs5 /
  rdfs11 add that transitive closure; reachability is computed once per schema
  change by a Tarjan SCC pass (paths of length >= 1, so ``A sub B sub A`` gives
  ``A sub A`` exactly as the W3C rules and owlrl do).
* Strata run in the order rdfs5, rdfs7, rdfs2, rdfs3, rdfs11, rdfs9 and the whole
  sequence repeats until one pass adds nothing.  Nothing is special-cased for
  "schema" versus "data": every triple is a fact of its predicate, so a property
  declared ``rdfs:subPropertyOf rdfs:subClassOf`` or a domain on
  ``rdfs:subClassOf`` just makes a schema predicate change, which forces the
  affected operators to re-run in full.  The usual graph needs two passes, the
  second of which sees no new input for any operator and costs nothing.

Generalized triples (RDF 1.1 Semantics, section 9.2.1): the rules apply to triples
with literal subjects and blank-node predicates, because RDFS entailment is defined
over them, so rdfs3 types literal objects (``"lit" rdf:type C``) and those triples
feed every rule (with ``rdf:type rdfs:range R`` they yield ``C rdf:type R``, as owlrl
derives).  `Closure.inferred` holds them all; `Closure.held_back` names the ones that
are not legal RDF (literal subject, non-IRI predicate), which a store must not hold.
One choice where the rules are silent: rdfs7 is skipped when the super-property is a
literal (owlrl does the same).  Blank nodes are ordinary terms everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np
from kgprobe.atomic import atomic_path
from kgprobe.errors import KgprobeError, OutputError
from kgprobe.guard import human
from kgprobe.ontology.model import (
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    RDFS_SUBPROPERTYOF,
    Triple,
)
from kgprobe.reasoning.rdfs_engine import Engine, build_store, intern
from kgprobe.reasoning.rule_names import RULES
from kgprobe.reasoning.rdfs_keys import EMPTY, csr, dedup_sorted, expand, isin_sorted



class UnknownRuleError(KgprobeError, ValueError):
    """A rule name that is not one of `RULES`."""

    def __init__(self, rule: object):
        self.rule = rule
        super().__init__(f"unknown RDFS rule {rule!r}; valid rules are: {', '.join(RULES)}")


def _check_rules(rules: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(rules, str):
        rules = (rules,)
    chosen = set()
    for r in rules:
        if r not in RULES:
            raise UnknownRuleError(r)
        chosen.add(r)
    return tuple(r for r in RULES if r in chosen)


@dataclass(frozen=True)
class Derivation:
    """One application of a rule: ``premises`` = (P1 schema premise, P2 instance premise)."""

    rule: str
    conclusion: Triple
    premises: tuple[Triple, Triple]

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "conclusion": list(self.conclusion),
            "premises": [list(self.premises[0]), list(self.premises[1])],
        }


# --------------------------------------------------------------------------------------
# public API


@dataclass
class Closure:
    """The closure of `asserted` under `rules`.

    `inferred` holds the derived triples that were not asserted.  The integer index
    the closure was computed with is kept privately for `derivations()` and
    `derived_by()`; a hand-built Closure rebuilds it on first use.
    """

    asserted: frozenset[Triple]
    inferred: frozenset[Triple]
    rules: tuple[str, ...] = RULES
    _engine: Engine | None = field(default=None, repr=False, compare=False)
    _base: dict[int, np.ndarray] | None = field(default=None, repr=False, compare=False)
    _derived_by: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.rules = _check_rules(self.rules)

    @property
    def held_back(self) -> frozenset[Triple]:
        """Inferred generalized triples that are not legal RDF (see `is_rdf_triple`)."""
        return frozenset(t for t in self.inferred if not is_rdf_triple(t))

    @property
    def rdf_inferred(self) -> frozenset[Triple]:
        """The inferred triples a store can hold: `inferred` minus `held_back`."""
        return frozenset(t for t in self.inferred if is_rdf_triple(t))

    # -- index ----------------------------------------------------------------------
    def _index(self) -> tuple[Engine, dict[int, np.ndarray]]:
        if self._engine is None:
            terms, arr = intern(chain(self.asserted, self.inferred))
            st, _ = build_store(terms, arr)
            a_terms = {t: i for i, t in enumerate(terms)}
            base: dict[int, list[int]] = {}
            for s, p, o in self.asserted:
                base.setdefault(a_terms[p], []).append(a_terms[s] * st.n + a_terms[o])
            self._base = {p: np.unique(np.asarray(k, dtype=np.int64)) for p, k in base.items()}
            self._engine = Engine(terms, st)
        return self._engine, self._base

    def _inferred_keys(self, p: int) -> np.ndarray:
        eng, base = self._index()
        full = eng.store.get(p)
        b = base.get(p)
        return full if b is None else full[~isin_sorted(full, b)]

    # -- attribution ------------------------------------------------------------------
    def derived_by(self) -> dict[str, int]:
        """Per rule in `rules`: how many triples of `inferred` it derives in ONE step.

        A step is one application of the rule to two triples of the full closure
        (asserted and inferred).  Counts overlap: a triple derivable by several rules
        (e.g. ``x rdf:type C`` by both rdfs2 and rdfs9) counts once under each, so the
        sum can exceed ``len(inferred)``; every inferred triple counts under at least
        one rule because the closure is the least fixpoint.
        """
        if self._derived_by is None:
            counts: dict[str, int] = {}
            for rule in self.rules:
                by_pred = self._conclusions(rule)
                total = 0
                for p, cand in by_pred.items():
                    cand = dedup_sorted(np.sort(cand))
                    total += int(isin_sorted(cand, self._inferred_keys(p)).sum())
                counts[rule] = total
            self._derived_by = counts
        return dict(self._derived_by)

    def _conclusions(self, rule: str) -> dict[int, np.ndarray]:
        """All one-step conclusions of a rule over the closure, as keys per predicate."""
        eng, _ = self._index()
        st, n = eng.store, eng.store.n

        if rule in ("rdfs2", "rdfs3"):
            out = []
            for a, classes in eng.grouped(eng.DOM if rule == "rdfs2" else eng.RNG).items():
                facts = st.get(a)
                if rule == "rdfs2":
                    ends = dedup_sorted(facts // n)
                else:
                    ends = np.unique(facts % n)
                out.append((ends[:, None] * n + classes[None, :]).ravel())
            return {eng.TYPE: np.concatenate(out) if out else EMPTY}
        if rule in ("rdfs5", "rdfs11"):
            p = eng.SPO if rule == "rdfs5" else eng.SCO
            # (x p y), (y p z) => (x p z): expand each pair by the steps from its object
            return {p: expand(st.get(p), n, self._steps(p), by_object=True)}
        if rule == "rdfs9":
            return {eng.TYPE: expand(st.get(eng.TYPE), n, self._steps(eng.SCO), by_object=True)}
        # rdfs7
        out7: dict[int, list[np.ndarray]] = {}
        for a, supers in eng.grouped(eng.SPO).items():
            facts = st.get(a)
            if facts.size:
                for b in supers.tolist():
                    if not eng.is_literal[b]:
                        out7.setdefault(b, []).append(facts)
        return {b: np.concatenate(c) for b, c in out7.items()}

    def _steps(self, p: int):
        """The steps whose transitive closure is p's pairs in the closure, as CSR successor
        lists: p's asserted pairs and what rdfs7 puts into p.  One step over the closure
        (C∘C for rdfs5/rdfs11, T∘C for rdfs9) concludes exactly what one step over these
        does (C∘D, T∘D: C = D⁺ and C, T are closed under D), and costs the closure's size
        instead of its square: C∘C of a 1,000-class chain built 166M keys (4.4 GB) after
        `reason` had stored its 500,000 inferences."""
        eng, base = self._index()
        st, n = eng.store, eng.store.n
        keys = [base.get(p, EMPTY)]
        if "rdfs7" in self.rules:  # the facts of p's sub-properties (itself aside)
            keys += [st.get(a) for a, supers in eng.grouped(eng.SPO).items()
                     if a != p and p in supers]
        k = dedup_sorted(np.sort(np.concatenate(keys)))
        s, o = k // n, k % n
        d: dict[int, frozenset[int]] = {}
        if s.size:
            cut = np.flatnonzero(s[1:] != s[:-1]) + 1
            for g, oo in zip(np.split(s, cut), np.split(o, cut)):
                d[int(g[0])] = frozenset(oo.tolist())
        return csr(d)

    # -- provenance ---------------------------------------------------------------------
    def derivations(self, rule: str | None = None) -> Iterator[Derivation]:
        """Lazily yield every one-step derivation over the full closure.

        Covers the given rule (or all of `rules`, in `RULES` order), including
        derivations whose conclusion was asserted.  Order is deterministic: by rule,
        then by the P1 premise, then by the P2 premise, terms compared as strings.
        """
        if rule is None:
            wanted = self.rules
        else:
            if rule not in RULES:
                raise UnknownRuleError(rule)
            if rule not in self.rules:
                raise ValueError(f"rule {rule!r} was not applied in this closure (rules: {', '.join(self.rules)})")
            wanted = (rule,)
        return self._iter_derivations(wanted)

    def _iter_derivations(self, wanted: tuple[str, ...]) -> Iterator[Derivation]:
        """One-step derivations of the wanted rules, rebuilt from the closure's indexes."""
        eng, _ = self._index()
        for rule in wanted:
            yield from _DERIVE[rule](eng, rule)

    def write_jsonl(self, path, rule: str | None = None, head: Iterable[dict] = (),
                    max_bytes: int | None = None) -> int:
        """Write `derivations(rule)` as JSON lines (atomically: temp file, then rename),
        after the rows of `head` (another reasoner's conclusions, e.g. HermiT's).

        `max_bytes` bounds the file: the derivations of a deep chain grow with its depth
        cubed (a 200-deep chain of 1,400 triples passed 4 GB), so past it the write stops
        with an `OutputError` and no file (tests/test_store_files.py)."""
        count = size = 0
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            for row in chain(head, (d.to_json() for d in self.derivations(rule))):
                line = (dumps(row) + "\n").encode("utf-8")
                size += len(line)
                if max_bytes is not None and size > max_bytes:
                    raise OutputError(f"--provenance {path}: the derivations passed "
                                      f"--max-provenance ({human(max_bytes)}) after {count} rows "
                                      "and were not written; raise --max-provenance (0: no "
                                      "limit) or pass fewer --rules")
                fh.write(line)
                count += 1
        return count


def is_rdf_triple(triple: Triple) -> bool:
    """Legal RDF 1.1: the subject is an IRI or blank node and the predicate an IRI."""
    s, p, _ = triple
    return not s.startswith('"') and not p.startswith(('"', "_:"))


def closure(triples: Iterable[Triple], rules: Iterable[str] = RULES, *,
            max_inferred: int | None = None) -> Closure:
    """Closure of `triples` under `rules` (any subset of `RULES`), to fixpoint.

    `max_inferred`: the most triples it may derive (None: no limit); past it an
    `InferenceLimitError` while deriving, with memory still bounded by about the limit (a
    2,000-class chain would derive two million)."""
    rules = _check_rules(rules)
    triples = [t if type(t) is tuple else tuple(t) for t in triples]
    terms, arr = intern(triples)
    st, base = build_store(terms, arr, max_inferred)
    eng = Engine(terms, st)
    eng.saturate(rules)
    n = st.n
    term_arr = np.empty(len(terms), dtype=object)
    term_arr[:] = terms
    inferred: list = []
    for p in sorted(st.full):
        full = st.full[p]
        b = base.get(p)
        new = full if b is None else full[~isin_sorted(full, b)]
        if new.size:
            inferred.append(zip(term_arr[new // n].tolist(), repeat(terms[p]), term_arr[new % n].tolist()))
    c = Closure(frozenset(triples), frozenset(chain.from_iterable(inferred)), rules)
    c._engine, c._base = eng, base
    return c


# --------------------------------------------------------------------------------------
# one-step derivations, one generator per rule shape (`Closure.derivations`)
# --------------------------------------------------------------------------------------


def _by_object(eng: Engine, p: int) -> dict[int, np.ndarray]:
    """object id -> subject ids (sorted), for predicate p."""
    s, o = eng.store.pairs(p)
    order = np.argsort(o, kind="stable")
    s, o = s[order], o[order]
    if o.size == 0:
        return {}
    cut = np.flatnonzero(o[1:] != o[:-1]) + 1
    return {int(g[0]): ss for g, ss in zip(np.split(o, cut), np.split(s, cut))}


def _derive_typing(eng: Engine, rule: str) -> Iterator[Derivation]:
    """rdfs2 / rdfs3: P1 (a domain|range x), P2 (u a v) => (u|v rdf:type x)."""
    st, n, T = eng.store, eng.store.n, eng.terms
    decl_p = RDFS_DOMAIN if rule == "rdfs2" else RDFS_RANGE
    for a, classes in eng.grouped(eng.DOM if rule == "rdfs2" else eng.RNG).items():
        facts = st.get(a).tolist()
        ta = T[a]
        for x in classes.tolist():
            p1 = (ta, decl_p, T[x])
            for k in facts:
                u, v = divmod(k, n)
                yield Derivation(rule, (T[v if rule == "rdfs3" else u], RDF_TYPE, T[x]),
                                 (p1, (T[u], ta, T[v])))


def _derive_transitive(eng: Engine, rule: str) -> Iterator[Derivation]:
    """rdfs5 / rdfs11: P1 (b p c), P2 (a p b) => (a p c), p subPropertyOf / subClassOf."""
    st, n, T = eng.store, eng.store.n, eng.terms
    p, pid = (RDFS_SUBPROPERTYOF, eng.SPO) if rule == "rdfs5" else (RDFS_SUBCLASSOF, eng.SCO)
    lower = _by_object(eng, pid)
    for k in st.get(pid).tolist():
        b, c = divmod(k, n)
        subs = lower.get(b)
        if subs is None:
            continue
        p1 = (T[b], p, T[c])
        for a in subs.tolist():
            yield Derivation(rule, (T[a], p, T[c]), (p1, (T[a], p, T[b])))


def _derive_subproperty(eng: Engine, rule: str) -> Iterator[Derivation]:
    """rdfs7: P1 (a subPropertyOf b), P2 (u a v) => (u b v); skipped for a literal b."""
    st, n, T = eng.store, eng.store.n, eng.terms
    for k in st.get(eng.SPO).tolist():
        a, b = divmod(k, n)
        if eng.is_literal[b]:
            continue
        ta, tb = T[a], T[b]
        p1 = (ta, RDFS_SUBPROPERTYOF, tb)
        for kk in st.get(a).tolist():
            u, v = divmod(kk, n)
            yield Derivation(rule, (T[u], tb, T[v]), (p1, (T[u], ta, T[v])))


def _derive_membership(eng: Engine, rule: str) -> Iterator[Derivation]:
    """rdfs9: P1 (x subClassOf y), P2 (u rdf:type x) => (u rdf:type y)."""
    st, n, T = eng.store, eng.store.n, eng.terms
    members = _by_object(eng, eng.TYPE)
    for k in st.get(eng.SCO).tolist():
        x, y = divmod(k, n)
        inst = members.get(x)
        if inst is None:
            continue
        tx, ty = T[x], T[y]
        p1 = (tx, RDFS_SUBCLASSOF, ty)
        for u in inst.tolist():
            yield Derivation(rule, (T[u], RDF_TYPE, ty), (p1, (T[u], RDF_TYPE, tx)))


_DERIVE = {"rdfs2": _derive_typing, "rdfs3": _derive_typing, "rdfs5": _derive_transitive,
           "rdfs11": _derive_transitive, "rdfs7": _derive_subproperty, "rdfs9": _derive_membership}
