"""Counterfactual premises (`--premises true,counterfactual`) and distractors that name
candidates (`--distractor-kind naming`): the items against the RDFS engine, their seeds,
their filtered ranking, and what a copy heuristic reaches with and without naming distractors."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from kgprobe.cli import main
from kgprobe.reasoning.filtering import TrueAnswers
from kgprobe.reasoning.rdfs import closure as rdfs_closure
from kgprobe.studies.premise_ablation.build import build_data
from kgprobe.studies.premise_ablation.candidates import item_candidates
from kgprobe.studies.premise_ablation.config import AblationConfig
from kgprobe.studies.premise_ablation.counterfactual import counterfactual_requests, counterfactuals

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

#: Beside the zoo: classes and properties a false premise can name, and that distractors
#: can be about (none of them above or below the zoo's items).
EXTRA = """ex:Car rdfs:subClassOf ex:Vehicle . ex:Truck rdfs:subClassOf ex:Vehicle .
ex:Vehicle rdfs:subClassOf ex:Machine . ex:Rose rdfs:subClassOf ex:Flower .
ex:Flower rdfs:subClassOf ex:Plant . ex:Oak rdfs:subClassOf ex:Tree . ex:Tree rdfs:subClassOf ex:Plant .
ex:Tulip rdfs:subClassOf ex:Flower . ex:Bus rdfs:subClassOf ex:Vehicle .
ex:Robot rdfs:subClassOf ex:Machine . ex:Crane rdfs:subClassOf ex:Machine .
ex:drives rdfs:domain ex:Driver ; rdfs:range ex:Car ; rdfs:subPropertyOf ex:uses .
ex:grows rdfs:domain ex:Gardener ; rdfs:range ex:Plant ; rdfs:subPropertyOf ex:tends .
ex:repairs rdfs:domain ex:Mechanic ; rdfs:range ex:Machine ; rdfs:subPropertyOf ex:handles .
"""


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"), EXTRA)


def _data(zoo: Path, seed: int = 0, candidates: str = "all", ranking: str = "filtered"):
    config = AblationConfig(None, limit=None, seed=seed, candidates=candidates, ranking=ranking,
                            ontology=zoo, premises=("true", "counterfactual"))
    return build_data(config, config.load_source())


def test_counterfactual_golds_are_entailed_by_the_written_premises_alone(zoo):
    data = _data(zoo)
    twins = counterfactuals(data)
    truth = TrueAnswers.of(data.verbalizer, data.closure)
    checked = set()
    for rule, by_id in twins.items():
        for twin in by_id.values():
            item, original = twin.item, twin.original
            # the RDFS engine on the written statements alone derives the conclusion
            world = rdfs_closure([tuple(p.triple) for p in item.premises])
            assert tuple(item.conclusion["triple"]) in world.asserted | world.inferred, item.id
            assert twin.false_term in item.premises[0].triple
            assert item.premises[1] == original.premises[1]  # P2 unchanged
            assert item.hypotheses == original.hypotheses and item.id == original.id
            # the false term is no true answer of the item in the ontology ...
            assert not set(item.answers) & truth.item(original)
            assert item.answers[0] in twin.true
            # ... and the real gold is false in the counterfactual world
            assert not set(original.answers) & twin.true
            assert item.premises[0].text != original.premises[0].text
            checked.add(rule)
    assert {"rdfs2", "rdfs3", "rdfs9", "rdfs11"} <= checked


def test_counterfactual_items_are_seeded(zoo):
    def drawn(seed: int) -> dict:
        return {(rule, i): t.false_term for rule, by_id in counterfactuals(_data(zoo, seed)).items()
                for i, t in by_id.items()}

    first = drawn(0)
    assert first and drawn(0) == first
    assert any(drawn(seed) != first for seed in (1, 2, 3))


def test_counterfactual_ranking_leaves_out_the_counterfactual_worlds_answers(zoo):
    """Filtered: the other answers true in the counterfactual world are left out, the real
    gold (what recall answers) is among the candidates and counts; raw: nothing left out."""
    for ranking in ("filtered", "raw"):
        data = _data(zoo, candidates="6", ranking=ranking)
        blank = data.blank_pseudowords()
        for by_id in counterfactuals(data).values():
            for twin in by_id.values():
                req = counterfactual_requests(data, blank, twin, "explicit", "explicit", 0)[0]
                cands = req.candidates
                assert list(cands) == item_candidates(data, twin.original)  # the true item's list
                assert [cands[g] for g in req.golds] == twin.item.answers
                left_out = {cands[i] for i in req.also_true}
                assert left_out == ((twin.true - set(twin.item.answers)) & set(cands)
                                    if ranking == "filtered" else set())
                assert twin.original.answers[0] in cands
                assert twin.original.answers[0] not in left_out
                assert twin.item.premises[0].text in req.prompt


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_counterfactual_cells_rows_and_tests(tmp_path, zoo):
    """A frequency run (it recalls, never reads): its counterfactual cells hold the false
    term far below the true gold; copying (reads the premise) follows it."""
    found = {}
    for model in ("frequency", "copy"):
        out = tmp_path / model
        assert main(["study", "premise-ablation", "--model", model, "--ontology", str(zoo),
                     "--rules", "rdfs9,rdfs2", "--templates", "manual", "--limit", "0",
                     "--premises", "true,counterfactual", "--candidates", "6",
                     "--out", str(out)]) == 0
        rows = _read(out / "results.csv")
        assert "premises" in rows[0]
        assert {r["premises"] for r in rows} == {"true", "counterfactual"}
        tests = {t["comparison"]: t for t in _read(out / "comparisons.csv")
                 if t["family"] == "counterfactual"}
        assert "counterfactual vs true P1 written (P2 explicit)" in tests
        found[model] = tests
        assert "## Counterfactual premises" in (out / "report.md").read_text()
        preds = [json.loads(line) for line in (out / "predictions.jsonl").open()]
        assert any(p.get("premises") == "counterfactual" for p in preds)
    versus = "counterfactual vs true P1 written (P2 explicit)"
    assert float(found["copy"][versus]["difference"]) == pytest.approx(0, abs=1e-9)
    assert float(found["frequency"][versus]["difference"]) < -0.2


def test_run_without_counterfactuals_has_no_premises_column(tmp_path, zoo):
    out = tmp_path / "plain"
    assert main(["study", "premise-ablation", "--model", "random", "--ontology", str(zoo),
                 "--rules", "rdfs9", "--templates", "manual", "--limit", "2",
                 "--out", str(out)]) == 0
    assert "premises" not in _read(out / "results.csv")[0]
    assert "premises" not in json.loads((out / "config.json").read_text())
    assert {t["family"] for t in _read(out / "comparisons.csv")} == {"grid"}


def _copy_mrr(zoo: Path, kind: str) -> float:
    """`--model copy`'s MRR over the chained cells with every premise and 2 distractors
    written (depth 1 and 2), asked exactly as a run asks them (`depth.chain_requests`)."""
    from kgprobe.models.baselines import CopyBaseline
    from kgprobe.studies.premise_ablation.columns import WRITTEN
    from kgprobe.studies.premise_ablation.depth import chain_requests, chained_items
    from kgprobe.studies.probes import predict

    config = AblationConfig(None, rules=("rdfs9", "rdfs11", "rdfs2", "rdfs3"), limit=None,
                            candidates="5", ontology=zoo, depth=(1, 2), distractors=(0, 2),
                            distractor_kind=kind)
    data = build_data(config, config.load_source())
    chained = chained_items(data)
    requests = [r for rule in config.rules for depth in (1, 2)
                for r in chain_requests(data, data.blank_pseudowords(), chained, rule, depth, 2,
                                        WRITTEN, 0)]
    preds = predict(CopyBaseline([]), requests, filtered=True, batch_size=64, desc="",
                    progress=False)
    assert len(preds) > 20
    return sum(1 / min(p.ranks) for p in preds) / len(preds)


def test_copy_control_falls_with_naming_distractors(zoo):
    """A copy heuristic ranks the candidates the prompt names first: beside distractors that
    name no candidate the gold is (nearly) the only one and copying finds it; beside naming
    distractors (the default) other candidates are named too, often earlier."""
    mrr = {kind: _copy_mrr(zoo, kind) for kind in ("unrelated", "naming")}
    assert mrr["unrelated"] > 0.8, mrr
    assert mrr["naming"] < mrr["unrelated"] - 0.15, mrr


@pytest.mark.parametrize("args, named", [
    (["--premises", "counterfactual"], "--premises"),
    (["--premises", "true,imagined"], "--premises"),
    (["--premises", "true,counterfactual", "--protocol", "paper"], "--premises"),
])
def test_bad_premises_options_are_one_line(tmp_path, capsys, args, named):
    assert main(["study", "premise-ablation", "--dry-run", "--out", str(tmp_path / "x"),
                 "--templates", "manual", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0]
