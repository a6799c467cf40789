"""Hand-written cases for the RDFS closure engine (kgprobe.reasoning.rdfs)."""

from __future__ import annotations

import json
import os
import random

import pytest

from kgprobe.reasoning.rdfs import (
    RDF_TYPE as TYPE,
    RDFS_DOMAIN as DOM,
    RDFS_RANGE as RNG,
    RDFS_SUBCLASSOF as SCO,
    RDFS_SUBPROPERTYOF as SPO,
    RULES,
    Closure,
    Derivation,
    UnknownRuleError,
    closure,
)
from kgprobe.errors import KgprobeError


def ex(name: str) -> str:
    return "http://ex.org/" + name


A, B, C, D = ex("A"), ex("B"), ex("C"), ex("D")
x, y, z = ex("x"), ex("y"), ex("z")
p, q, r = ex("p"), ex("q"), ex("r")


def inferred(triples, rules=RULES):
    return set(closure(triples, rules).inferred)


# --------------------------------------------------------------------------- each rule


def test_public_rule_names():
    assert RULES == ("rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11")


def test_rdfs2_domain():
    g = [(p, DOM, A), (x, p, y)]
    assert inferred(g, ["rdfs2"]) == {(x, TYPE, A)}


def test_rdfs3_range():
    g = [(p, RNG, A), (x, p, y)]
    assert inferred(g, ["rdfs3"]) == {(y, TYPE, A)}


def test_rdfs3_types_literal_objects_as_generalized_triples():
    lit7, hi = '"7"^^<http://www.w3.org/2001/XMLSchema#int>', '"hi"@en'
    g = [(p, RNG, A), (x, p, lit7), (x, p, hi), (x, p, "_:b1")]
    c = closure(g)
    assert c.inferred == {("_:b1", TYPE, A), (lit7, TYPE, A), (hi, TYPE, A)}
    assert c.held_back == {(lit7, TYPE, A), (hi, TYPE, A)}
    assert c.rdf_inferred == {("_:b1", TYPE, A)}


def test_generalized_triples_feed_the_rules_like_owlrl():
    """The issue's example: ex:a ex:p "s" . ex:p rdfs:range ex:C . rdf:type rdfs:range ex:R"""
    g = [(x, p, '"s"'), (p, RNG, C), (TYPE, RNG, ex("R"))]
    c = closure(g)
    assert (C, TYPE, ex("R")) in c.rdf_inferred
    assert ('"s"', TYPE, C) in c.held_back


def test_blank_node_predicates_are_held_back():
    g = [(ex("bar"), SPO, "_:p"), (x, ex("bar"), y)]
    c = closure(g)
    assert c.inferred == {(x, "_:p", y)}
    assert c.held_back == {(x, "_:p", y)} and c.rdf_inferred == set()


def test_rdfs5_transitive_subproperty():
    g = [(p, SPO, q), (q, SPO, r)]
    assert inferred(g, ["rdfs5"]) == {(p, SPO, r)}


def test_rdfs7_subproperty_facts():
    g = [(p, SPO, q), (x, p, y)]
    assert inferred(g, ["rdfs7"]) == {(x, q, y)}


def test_rdfs9_subclass_instances():
    g = [(A, SCO, B), (x, TYPE, A)]
    assert inferred(g, ["rdfs9"]) == {(x, TYPE, B)}


def test_rdfs11_transitive_subclass():
    g = [(A, SCO, B), (B, SCO, C)]
    assert inferred(g, ["rdfs11"]) == {(A, SCO, C)}


def test_no_rules_no_inference():
    g = [(A, SCO, B), (x, TYPE, A)]
    c = closure(g, [])
    assert c.inferred == frozenset() and c.rules == ()
    assert list(c.derivations()) == []


# --------------------------------------------------------------------------- tricky shapes


def test_subclass_cycle_is_reflexive_like_w3c_rules():
    g = [(A, SCO, B), (B, SCO, A), (x, TYPE, A)]
    assert inferred(g) == {(A, SCO, A), (B, SCO, B), (x, TYPE, B)}
    # without rdfs11 the cycle still propagates types (rdfs9 applied repeatedly)
    assert inferred(g, ["rdfs9"]) == {(x, TYPE, B)}


def test_self_loop_and_long_cycle():
    g = [(A, SCO, A), (B, SCO, C), (C, SCO, D), (D, SCO, B)]
    got = inferred(g, ["rdfs11"])
    cyc = {B, C, D}
    assert got == {(s, SCO, o) for s in cyc for o in cyc} - set(g)
    assert (A, SCO, A) not in got  # asserted, so not inferred


def test_subproperty_cycle():
    g = [(p, SPO, q), (q, SPO, p), (x, p, y)]
    assert inferred(g) == {(p, SPO, p), (q, SPO, q), (x, q, y)}


def test_subproperty_chain_without_rdfs5_still_propagates_facts():
    g = [(r, SPO, q), (q, SPO, p), (x, r, y)]
    assert inferred(g, ["rdfs7"]) == {(x, q, y), (x, p, y)}
    assert inferred(g, ["rdfs5", "rdfs7"]) == {(x, q, y), (x, p, y), (r, SPO, p)}


def test_domain_and_range_on_superproperty_need_rdfs7():
    g = [(q, SPO, p), (p, DOM, A), (p, RNG, B), (x, q, y)]
    assert inferred(g, ["rdfs2", "rdfs3"]) == set()
    assert inferred(g, ["rdfs7"]) == {(x, p, y)}
    assert inferred(g, ["rdfs2", "rdfs3", "rdfs7"]) == {(x, p, y), (x, TYPE, A), (y, TYPE, B)}


def test_domain_then_subclass():
    g = [(p, DOM, A), (A, SCO, B), (B, SCO, C), (x, p, y)]
    assert inferred(g) == {(x, TYPE, A), (x, TYPE, B), (x, TYPE, C), (A, SCO, C)}
    assert inferred(g, ["rdfs2", "rdfs9"]) == {(x, TYPE, A), (x, TYPE, B), (x, TYPE, C)}


def test_undeclared_property_facts_are_left_alone():
    g = [(x, p, y), (y, q, z), (A, SCO, B)]
    assert inferred(g) == set()


def test_multiple_domains():
    g = [(p, DOM, A), (p, DOM, B), (x, p, y), (z, p, y)]
    assert inferred(g) == {(x, TYPE, A), (x, TYPE, B), (z, TYPE, A), (z, TYPE, B)}


def test_property_declared_subproperty_of_subclassof():
    # ex:broader is a sub-property of rdfs:subClassOf, so its facts are subclass axioms
    broader = ex("broader")
    g = [(broader, SPO, SCO), (A, broader, B), (B, broader, C), (x, TYPE, A)]
    assert inferred(g) == {
        (A, SCO, B), (B, SCO, C), (A, SCO, C), (x, TYPE, B), (x, TYPE, C),
    }


def test_property_declared_subproperty_of_type():
    isa = ex("isa")
    g = [(isa, SPO, TYPE), (x, isa, A), (A, SCO, B)]
    assert inferred(g) == {(x, TYPE, A), (x, TYPE, B)}


def test_property_declared_subproperty_of_subpropertyof():
    # facts of ex:specialises become sub-property axioms, which then move facts
    spec = ex("specialises")
    g = [(spec, SPO, SPO), (p, spec, q), (x, p, y)]
    assert inferred(g) == {(p, SPO, q), (x, q, y)}


def test_derived_domain_declaration():
    # a sub-property of rdfs:domain: its facts are domain declarations
    dom2 = ex("hasDomain")
    g = [(dom2, SPO, DOM), (p, dom2, A), (x, p, y)]
    assert inferred(g) == {(p, DOM, A), (x, TYPE, A)}


def test_domain_of_subclassof_applies_to_derived_subclass_triples():
    K = ex("Klass")
    g = [(SCO, DOM, K), (SCO, RNG, K), (A, SCO, B), (B, SCO, C)]
    got = inferred(g)
    assert (A, SCO, C) in got
    assert {(A, TYPE, K), (B, TYPE, K), (C, TYPE, K)} <= got
    assert got == {(A, SCO, C), (A, TYPE, K), (B, TYPE, K), (C, TYPE, K)}


def test_domain_of_type_feeds_itself():
    # (rdf:type rdfs:domain R): every typed thing is an R, including via derived types
    R = ex("R")
    g = [(TYPE, DOM, R), (p, RNG, A), (x, p, y)]
    assert inferred(g) == {(y, TYPE, A), (y, TYPE, R)}


def test_range_of_type_is_a_metaclass():
    M = ex("Meta")
    g = [(TYPE, RNG, M), (x, TYPE, A), (A, SCO, B)]
    # (A rdf:type M) is itself an rdf:type fact, so M is an instance of M too
    assert inferred(g) == {(x, TYPE, B), (A, TYPE, M), (B, TYPE, M), (M, TYPE, M)}


def test_type_has_a_superproperty():
    g = [(TYPE, SPO, p), (x, TYPE, A), (A, SCO, B)]
    assert inferred(g) == {(x, TYPE, B), (x, p, A), (x, p, B)}


def test_subclassof_has_a_superproperty_and_a_domain_chain():
    K = ex("K")
    g = [(SCO, SPO, p), (p, DOM, K), (A, SCO, B), (B, SCO, C)]
    assert inferred(g) == {(A, SCO, C), (A, p, B), (B, p, C), (A, p, C), (A, TYPE, K), (B, TYPE, K)}


# Schema triples derived late (from types produced by rdfs2/rdfs9 in an earlier pass)
# must be joined with facts that were already there: each operator has to re-run in
# full when its schema predicate changes, not just on the new facts.


def test_late_subclass_axiom_applies_to_old_types():
    # rdf:type is a sub-property of rdfs:subClassOf, so "u rdf:type A" (derived by
    # rdfs2 from u's outgoing p fact) becomes "u rdfs:subClassOf A" only in a second pass
    u = ex("u")
    g = [(TYPE, SPO, SCO), (p, DOM, A), (u, p, x), (y, TYPE, u)]
    got = inferred(g)
    assert {(u, TYPE, A), (u, SCO, A), (y, SCO, u), (y, TYPE, A)} <= got
    assert (y, TYPE, A) in inferred(g, ["rdfs2", "rdfs7", "rdfs9"])


def test_late_domain_declaration_applies_to_old_facts():
    # "p rdf:type B" is derived by rdfs9 and becomes "p rdfs:domain B" via rdfs7
    g = [(TYPE, SPO, DOM), (p, TYPE, A), (A, SCO, B), (x, p, y)]
    got = inferred(g, ["rdfs2", "rdfs7", "rdfs9"])
    assert {(p, TYPE, B), (p, DOM, B), (x, TYPE, B)} <= got
    assert {(x, TYPE, A), (p, DOM, A)} <= got


def test_late_range_declaration_applies_to_old_facts():
    g = [(TYPE, SPO, RNG), (p, TYPE, A), (A, SCO, B), (x, p, y)]
    got = inferred(g, ["rdfs3", "rdfs7", "rdfs9"])
    assert {(p, RNG, B), (y, TYPE, B)} <= got


def test_late_subproperty_axiom_applies_to_old_facts():
    g = [(TYPE, SPO, SPO), (q, TYPE, A), (A, SCO, r), (x, q, y)]
    got = inferred(g, ["rdfs7", "rdfs9"])
    assert {(q, TYPE, r), (q, SPO, r), (x, r, y), (q, SPO, A), (x, A, y)} <= got


def test_literal_superproperty_is_skipped():
    g = [(p, SPO, '"not a property"'), (x, p, y)]
    assert inferred(g) == set()


def test_literal_classes_are_fine_as_objects():
    g = [(p, RNG, '"odd"'), (x, p, y)]
    assert inferred(g) == {(y, TYPE, '"odd"')}


def test_blank_nodes_everywhere():
    g = [("_:p", SPO, q), ("_:s", "_:p", "_:o"), (q, DOM, "_:C"), ("_:C", SCO, A)]
    assert inferred(g) == {("_:s", q, "_:o"), ("_:s", TYPE, "_:C"), ("_:s", TYPE, A)}


def test_empty_and_duplicates_and_generators():
    assert closure([]).inferred == frozenset()
    assert closure([]).asserted == frozenset()
    g = [(A, SCO, B), (A, SCO, B), (x, TYPE, A)]
    c = closure(iter(g))
    assert c.asserted == frozenset(g)
    assert c.inferred == {(x, TYPE, B)}
    assert closure([[A, SCO, B], [x, TYPE, A]]).inferred == {(x, TYPE, B)}


def test_inferred_excludes_asserted():
    g = [(A, SCO, B), (x, TYPE, A), (x, TYPE, B)]
    assert inferred(g) == set()


def test_rejects_non_string_terms():
    with pytest.raises(TypeError):
        closure([(A, SCO, 3)])


def test_rule_order_and_duplicates_are_normalised():
    c = closure([], ["rdfs11", "rdfs2", "rdfs2"])
    assert c.rules == ("rdfs2", "rdfs11")
    assert closure([], "rdfs9").rules == ("rdfs9",)


# --------------------------------------------------------------------------- errors


def test_unknown_rule():
    with pytest.raises(UnknownRuleError) as err:
        closure([], ["rdfs2", "rdfs4a"])
    msg = str(err.value)
    assert "rdfs4a" in msg and all(r in msg for r in RULES)
    assert isinstance(err.value, ValueError) and isinstance(err.value, KgprobeError)
    c = closure([(A, SCO, B)])
    with pytest.raises(UnknownRuleError):
        list(c.derivations("rdfs12"))
    with pytest.raises(UnknownRuleError):
        c.derivations("nope")  # raised eagerly, not on first next()


def test_derivations_for_rule_not_applied():
    c = closure([(A, SCO, B)], ["rdfs9"])
    with pytest.raises(ValueError):
        c.derivations("rdfs11")


# --------------------------------------------------------------------------- provenance


def test_premise_order_follows_table_2():
    g = [
        (p, DOM, A), (p, RNG, B), (x, p, y),          # rdfs2, rdfs3
        (q, SPO, p), (r, SPO, q), (z, r, x),          # rdfs5, rdfs7
        (A, SCO, C), (C, SCO, D),                     # rdfs9, rdfs11
    ]
    c = closure(g)
    ds = {(d.rule, d.conclusion, d.premises) for d in c.derivations()}
    assert ("rdfs2", (x, TYPE, A), ((p, DOM, A), (x, p, y))) in ds
    assert ("rdfs3", (y, TYPE, B), ((p, RNG, B), (x, p, y))) in ds
    assert ("rdfs5", (r, SPO, p), ((q, SPO, p), (r, SPO, q))) in ds
    assert ("rdfs7", (z, q, x), ((r, SPO, q), (z, r, x))) in ds
    assert ("rdfs9", (x, TYPE, C), ((A, SCO, C), (x, TYPE, A))) in ds
    assert ("rdfs11", (A, SCO, D), ((C, SCO, D), (A, SCO, C))) in ds
    for d in c.derivations():
        assert isinstance(d, Derivation)
        assert d.rule in RULES
        assert set(d.premises) <= c.asserted | c.inferred
        assert d.conclusion in c.asserted | c.inferred


def test_derivations_include_asserted_conclusions_and_all_premise_pairs():
    g = [(A, SCO, B), (x, TYPE, A), (x, TYPE, B), (p, DOM, A), (x, p, y), (x, p, z)]
    c = closure(g)
    ds = list(c.derivations("rdfs9"))
    assert [(d.conclusion, d.premises) for d in ds] == [((x, TYPE, B), ((A, SCO, B), (x, TYPE, A)))]
    assert (x, TYPE, B) in c.asserted
    rdfs2 = [d.premises[1] for d in c.derivations("rdfs2")]
    assert rdfs2 == [(x, p, y), (x, p, z)]  # one derivation per premise pair


def test_derivations_are_lazy_and_deterministic():
    g = [(ex(f"C{i}"), SCO, ex(f"C{i+1}")) for i in range(30)] + [(ex(f"e{j}"), TYPE, ex("C0")) for j in range(50)]
    c = closure(g)
    it = c.derivations()
    assert iter(it) is it
    first = next(it)
    assert isinstance(first, Derivation)
    shuffled = g[:]
    random.Random(1).shuffle(shuffled)
    a = [d.to_json() for d in closure(shuffled).derivations()]
    assert a == [d.to_json() for d in c.derivations()]
    # rdfs9: 50 instances x (30*31/2) subclass pairs over the transitive closure
    assert sum(1 for _ in c.derivations("rdfs9")) == 50 * (30 * 31 // 2)


def test_derived_by_counts_overlap():
    g = [(p, DOM, A), (A, SCO, B), (p, DOM, B), (x, p, y), (B, SCO, C)]
    c = closure(g)
    # inferred: x type A (rdfs2), x type B (rdfs2 and rdfs9), x type C (rdfs9), A sco C (rdfs11)
    assert c.inferred == {(x, TYPE, A), (x, TYPE, B), (x, TYPE, C), (A, SCO, C)}
    counts = c.derived_by()
    assert counts == {"rdfs2": 2, "rdfs3": 0, "rdfs5": 0, "rdfs7": 0, "rdfs9": 2, "rdfs11": 1}
    assert sum(counts.values()) >= len(c.inferred)
    only = closure(g, ["rdfs9", "rdfs2"]).derived_by()
    assert only == {"rdfs2": 2, "rdfs9": 2}


def test_hand_built_closure_rebuilds_its_index():
    g = [(A, SCO, B), (x, TYPE, A)]
    c = Closure(frozenset(g), frozenset({(x, TYPE, B)}), ("rdfs9",))
    assert [d.conclusion for d in c.derivations()] == [(x, TYPE, B)]
    assert c.derived_by() == {"rdfs9": 1}
    assert c == closure(g, ["rdfs9"])


# --------------------------------------------------------------------------- JSONL


def test_write_jsonl_format(tmp_path):
    g = [(p, DOM, A), (x, p, '"é"@fr'), (A, SCO, B)]
    c = closure(g)
    out = tmp_path / "derivations.jsonl"
    n = c.write_jsonl(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert n == len(lines) == sum(1 for _ in c.derivations())
    recs = [json.loads(line) for line in lines]
    assert recs[0] == {
        "rule": "rdfs2",
        "conclusion": [x, TYPE, A],
        "premises": [[p, DOM, A], [x, p, '"é"@fr']],
    }
    for rec in recs:
        assert list(rec) == ["rule", "conclusion", "premises"]
        assert len(rec["conclusion"]) == 3 and [len(t) for t in rec["premises"]] == [3, 3]
    assert [d.to_json() for d in c.derivations()] == recs
    assert os.listdir(tmp_path) == ["derivations.jsonl"]
    assert c.write_jsonl(str(out), rule="rdfs9") == 1


def test_write_jsonl_is_atomic(tmp_path, monkeypatch):
    c = closure([(A, SCO, B), (x, TYPE, A), (y, TYPE, A)])
    out = tmp_path / "d.jsonl"
    out.write_text("previous\n")

    def failing(self, rule=None):
        def gen():
            for i, d in enumerate(orig(self, rule)):
                if i == 1:
                    raise RuntimeError("boom")
                yield d
        return gen()

    orig = Closure.derivations
    monkeypatch.setattr(Closure, "derivations", failing)
    with pytest.raises(RuntimeError):
        c.write_jsonl(out)
    assert out.read_text() == "previous\n"
    assert os.listdir(tmp_path) == ["d.jsonl"]
    monkeypatch.undo()
    assert c.write_jsonl(out) == 2


def test_write_jsonl_empty(tmp_path):
    out = tmp_path / "e.jsonl"
    assert closure([(x, p, y)]).write_jsonl(out) == 0
    assert out.read_text() == ""
