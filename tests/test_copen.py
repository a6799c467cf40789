"""The COPEN study: generators on a tiny ontology and on the shared McRae norms, the
analyses, and every method end to end on tiny models (plus one slow run on smollm2-135m)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from kgprobe.errors import KgprobeError
from kgprobe.ontology.loaders import Source
from kgprobe.ontology.model import Instance, OntClass, Ontology, OntProperty
from kgprobe.ontology.norms import load_mcrae
from kgprobe.reasoning.copen_items import by_split, lexical_overlap, to_json
from kgprobe.reasoning.copen_kg import generate_cic, generate_csj
from kgprobe.reasoning.copen_taxonomy import Taxonomy
from kgprobe.reasoning.copen_norms import (
    NormIndex,
    category_parents,
    concept_chain,
    generate_cpj,
)
from kgprobe.studies.copen.analysis import task_metrics
from kgprobe.studies.copen.study import COLUMNS, CopenConfig, run_copen

MCRAE = Path(__file__).resolve().parents[2] / "shared" / "data" / "mcrae"
EX = "http://example.org/"
PERSON = "http://dbpedia.org/ontology/Person"  # cut to a top-level concept, as in the paper

TREE = {"Animal": None, "Mammal": "Animal", "Bird": "Animal", "Dog": "Mammal", "Cat": "Mammal",
        "Eagle": "Bird", "Parrot": "Bird", "Place": None, "City": "Place", "River": "Place",
        "Mountain": "Place", "Food": None, "Fruit": "Food", "Vegetable": "Food",
        "Person": "Animal", "Politician": "Person", "Writer": "Person", "Work": None,
        "Book": "Work", "Film": "Work"}
LEAVES = ["Dog", "Cat", "Eagle", "Parrot", "City", "River", "Mountain", "Fruit", "Vegetable",
          "Politician", "Writer", "Book", "Film"]


def iri(name: str) -> str:
    return PERSON if name == "Person" else EX + name


def words():
    """Distinct made-up words, so instance labels share no word by accident."""
    for a in "BDFGKLMNPRSTVZ":
        for b in "aeiou":
            for c in "dklmnrst":
                for d in "aeiou":
                    yield f"{a}{b}{c}{d}"


def tiny_ontology() -> Ontology:
    onto = Ontology("tiny")
    for name, parent in TREE.items():
        onto.classes[iri(name)] = OntClass(iri(name), name.lower(), [iri(parent)] if parent else [])
    gen = words()
    for leaf in LEAVES:
        for k in range(8):
            word = next(gen)
            label = f"{word} River" if leaf == "River" else f"{word} {next(gen)}"
            onto.instances[EX + word] = Instance(EX + word, label, [iri(leaf)])
    props = {"spouse": ("Person", "Person", "[X]'s spouse is [Y] ."),
             "mayor": ("City", "Politician", "[X]'s mayor is [Y] ."),
             "wrote": ("Writer", "Book", "[X] wrote [Y] ."),
             "flowsThrough": ("River", "City", "[X] flows through [Y] .")}
    for name, (dom, rng, pattern) in props.items():
        onto.properties[EX + name] = OntProperty(EX + name, name, [iri(dom)], [iri(rng)], pattern=pattern)
    for who in ("Alice Moreau", "Bob Tanaka", "Jimmy Okafor"):
        onto.instances[EX + who.replace(" ", "_")] = Instance(EX + who.replace(" ", "_"), who, [])
    by_type = lambda leaf: sorted(i for i, v in onto.instances.items() if iri(leaf) in v.types)
    city1, city2 = by_type("City")[:2]
    alice, bob, jimmy = (EX + w for w in ("Alice_Moreau", "Bob_Tanaka", "Jimmy_Okafor"))
    onto.facts = [(city1, EX + "mayor", alice), (alice, EX + "spouse", bob),
                  (city2, EX + "mayor", jimmy), (jimmy, EX + "wrote", by_type("Book")[0]),
                  (by_type("River")[0], EX + "flowsThrough", city1)]
    return onto


@pytest.fixture(scope="module")
def onto():
    return tiny_ontology()


# ----------------------------------------------------------------------------- CSJ generator


def test_csj_hard_distractors_share_a_superordinate_and_easy_ones_do_not(onto):
    items, report = generate_csj(onto, seed=0)
    tax = Taxonomy.of(onto)
    assert items and all(len(it.candidates) == 21 for it in items)
    for it in items:
        qconcept = it.provenance["triples"][0][2]
        assert [k for k in it.kinds].count("answer") == 1 and it.kinds.count("hard") == 5
        for cid, kind in zip(it.candidate_ids, it.kinds):
            (ctype,) = onto.instances[cid].types
            shared = set(tax.up(ctype)) & set(tax.ancestors(qconcept))
            if kind == "answer":
                assert ctype == qconcept
            elif kind == "hard":
                assert shared and ctype != qconcept and ctype not in tax.ancestors(qconcept)
            else:
                assert not shared and set(tax.roots(ctype)).isdisjoint(tax.roots(qconcept))


def test_csj_has_no_lexical_overlap_between_query_and_answer(onto):
    items, report = generate_csj(onto, seed=0)
    assert all(not lexical_overlap(it.query, it.candidates[it.label]) for it in items)
    # every River instance is "… River": no River query survives the artifact filter
    assert not any(it.concept == "river" for it in items)
    assert report.counts["queries skipped: every answer shares a word with the query"] == 8


def test_csj_splits_are_disjoint_by_top_level_concept_and_seeded(onto):
    items, _ = generate_csj(onto, seed=0)
    tax = Taxonomy.of(onto)
    roots = {s: {r for it in v for cid in it.candidate_ids for t in onto.instances[cid].types
                 for r in tax.roots(t)} for s, v in by_split(items).items()}
    assert roots["test"] and roots["train"] and roots["dev"]
    assert roots["test"].isdisjoint(roots["train"] | roots["dev"])
    assert roots["test"] == {iri("Place"), iri("Food")}  # Table 16 puts both in test
    again, _ = generate_csj(onto, seed=0)
    other, _ = generate_csj(onto, seed=1)
    assert [to_json(i) for i in again] == [to_json(i) for i in items]
    assert [to_json(i) for i in other] != [to_json(i) for i in items]


# ----------------------------------------------------------------------------- CiC generator


def test_cic_gold_is_the_level_the_context_supports(onto):
    items, _ = generate_cic(onto, seed=0)
    spouse = [it for it in items if it.sentence == "Alice Moreau's spouse is Bob Tanaka ."]
    assert len(spouse) == 1  # Bob's only chain is [person]: no item for him
    item = spouse[0]
    assert item.entity == "Alice Moreau" and item.candidates == ["politician", "person"]
    assert item.candidates[item.label] == "person"  # not politician, although she is one
    assert item.provenance["context"]["rule"] == "rdfs2"
    assert item.provenance["context"]["triples"][0] == [EX + "Alice_Moreau", EX + "spouse", EX + "Bob_Tanaka"]
    mayor = [it for it in items if it.entity == "Alice Moreau" and "mayor" in it.sentence][0]
    assert mayor.candidates[mayor.label] == "politician" and mayor.provenance["context"]["rule"] == "rdfs3"


def test_cic_entities_with_several_chains_give_disambiguation_items(onto):
    items, _ = generate_cic(onto, seed=0)
    jimmy = [it for it in items if it.entity == "Jimmy Okafor"]
    assert {tuple(map(tuple, it.chains)) for it in jimmy} == {(("politician", "person"), ("writer", "person"))}
    golds = {it.sentence.split()[1]: it.candidates[it.label] for it in jimmy}
    assert golds == {"wrote": "writer", "mayor": "politician"} or set(golds.values()) == {"writer", "politician"}


def test_cic_drops_gold_concepts_named_in_the_sentence(onto):
    items, report = generate_cic(onto, seed=0)
    assert all(not lexical_overlap(it.candidates[it.label], it.sentence) for it in items)
    assert not any(it.candidates[it.label] == "river" for it in items)
    assert report.counts["contexts skipped: the gold concept shares a word with the sentence"] == 1


# ----------------------------------------------------------------------------- CPJ generator


@pytest.fixture(scope="module")
def loaded():
    return load_mcrae(MCRAE)


@pytest.fixture(scope="module")
def norms(loaded):
    return NormIndex.of(loaded)


@pytest.fixture(scope="module")
def cpj(loaded):
    return generate_cpj(loaded, seed=0)


def test_cpj_chains_follow_the_taxonomic_features(norms, cpj):
    items, _ = cpj
    members, parent = category_parents(norms)
    assert concept_chain("dog", norms, members, parent) == ["dog", "mammal", "animal"]
    chains: dict[str, list] = {}
    for it in items:
        for c in it.chains:
            chains.setdefault(c, []).append(it)
    assert "dog>mammal>animal|beh_-_barks" in chains
    assert "dog>mammal>animal|has_fur" not in chains  # 15 of 42 mammals list fur: undecided
    for chain_id, stmts in chains.items():
        concept, *cats = chain_id.split("|")[0].split(">")
        listed = set(norms.categories[concept])
        assert cats and set(cats) <= listed  # every category is a taxonomic feature of the concept
        assert all(parent[a] == b for a, b in zip(cats, cats[1:]))
        labels = [s.label for s in stmts]
        assert len(stmts) == len(cats) + 1 and labels[0] == 1
        assert labels == sorted(labels, reverse=True)  # true below, false above: monotone
    barks = chains["dog>mammal>animal|beh_-_barks"]
    assert [(s.text, s.label) for s in barks] == [("Dogs bark .", 1), ("Mammals bark .", 0), ("Animals bark .", 0)]
    assert barks[1].provenance["share"] < 0.2 and barks[0].provenance["norm_rows"][0]["Prod_Freq"] == 21
    assert any(s.label == 1 for stmts in chains.values() for s in stmts[1:])  # true above, too


def test_cpj_negatives_swap_in_a_concept_that_lacks_the_property(norms, cpj):
    items, _ = cpj
    negatives = [it for it in items if "swapped_to" in it.provenance]
    assert len(negatives) > 1000
    for it in negatives[:500]:
        feature = it.provenance["norm_rows"][0]["feature"]
        assert feature not in norms.features[it.provenance["swapped_to"]]
        assert feature in norms.features[it.provenance["swapped_from"]]
        assert it.label == 0 and not it.chains
    positives = [it for it in items if it.label == 1 and it.provenance.get("norm_rows")]
    assert all(r["BR_Label"] != "taxonomic" for it in positives for r in it.provenance["norm_rows"])
    splits = by_split(items)
    concept_of = lambda it: it.provenance["norm_rows"][0]["concept"]
    test_concepts = {concept_of(it) for it in splits["test"]}
    assert test_concepts and test_concepts.isdisjoint({concept_of(it) for it in splits["train"] + splits["dev"]})


def test_norms_reader_names_a_wrong_folder(tmp_path):
    with pytest.raises(KgprobeError, match="--norms"):
        load_mcrae(tmp_path)


# ----------------------------------------------------------------------------- analyses


def test_task_metrics_follow_the_papers_definitions():
    csj = [{"label": 0, "pred": 0, "correct": True, "scores": [3, 2, 1, 0], "kinds": ["answer", "hard", "easy", "easy"]},
           {"label": 0, "pred": 2, "correct": False, "scores": [1, 0, 2, 3], "kinds": ["answer", "hard", "easy", "easy"]},
           {"label": None, "pred": 0, "correct": None, "scores": [1, 0, 0, 0], "kinds": [None] * 4}]
    m = task_metrics("csj", csj)
    assert m["n"] == 2 and m["n_unlabeled"] == 1 and m["accuracy"] == 0.5 and m["tie_share"] == 0.0
    assert m["mrr_hard"] == pytest.approx((1 + 1 / 3) / 2)  # hard ranked 1st, then 3rd, of 3 distractors
    assert m["mrr_easy"] == pytest.approx(((1 / 2 + 1 / 3) / 2 + (1 / 2 + 1) / 2) / 2)
    cpj = [{"label": 1, "pred": 1, "correct": True, "chains": ["a"]},
           {"label": 0, "pred": 1, "correct": False, "chains": ["a"]},
           {"label": 1, "pred": 1, "correct": True, "chains": ["b"]},
           {"label": 0, "pred": 0, "correct": True, "chains": ["b"]},
           {"label": 1, "pred": 0, "correct": False, "chains": []}]
    m = task_metrics("cpj", cpj)
    assert m["chain_accuracy"] == 0.5 and m["n_chains"] == 2 and m["fp_share"] == 0.5
    assert task_metrics("cpj", cpj, {"a": 2, "b": 3})["n_chains"] == 1  # chain b is incomplete
    cic = [{"label": 0, "pred": 1, "correct": False, "ooc_pred": 1, "candidates": ["a", "b", "c"],
            "chains": [["a", "b"], ["c", "b"]]},
           {"label": 0, "pred": 2, "correct": False, "ooc_pred": 0, "candidates": ["a", "b", "c"],
            "chains": [["a", "b"], ["c", "b"]]},
           {"label": 0, "pred": 0, "correct": True, "ooc_pred": 1, "candidates": ["a", "b"], "chains": [["a", "b"]]}]
    m = task_metrics("cic", cic)
    assert m["ooc_share"] == 0.5 and m["disambiguation_share"] == 0.5 and m["wrong_level_share"] == 0.5


# ----------------------------------------------------------------------------- end to end


def official_fixture(root: Path) -> Path:
    """Small train/dev/test sets in the official schema (words the tiny models know)."""
    words = ["paris", "berlin", "france", "germany", "person", "animal", "agent", "work", "place",
             "event", "fruit", "player"]

    def csj(k, hidden=False):
        cands = [{"id": f"c{j}", "name": words[(k + j) % len(words)]} for j in range(4)]
        return {"query": {"name": words[(k + 5) % len(words)]}, "candidates": cands,
                "label": -1 if hidden else f"c{k % 4}"}

    def cpj(k, hidden=False):
        text = f"{words[k % len(words)]} is a particular {words[(k + 3) % len(words)]} ."
        return {"text": text, "concept": {"pos": [0, 1]}, "label": -1 if hidden else k % 2,
                "chain_id": f"ch{k // 2}"}

    def cic(k, hidden=False):
        chains = [["player", "person", "agent"]] + ([["place", "work"]] if k % 2 else [])
        cands = [c for ch in chains for c in ch]
        return {"sentence": f"{words[k % len(words)]} is the capital of france .",
                "entity": {"name": words[k % len(words)], "pos": [0, 1]}, "concept_chains": chains,
                "candidates": cands, "label": -1 if hidden else cands[k % len(cands)]}

    for folder, make in (("task1", csj), ("task2", cpj), ("task3", cic)):
        for split, n in (("train", 8), ("dev", 4), ("test", 6)):
            recs = [make(k) for k in range(n)] + ([make(99, hidden=True)] if split == "test" else [])
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / f"{split}.json").write_text(json.dumps(recs), encoding="utf-8")
    return root


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_zero_shot_end_to_end_on_official_fixtures(tmp_path, tiny_gpt2):
    data = official_fixture(tmp_path / "copen")
    cfg = CopenConfig(model="tiny", method="zero-shot", data=str(data))
    rows = run_copen(cfg, tmp_path / "out", loaded=tiny_gpt2, progress=False)
    assert [(r["task"], r["variant"]) for r in rows] == [
        ("csj", "query"), ("csj", "candidate"), ("csj", "all"), ("cpj", "concept"), ("cpj", "answer"),
        ("cpj", "all"), ("cic", "concept"), ("cic", "all")]
    assert all(r["n"] == 6 and r["n_unlabeled"] == 1 for r in rows)
    # a causal model scores the query before any candidate: every candidate ties, so no hit
    assert rows[0]["accuracy"] == 0.0 and rows[0]["mrr_answer"] == pytest.approx(1 / 4)
    assert rows[0]["tie_share"] == 1.0 and rows[1]["tie_share"] == 0.0
    table = read_csv(tmp_path / "out" / "results.csv")
    assert list(table[0]) == COLUMNS and len(table) == 8
    preds = [json.loads(l) for l in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 8 * 7 and sum(p["label"] is None for p in preds) == 8
    assert all("ooc_pred" in p for p in preds if p["task"] == "cic")
    report = (tmp_path / "out" / "report.md").read_text()
    for heading in ("Table 3", "Table 4", "Tables 5 and 13", "| CSJ | 8 | 4 | 7 | 7 | 1 |",
                    "query (every choice ties)"):
        assert heading in report


def test_zero_shot_with_a_masked_model_uses_pseudo_log_likelihood(tmp_path, tiny_bert):
    data = official_fixture(tmp_path / "copen")
    cfg = CopenConfig(model="tiny-bert", method="zero-shot", data=str(data), tasks=["csj"], parts=["query"])
    rows = run_copen(cfg, tmp_path / "out", loaded=tiny_bert, progress=False)
    preds = [json.loads(l) for l in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    # bidirectional: the query's pseudo-log-likelihood depends on the candidate
    assert rows[0]["variant"] == "query" and any(len(set(p["scores"])) > 1 for p in preds)


def test_linear_probing_end_to_end_reports_mean_and_std_over_seeds(tmp_path, tiny_gpt2):
    data = official_fixture(tmp_path / "copen")
    cfg = CopenConfig(model="tiny", method="linear", data=str(data), seeds=[42, 43],
                      hparams={"linear": {"epochs": 5}})
    rows = run_copen(cfg, tmp_path / "out", loaded=tiny_gpt2, progress=False)
    assert [(r["task"], r["seed"]) for r in rows] == [(t, s) for t in ("csj", "cpj", "cic") for s in (42, 43)]
    assert all(1 <= r["best_epoch"] <= 5 and r["n"] == 6 for r in rows)
    assert list((tmp_path / "out" / "cache").glob("features-*.npz"))
    report = (tmp_path / "out" / "report.md").read_text()
    assert "±" in report and "per seed" in report


def test_finetuning_end_to_end_changes_the_models_scores(tmp_path, tiny_llama):
    data = official_fixture(tmp_path / "copen")
    before = [p.detach().clone() for p in tiny_llama.model.parameters()]
    cfg = CopenConfig(model="tiny", method="finetune", data=str(data), tasks=["cpj", "cic"], seeds=[42],
                      hparams={"finetune": {"epochs": 1, "lr": 1e-3}})
    rows = run_copen(cfg, tmp_path / "out", loaded=tiny_llama, progress=False)
    assert [(r["task"], r["best_epoch"]) for r in rows] == [("cpj", 1), ("cic", 1)]
    assert all(a.equal(b) for a, b in zip(before, tiny_llama.model.parameters()))  # a copy is trained
    preds = [json.loads(l) for l in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert all(isinstance(p["pred"], int) for p in preds) and any("ooc_pred" in p for p in preds)


def test_a_rerun_resumes_and_refuses_other_settings(tmp_path, tiny_gpt2):
    data = official_fixture(tmp_path / "copen")
    cfg = CopenConfig(model="tiny", method="zero-shot", data=str(data), tasks=["cpj"])
    first = run_copen(cfg, tmp_path / "out", loaded=tiny_gpt2, progress=False)
    units = sorted((tmp_path / "out" / "units").iterdir())
    stamp = units[0].stat().st_mtime_ns
    units[1].unlink()
    again = run_copen(cfg, tmp_path / "out", loaded=None, progress=False)  # cache: no model needed
    assert again == first and units[0].stat().st_mtime_ns == stamp
    with pytest.raises(KgprobeError, match="other settings"):
        run_copen(CopenConfig(model="tiny", method="zero-shot", data=str(data), tasks=["cpj"], limit=2),
                  tmp_path / "out", loaded=tiny_gpt2, progress=False)


def test_cli_generates_from_the_store_and_writes_the_outputs(tmp_path, tiny_gpt2_dir, capsys):
    from kgprobe.cli import main
    from kgprobe.kg.store import KnowledgeGraph

    onto = tiny_ontology()
    with KnowledgeGraph(tmp_path / "store") as kg:
        kg.add_sources([Source("tiny", "tiny", onto, list(onto.triples()))])
    out = tmp_path / "out"
    code = main(["study", "copen", "--task", "csj,cic", "--method", "zero-shot", "--from-kg",
                 "--store", str(tmp_path / "store"), "--model", str(tiny_gpt2_dir), "--limit", "3",
                 "--parts", "candidate,concept", "--out", str(out)])
    assert code == 0
    assert {p.name for p in out.iterdir()} >= {"results.csv", "predictions.jsonl", "report.md", "data", "config.json"}
    test = json.loads((out / "data" / "task3" / "test.json").read_text())
    assert all("provenance" in r and r["label"] in r["candidates"] for r in test)
    rows = read_csv(out / "results.csv")
    assert [(r["task"], r["variant"], r["n"]) for r in rows] == [("csj", "candidate", "3"), ("cic", "concept", "3")]
    assert "accuracy" in capsys.readouterr().out
    # CPJ from the knowledge graph needs the norms: one line, exit status 2
    code = main(["study", "copen", "--task", "cpj", "--method", "zero-shot", "--from-kg",
                 "--model", str(tiny_gpt2_dir), "--out", str(tmp_path / "x")])
    assert code == 2 and "--norms" in capsys.readouterr().err


@pytest.mark.slow
def test_smollm2_zero_shot_and_linear_on_generated_sets(tmp_path):
    common = dict(model="smollm2-135m", from_kg=True, store=str(tmp_path / "no-store"), norms=str(MCRAE),
                  limit=4)
    rows = run_copen(CopenConfig(method="zero-shot", parts=["candidate", "answer", "concept"], **common),
                     tmp_path / "zs", progress=False)
    assert {r["task"] for r in rows} == {"csj", "cpj", "cic"}
    assert all(r["n"] >= 1 and 0.0 <= r["accuracy"] <= 1.0 for r in rows)
    summary = json.loads((tmp_path / "zs" / "data" / "summary.json").read_text())
    assert summary["csj"]["source"] == "bundled OntoProbe ontology" and summary["cpj"]["counts"]["chains"] > 100
    rows = run_copen(CopenConfig(method="linear", tasks=["cpj"], train_limit=24, seeds=[42],
                                 hparams={"linear": {"epochs": 20}}, **common), tmp_path / "lp", progress=False)
    assert rows[0]["n"] >= 4 and rows[0]["best_epoch"] >= 1
