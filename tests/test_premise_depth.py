"""Depth and distraction in premise ablation: chained items against the engine's provenance,
distractors, the premise order, and the run's files with and without the options."""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path

import pytest
from kgprobe.cli import main
from kgprobe.ontology.loaders import load_rdf
from kgprobe.ontology.model import RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from kgprobe.ontology.verbalize import load_templates
from kgprobe.reasoning.chains import DistractorPool, arrange, chain_items
from kgprobe.reasoning.items import item_closure
from kgprobe.reasoning.rdfs import RULES
from kgprobe.studies.premise_ablation.columns import COLUMNS

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

#: Beside the zoo: unrelated classes and properties that can stand beside its items as
#: distractors.
EXTRA = """ex:Car rdfs:subClassOf ex:Vehicle . ex:Truck rdfs:subClassOf ex:Vehicle .
ex:Vehicle rdfs:subClassOf ex:Machine . ex:Rose rdfs:subClassOf ex:Flower .
ex:Flower rdfs:subClassOf ex:Plant . ex:Oak rdfs:subClassOf ex:Tree .
ex:drives rdfs:domain ex:Driver ; rdfs:range ex:Car ; rdfs:subPropertyOf ex:uses .
ex:grows rdfs:domain ex:Gardener ; rdfs:range ex:Plant ; rdfs:subPropertyOf ex:tends .
ex:repairs rdfs:domain ex:Mechanic ; rdfs:range ex:Machine ; rdfs:subPropertyOf ex:handles .
"""
#: the rule of every step after a chain's first (written out here, not read from the module)
LATER = {"rdfs2": "rdfs9", "rdfs3": "rdfs9", "rdfs9": "rdfs9", "rdfs11": "rdfs11",
         "rdfs5": "rdfs5", "rdfs7": "rdfs7"}
SCHEMA = {RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    return write_zoo(tmp_path_factory.mktemp("zoo"), EXTRA)


@pytest.fixture(scope="module")
def world(zoo):
    source = load_rdf(zoo)
    onto, templates = source.ontology, load_templates()
    closure = item_closure(onto, source.triples)
    items = {(rule, k): chain_items(onto, closure, templates, rule, k)
             for rule in RULES for k in (1, 2, 3, 4)}
    return onto, closure, templates, items


def _walk(closure, rule: str, fact, schema) -> tuple:
    """The conclusion the engine's one-step derivations reach from `fact` through `schema`,
    each step a derivation whose premises are (schema premise, previous conclusion)."""
    conclusion = fact
    for i, premise in enumerate(schema):
        step = rule if i == 0 else LATER[rule]
        found = [d for d in closure.derivations(step) if d.premises == (premise, conclusion)]
        assert len(found) == 1, (step, premise, conclusion)
        conclusion = found[0].conclusion
    return conclusion


def _shortest(closure, rule: str, fact, target) -> int:
    """Fewest steps of asserted schema premises from `fact` to `target` (breadth first)."""
    frontier, seen, steps = {fact}, {fact}, 0
    while frontier and target not in frontier:
        step = rule if steps == 0 else LATER[rule]
        frontier = {d.conclusion for d in closure.derivations(step)
                    if d.premises[1] in frontier and d.premises[0] in closure.asserted} - seen
        seen |= frontier
        steps += 1
    return steps if target in frontier else -1


def test_items_of_depth_k_are_chains_of_k_derivations(world):
    onto, closure, templates, items = world
    for (rule, k), found in items.items():
        for item in found:
            assert len(item.premises) == k + 1  # k schema premises (P1), then the fact (P2)
            *schema, fact = [tuple(p.triple) for p in item.premises]
            assert item.premises[-1].role == "P2" and all(p.role == "P1" for p in item.premises[:-1])
            assert all(t in closure.asserted for t in (*schema, fact))
            conclusion = tuple(item.conclusion["triple"])
            assert _walk(closure, rule, fact, schema) == conclusion
            assert _shortest(closure, rule, fact, conclusion) == k  # needs k steps, not fewer
            assert item.id.startswith(f"{rule}-d{k}-")
    # every family chains in the zoo, and the words are the chain's
    assert all(items[(rule, 2)] for rule in RULES)
    assert all(items[(rule, 3)] for rule in ("rdfs2", "rdfs3", "rdfs7", "rdfs9"))
    assert not items[("rdfs11", 3)]  # Dog ⊑ mammal ⊑ animal ⊑ agent: two steps past the first
    texts = {tuple(p.text for p in i.premises): i.answers for i in items[("rdfs9", 3)]}
    assert texts[("Dog is a mammal .", "Mammal is an animal .", "Animal is an agent .",
                  "[X] is a dog .")] == ["agent"]
    assert not items[("rdfs9", 4)]  # no asserted chain of four steps under a typed entity


def test_distractors_are_true_irrelevant_and_exactly_n(world):
    onto, closure, templates, items = world
    pool = DistractorPool(onto, closure, templates)
    checked = 0
    for found in items.values():
        for item in found:
            terms = {t for p in item.premises for t in p.triple if t not in SCHEMA}
            terms |= {t for t in item.conclusion["triple"] if t not in SCHEMA}
            for n in (0, 1, 2):
                picked = pool.pick(item, n, seed=3)
                assert len(picked) == n
                assert pool.pick(item, n, seed=3) == picked  # seeded
                for d in picked:
                    assert tuple(d.triple) in closure.asserted  # true in the ontology
                    assert not terms & {d.triple[0], d.triple[2]}  # not about the item's terms
                    assert d.text not in [p.text for p in item.premises]
                    assert all(a.lower() not in d.text.lower() for a in item.answers)
                written = arrange(item, picked, "ordered", seed=3)
                assert len(written) == len(item.premises) + n
                assert [p for p in written if p.role != "D"] == item.premises  # chain order kept
                checked += 1
    assert checked > 30
    # a larger N keeps the smaller one's distractors
    item = items[("rdfs9", 2)][0]
    assert pool.pick(item, 3, seed=0)[:2] == pool.pick(item, 2, seed=0)


def test_shuffled_order_is_a_seeded_permutation(world):
    onto, closure, templates, items = world
    pool = DistractorPool(onto, closure, templates)
    moved = 0
    for found in items.values():
        for item in found:
            extra = pool.pick(item, 2, seed=0)
            ordered = arrange(item, extra, "ordered", seed=0)
            shuffled = arrange(item, extra, "shuffled", seed=0)
            assert sorted(p.text for p in shuffled) == sorted(p.text for p in ordered)
            assert arrange(item, extra, "shuffled", seed=0) == shuffled
            expected = list(ordered)
            random.Random(f"0:{item.id}:2:order").shuffle(expected)
            assert shuffled == expected
            moved += shuffled != ordered
    assert moved > 0


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_run_writes_depth_and_distractor_rows_and_curves(tmp_path, zoo, tiny_llama_dir):
    # rotary positions: the chained prompts outgrow the tiny GPT-2's 128 learned positions
    out = tmp_path / "deep"
    assert main(["study", "premise-ablation", "--model", str(tiny_llama_dir), "--ontology", str(zoo),
                 "--depth", "1,2,3", "--distractors", "0,2", "--templates", "manual",
                 "--limit", "2", "--pairs", "1", "--threads", "1", "--out", str(out)]) == 0
    rows = _read(out / "results.csv")
    assert list(rows[0])[:7] == ["rule", "p1", "p2", "template", "variant", "depth", "distractors"]
    means = {(r["depth"], r["distractors"], r["p1"]): r for r in rows
             if r["rule"] == "mean" and r["variant"] == "mean" and r["depth"]}
    for depth in ("1", "2", "3"):
        for n in ("0", "2"):
            row = means[(depth, n, "explicit")]
            assert int(row["n_items"]) > 0
            assert float(row["MRR_lo"]) <= float(row["MRR"]) <= float(row["MRR_hi"])
        assert int(means[(depth, "0", "unwritten")]["n_items"]) > 0
    per_rule = {(r["rule"], r["depth"]) for r in rows if r["variant"] == "mean" and r["depth"]}
    assert {("rdfs9", d) for d in ("1", "2", "3")} <= per_rule
    assert all(r["depth"] == "" for r in rows if r["p1"] in ("not", "implicit"))  # the grid
    assert (out / "depth.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "## Depth and distraction" in report and "![depth](depth.png)" in report
    tests = [t for t in _read(out / "comparisons.csv") if t["family"] == "depth"]
    assert {t["comparison"] for t in tests} >= {"depth 3 vs 1 (0 distractors)",
                                                 "2 vs 0 distractors (depth 2)"}
    preds = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    # a chained depth-1 prompt in order without distractors is the grid's explicit one
    grid = {(p["item"], p["variant"]): p["prompt"] for p in preds
            if "depth" not in p and p["p1"] == p["p2"] == "explicit"}
    chained = {(p["item"], p["variant"]): p["prompt"] for p in preds
               if p.get("depth") == 1 and p["distractors"] == 0 and p["p1"] == "explicit"}
    assert chained and all(grid[k] == v for k, v in chained.items())
    deep = [p for p in preds if p.get("depth") == 3 and p["distractors"] == 2 and p["p1"] == "explicit"]
    conjunction = load_templates().conjunction
    # four premises and two distractors before the conjunction
    assert deep and all(p["prompt"].split(conjunction)[0].count(" .") == 3 + 1 + 2 for p in deep)


def test_run_without_the_options_has_no_new_columns(tmp_path, zoo, tiny_gpt2_dir):
    out = tmp_path / "plain"
    assert main(["study", "premise-ablation", "--model", str(tiny_gpt2_dir), "--ontology", str(zoo),
                 "--rules", "rdfs9", "--templates", "manual", "--limit", "1", "--pairs", "1",
                 "--threads", "1",
                 "--out", str(out)]) == 0
    from kgprobe.studies.controls import default_controls
    from kgprobe.studies.premise_ablation.contrasts import control_columns

    header = list(_read(out / "results.csv")[0])
    # the default controls' values (a language model's: prior among them), no depth columns
    assert header == COLUMNS + control_columns(default_controls(str(tiny_gpt2_dir)))
    config = json.loads((out / "config.json").read_text())
    assert not {"depth", "distractors", "premise_order"} & set(json.dumps(config).split('"'))
    assert all("depth" not in json.loads(line) for line in (out / "predictions.jsonl").open())
    assert not (out / "depth.png").exists()
    assert {t["family"] for t in _read(out / "comparisons.csv")} == {"grid"}
    assert "Depth and distraction" not in (out / "report.md").read_text()


def test_dry_run_writes_chained_prompts(tmp_path, zoo):
    def prompts(*extra: str) -> list[dict]:
        out = tmp_path / "-".join(extra or ("plain",))
        assert main(["study", "premise-ablation", "--dry-run", "--ontology", str(zoo), "--rules",
                     "rdfs9", "--templates", "manual", "--out", str(out), *extra]) == 0
        return [json.loads(line) for line in (out / "prompts.jsonl").open()]

    plain = prompts()
    deep = prompts("--depth", "1,2,3", "--distractors", "0,2", "--premise-order", "shuffled")
    assert deep[:len(plain)] == plain  # the grid's prompts as before
    chains = deep[len(plain):]
    assert chains and {p["extra"]["kind"] for p in chains} == {"chain"}
    assert {(p["extra"]["depth"], p["extra"]["distractors"]) for p in chains} == {
        (d, n) for d in (1, 2, 3) for n in (0, 2)}
    needed = ("Dog is a mammal .", "Mammal is an animal .", "[X] is a dog .")
    assert any(all(s in p["text"] for s in needed) for p in chains
               if p["extra"]["depth"] == 2 and p["extra"]["written"])


@pytest.mark.parametrize("args, named", [
    (["--depth", "0"], "--depth"), (["--depth", "1,x"], "--depth"),
    (["--distractors", "-1"], "--distractors"),
    (["--depth", "2", "--templates", "manual,soft"], "--templates manual"),
])
def test_bad_options_are_one_line(tmp_path, capsys, args, named):
    assert main(["study", "premise-ablation", "--dry-run", "--out", str(tmp_path / "x"),
                 "--templates", "manual", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0]
