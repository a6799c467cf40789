"""The consistency study's claim: the subject-matched contrast, paired against every control
with a wild cluster bootstrap, on simulated believers over a synthetic class tree.

A closed believer (a seeded set of statements, closed under the derivations) must be claimed;
a familiarity-only believer (everything about 30 % of subjects) and a model equal to a control
must not; a world with too few clusters is "not testable"."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgprobe.cli import main
from kgprobe.studies.consistency.claims import confirm, entailment_rows
from kgprobe.studies.consistency.statements import BeliefDerivation, Statement
from kgprobe.studies.consistency.subject_matched import base_rates, layout, scores
from kgprobe.studies.consistency.wild_bootstrap import MIN_CLUSTERS, wild_cluster_test


def _type(x: str, c: str) -> Statement:
    return Statement("type", x, c)


def _sub(a: str, b: str) -> Statement:
    return Statement("subClassOf", a, b)


def world(n_roots: int = 20, leaves: int = 2, instances: int = 4):
    """rdfs9 derivations over `n_roots` separate trees R ⊒ B ⊒ A_j ∋ x: each instance gets
    x type B (from x type A, A ⊑ B) and x type R (from x type B, B ⊑ R), so every subject has
    two conclusions and each tree is one cluster."""
    ds = []
    for r in range(n_roots):
        root, mid = f"root{r}", f"mid{r}"
        for j in range(leaves):
            leaf = f"leaf{r}.{j}"
            for i in range(instances):
                x = f"x{r}.{j}.{i}"
                for p1, p2, c in ((_sub(leaf, mid), _type(x, leaf), _type(x, mid)),
                                  (_sub(mid, root), _type(x, mid), _type(x, root))):
                    ds.append(BeliefDerivation(f"d{len(ds)}", "rdfs9", (p1, p2), c,
                                               (("", "", ""),) * 3))
    statements = {s.key: s for d in ds for s in d.statements}
    return {"rdfs9": ds}, statements


def closed(ds, statements, seed=0, rate=0.6, noise=0.1) -> set[str]:
    """A seeded set (each asserted premise with `rate`, any statement with `noise`), closed
    under the derivations: believes every conclusion its believed premises entail."""
    rng = random.Random(seed)
    concluded = {d.conclusion.key for d in ds}
    believed = {k for k in statements
                if rng.random() < (noise if k in concluded else rate)}
    grew = True
    while grew:
        new = {d.conclusion.key for d in ds if all(p.key in believed for p in d.premises)}
        grew = not new <= believed
        believed |= new
    return believed


def familiar(statements, seed=0, share=0.3) -> set[str]:
    """Everything about 30 % of subjects (instances and classes alike), nothing else."""
    rng = random.Random(seed)
    subjects = sorted({s.subject for s in statements.values()})
    known = {s for s in subjects if rng.random() < share}
    return {k for k, s in statements.items() if s.subject in known}


def answer_liker(statements, seed=0) -> set[str]:
    """A frequency-like control: believes a statement when it likes its answer."""
    rng = random.Random(seed)
    liked = {a for a in sorted({s.answer for s in statements.values()}) if rng.random() < 0.5}
    return {k for k, s in statements.items() if s.answer in liked}


def ranks(believed: set[str], statements) -> dict:
    return {(k, 0): {"rank": 1 if k in believed else 2} for k in statements}


def table(derivations, statements, model: set[str], controls: dict[str, set[str]]):
    every = {"model": ranks(model, statements),
             **{c: ranks(b, statements) for c, b in controls.items()}}
    rows = entailment_rows(derivations, {0: statements}, every, "model", tuple(controls))
    n_both = sum(len(ds) for ds in derivations.values())  # the claim turns on the test alone
    return confirm([{"rule": r, "template": t, "n_both": n_both, **row}
                    for (r, t), row in rows.items()], control_run=False)


def _all(rows):
    return next(r for r in rows if r["rule"] == "all")


@pytest.fixture(scope="module")
def synthetic():
    derivations, statements = world()
    ds = derivations["rdfs9"]
    controls = {"frequency": answer_liker(statements), "random": set()}
    return derivations, statements, ds, controls


def test_a_closed_believer_is_claimed_above_every_control(synthetic):
    derivations, statements, ds, controls = synthetic
    row = _all(table(derivations, statements, closed(ds, statements), controls))
    assert row["testable"] and row["G"] >= MIN_CLUSTERS
    assert row["subject_matched"] > 0.3 and row["subject_matched_lo"] > 0
    for name in controls:
        assert row[f"vs_{name}_lo"] > 0 and row[f"p_vs_{name}"] < 0.05
    assert row["p_claim"] == max(row["p_subject_matched"], *(row[f"p_vs_{c}"] for c in controls))
    assert row["claimed"] is True and row["confirmatory"] is True


def test_a_familiarity_believer_is_not_claimed(synthetic):
    derivations, statements, ds, controls = synthetic
    for seed in range(3):
        believer = familiar(statements, seed=seed)
        row = _all(table(derivations, statements, believer, controls))
        # it believes both premises and the conclusion together, far above the base rate …
        assert row["consistency_minus_base_rate"] > 0.3
        # … but its conclusions about a subject do not follow the premises
        assert row["testable"] and row["subject_matched_lo"] <= 0 <= row["subject_matched_hi"]
        assert row["p_claim"] > 0.5
        assert row["claimed"] is False


def test_a_model_equal_to_a_control_is_not_claimed(synthetic):
    derivations, statements, ds, controls = synthetic
    twin = closed(ds, statements, seed=4)
    row = _all(table(derivations, statements, twin, {**controls, "copy": twin}))
    assert row["vs_copy"] == 0.0 and row["p_vs_copy"] == 1.0
    assert row["p_claim"] == 1.0 and row["claimed"] is False
    # an answer liker is matched on its answers: its contrast is 0 whatever it believes
    liker = _all(table(derivations, statements, controls["frequency"], {}))
    assert liker["subject_matched"] == pytest.approx(0.0)


def test_too_few_clusters_is_not_testable():
    derivations, statements = world(n_roots=3, instances=8)
    believer = closed(derivations["rdfs9"], statements, rate=0.7)
    row = _all(table(derivations, statements, believer, {}))
    assert 0 < row["G"] <= 3 and not row["testable"]
    assert np.isnan(row["p_claim"]) and np.isnan(row["subject_matched_lo"])
    assert row["claimed"] is False


def test_the_base_rate_is_of_the_same_answer_about_other_subjects():
    a, b, c = _type("x", "dog"), _type("y", "dog"), _type("z", "cat")
    statements = {s.key: s for s in (a, b, c)}
    rates = base_rates(statements, {a.key: True, b.key: False, c.key: True})
    assert rates[a.key] == 0.0 and rates[b.key] == 1.0  # the other dog
    assert rates[c.key] == 0.5  # no other cat: the relation's other subjects
    lay = layout(world(n_roots=2)[0]["rdfs9"])
    assert lay.n_clusters == 2 and len(lay.strata) == 2 * 2 * 4


def test_the_wild_bootstrap_rejects_a_shift_and_not_noise():
    rng = np.random.default_rng(0)
    shifted = wild_cluster_test(1 + rng.normal(size=12), seed=0)
    assert shifted.p < 0.01 and shifted.lo > 0
    noise = wild_cluster_test(rng.normal(size=12), seed=0)
    assert noise.p > 0.05 and noise.lo < 0 < noise.hi
    assert not wild_cluster_test([1.0] * (MIN_CLUSTERS - 1), seed=0).testable


def test_controls_option_runs_and_names_each_comparison(tmp_path):
    from tests.zoo import write_zoo

    out = tmp_path / "C"
    assert main(["study", "consistency", "--model", "random", "--controls", "frequency,copy",
                 "--candidates", "3", "--limit", "5", "--ontology", str(write_zoo(tmp_path)),
                 "--threads", "1", "--out", str(out)]) == 0
    import csv

    with open(out / "results.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {"vs_frequency", "p_vs_copy", "G_vs_copy", "G", "testable", "p_claim_holm",
            "confirmatory"} <= set(rows[0]) and "vs_random" not in rows[0]
    assert all(r["claimed"] == "False" for r in rows)  # a control's run claims nothing
    assert not (out / "controls" / "random").exists()
    report = (out / "report.md").read_text()
    assert "confirmatory family" in report and "not testable" in report
