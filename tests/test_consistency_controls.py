"""The consistency study against its controls: clusters of derivations sharing a statement,
the cluster bootstrap, matched control premises, the consistency minus the prior, and
``claimed`` (never for a control run)."""

from __future__ import annotations

import csv
import random

from kgprobe.cli import main
from kgprobe.studies.consistency.beliefs import (
    DerivationRanks,
    consistency_row,
    consistency_table,
)
from kgprobe.studies.consistency.clustered import statement_clusters
from kgprobe.studies.consistency.config import ConsistencyConfig
from kgprobe.studies.consistency.controls import matched_controls, reference_model
from kgprobe.studies.consistency.study import build
from kgprobe.studies.controls import parse_controls

from tests.zoo import write_zoo


def test_clusters_are_the_components_of_shared_statements():
    # 0–1 share b, 1–3 share c (so 0, 1, 3 are one cluster); 2 and 4 stand alone
    keys = [("a", "b"), ("b", "c"), ("d",), ("c", "e"), ("f",)]
    assert statement_clusters(keys) == [0, 0, 1, 0, 2]
    assert statement_clusters([("x",), ("y",)]) == [0, 1]


def _shared(n_clusters: int, size: int, seed: int = 1) -> tuple[list[DerivationRanks], list[int]]:
    """`n_clusters` groups of `size` derivations sharing their premises, so within a group the
    conclusion is believed alike: the data hold n_clusters independent facts, not n."""
    rng = random.Random(seed)
    ds, clusters = [], []
    for c in range(n_clusters):
        conclusion = 1 if rng.random() < 0.5 else 3
        for i in range(size):
            ds.append(DerivationRanks(f"d{c}-{i}", 1, 1, conclusion, statements=(f"P{c}",)))
            clusters.append(c)
    return ds, clusters


def test_the_cluster_bootstrap_is_wider_when_statements_are_shared():
    ds, clusters = _shared(12, 8)
    assert statement_clusters([d.statements for d in ds]) == clusters
    alone = consistency_row(ds, seed=0, key=("t",))
    together = consistency_row(ds, seed=0, key=("t",), clusters=clusters)
    assert alone["consistency"] == together["consistency"]
    assert together["n_clusters"] == 12 and alone["n_clusters"] == 96
    width = lambda r: r["consistency_hi"] - r["consistency_lo"]
    assert width(together) > 1.8 * width(alone)


def _link(n: int, *, through_entailment: bool, seed: int = 0) -> list[DerivationRanks]:
    """A model that believes a conclusion exactly when it believes the premises that entail
    it (`through_entailment`), or half the time whatever it believes (no link); its belief
    in the control premises is independent of the conclusion either way."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        own = rng.random() < 0.5
        conclusion = (1 if own else 4) if through_entailment else (1 if rng.random() < 0.5 else 4)
        control = (1, 1) if rng.random() < 0.5 else (1, 5)
        out.append(DerivationRanks(f"d{i}", 1, 1 if own else 2, conclusion, control,
                                   (f"s{i}",)))
    return out


def test_a_model_consistent_through_entailment_has_a_positive_matched_contrast():
    linked = consistency_row(_link(80, through_entailment=True), seed=0, key=("t",))
    assert linked["consistency"] == 1.0
    assert linked["matched_difference"] > 0.3 and linked["matched_difference_lo"] > 0
    assert linked["p_matched"] < 0.01
    unlinked = consistency_row(_link(80, through_entailment=False), seed=0, key=("t",))
    assert unlinked["matched_difference_lo"] < 0 < unlinked["matched_difference_hi"]
    assert unlinked["p_matched"] > 0.05


def test_the_consistency_minus_a_reference_is_paired_on_the_same_derivations():
    # what a run claims is `claims` (tests/test_consistency_claims.py); this column is exploratory
    model = {("r", 0): _link(80, through_entailment=True)}
    prior = {("r", 0): _link(80, through_entailment=False, seed=3)}
    rows = consistency_table(model, reference=prior, reference_name="prior:m")
    assert rows[0]["consistency_minus_prior_lo"] > 0 and rows[0]["p_minus_prior_holm"] < 0.05
    itself = consistency_table(model, reference=model, reference_name="frequency")[0]
    assert (itself["consistency_minus_prior"], itself["p_minus_prior"]) == (0.0, 1.0)


def test_matched_controls_share_the_answer_and_do_not_entail(tmp_path):
    config = ConsistencyConfig("-", ontology=write_zoo(tmp_path), limit=None, candidates="3")
    setup = build(config)
    everything = [d for ds in setup.derivations.values() for d in ds]
    controls = matched_controls(everything, seed=0)
    paired = [(d, controls[d.id]) for d in everything if controls[d.id] is not None]
    assert paired
    for d, other in paired:
        assert other.rule == d.rule and other.conclusion.answer == d.conclusion.answer
        assert other.conclusion.key != d.conclusion.key
        assert d.conclusion.key not in {p.key for p in other.premises}
    assert matched_controls(everything, seed=0) == controls  # seeded
    assert reference_model("smollm2-135m", "prior") == "prior:smollm2-135m"
    assert reference_model("frequency", "prior") == "frequency"
    # one definition of a control (studies.controls): a prior's prior is itself
    assert reference_model("prior:smollm2-135m", "prior") == "prior:smollm2-135m"
    assert reference_model("smollm2-135m", "copy") == "copy"


def test_a_frequency_run_claims_nothing_and_reports_minus_prior(tmp_path):
    out = tmp_path / "C"
    assert main(["study", "consistency", "--model", "frequency", "--candidates", "3",
                 "--limit", "5", "--ontology", str(write_zoo(tmp_path)), "--threads", "1",
                 "--out", str(out)]) == 0
    with open(out / "results.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {"consistency_minus_prior", "consistency_minus_prior_lo",
                     "consistency_minus_prior_hi", "claimed", "n_clusters"} <= set(rows[0])
    assert all(r["claimed"] == "False" for r in rows)
    assert all(r["reference"] == "frequency" for r in rows)
    defined = [r for r in rows if r["consistency"]]
    assert defined and all(float(r["consistency_minus_prior"]) == 0.0 for r in defined)
    with open(out / "controls.csv", encoding="utf-8") as fh:
        models = {r["model"] for r in csv.DictReader(fh)}
    # the default controls, as every ranking study's (`parse_controls`)
    assert models == set(parse_controls(None, "frequency")) >= {"frequency", "copy", "random"}
    assert (out / "controls" / "copy" / "units").is_dir()


def test_the_controls_option_on_the_command_line_works_as_on_every_study(tmp_path,
                                                                          tiny_gpt2_dir):
    """``kgprobe study consistency --controls frequency,copy`` on a tiny language model, as a
    user types it: each named control scored in its own run folder ``OUT/controls/NAME``
    (loaded as every study's controls are, `controls.load_control`), the others not,
    config.json recording the list, results.csv and report.md testing the model against each."""
    import json

    from tests.cli_run import ok

    out = tmp_path / "C"
    ok(tmp_path, "study", "consistency", "--model", str(tiny_gpt2_dir), "--controls",
       "frequency,copy", "--reference", "frequency", "--candidates", "3", "--limit", "2",
       "--ontology",
       str(write_zoo(tmp_path)), "--threads", "1", "--out", str(out))
    # the named controls in their folders (the reference among them), no other
    assert sorted(p.name for p in (out / "controls").iterdir()) == ["copy", "frequency"]
    for name in ("frequency", "copy"):
        units = sorted((out / "controls" / name / "units").iterdir())
        assert units and len(units) == len(list((out / "units").iterdir()))
    assert json.loads((out / "config.json").read_text())["controls"] == ["frequency", "copy"]
    with open(out / "results.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {"vs_frequency", "vs_copy"} <= set(rows[0]) and "vs_random" not in rows[0]
    with open(out / "controls.csv", encoding="utf-8") as fh:
        assert {r["model"] for r in csv.DictReader(fh)} == {"frequency", "copy"}
    report = (out / "report.md").read_text()
    assert "minus frequency's" in report and "minus copy's" in report
    assert "random" not in report
