"""COPEN official loaders (fixtures in the authors' record schema), selection and splits."""

from __future__ import annotations

import json
import zipfile

import pytest

from kgprobe.errors import KgprobeError
from kgprobe.reasoning.copen_items import (
    CPJItem, humanize_concept, lexical_overlap, load_official, select, to_json, write_official,
)
from kgprobe.reasoning.copen_split import PAPER_SPLIT, split_top_levels

CSJ_RECORDS = [
    {"query": {"name": "Inter Milan"}, "label": "Q2",
     "candidates": [{"id": "Q1", "name": "Milan"}, {"id": "Q2", "name": "Pohang Steelers"},
                    {"id": "Q3", "name": "Milan Fashion Week"}]},
    {"query": {"name": "Dolly"}, "label": -1,
     "candidates": [{"id": "Q7", "name": "Grumpy Cat"}, {"id": "Q8", "name": "UK"}]},
]
CSJ_YN = [{"query": {"name": "Inter Milan", "concept": "FootballClub"},
           "y": {"id": "Q2", "name": "Pohang Steelers"},
           "n": [{"id": "Q1", "name": "Milan"}, {"id": "Q3", "name": "Serie A"}]}]
CPJ_RECORDS = [
    {"text": "Mammals raise their young on milk .", "concept": {"pos": [0, 1]}, "label": 1, "chain_id": 7},
    {"text": "Animals raise their young on milk .", "concept": {"pos": [0, 1]}, "label": 0, "chain_id": 7},
    {"text": "Musical instruments are made of wood .", "concept": {"pos": [0, 2]}, "label": -1},
]
CIC_RECORDS = [
    {"sentence": "Dolly is running on the grassland .", "entity": {"name": "Dolly", "pos": [0, 1]},
     "concept_chains": [["Horse", "Mammal", "Animal"]], "candidates": ["Horse", "Mammal", "Animal"],
     "label": "Animal"},
    {"sentence": "He was nominated by President Jimmy Carter to the court .",
     "entity": {"name": "Jimmy Carter", "pos": [5, 7]},
     "concept_chains": [["BusinessPerson", "Person"], ["Politician", "Person"]],
     "candidates": ["BusinessPerson", "Person", "Politician"], "label": -1},
]


def write_layout(root, task_dir, splits):
    for split, records in splits.items():
        (root / task_dir).mkdir(parents=True, exist_ok=True)
        (root / task_dir / f"{split}.json").write_text(json.dumps(records), encoding="utf-8")


def test_csj_loader_reads_candidates_and_keeps_hidden_labels_unlabeled(tmp_path):
    write_layout(tmp_path, "task1", {"test": CSJ_RECORDS})
    items = load_official(tmp_path, "csj")["test"]
    assert [it.label for it in items] == [1, None]
    assert items[0].candidates == ["Milan", "Pohang Steelers", "Milan Fashion Week"]
    assert items[0].kinds == [None, "answer", None]  # distractor kinds unknown in this schema


def test_csj_loader_accepts_the_answer_and_distractor_shape(tmp_path):
    write_layout(tmp_path, "task1", {"dev": CSJ_YN})
    item = load_official(tmp_path, "csj")["dev"][0]
    assert item.candidates[item.label] == "Pohang Steelers" and item.concept == "FootballClub"


def test_cpj_loader_reads_spans_chains_and_hidden_labels(tmp_path):
    write_layout(tmp_path, "task2", {"test": CPJ_RECORDS})
    items = load_official(tmp_path, "cpj")["test"]
    assert [it.label for it in items] == [1, 0, None]
    assert items[2].pieces() == ("", "Musical instruments", "are made of wood .")
    assert items[0].chains == ["7"] and items[2].chains == []


def test_cic_loader_reads_chains_and_humanizes_concepts(tmp_path):
    write_layout(tmp_path, "task3", {"test": CIC_RECORDS})
    items = load_official(tmp_path, "cic")["test"]
    assert items[0].candidates == ["horse", "mammal", "animal"] and items[0].label == 2
    assert items[1].label is None and items[1].mention == "Jimmy Carter"
    assert items[1].chains == [["business person", "person"], ["politician", "person"]]


def test_loader_reads_the_zip_with_a_top_folder(tmp_path):
    archive = tmp_path / "copen_data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("copen_data/task3/test.json", json.dumps(CIC_RECORDS))
        z.writestr("copen_data/task3/train.json", json.dumps(CIC_RECORDS[:1]))
    data = load_official(archive, "cic")
    assert sorted(data) == ["test", "train"] and len(data["test"]) == 2


def test_loader_errors_name_the_input(tmp_path):
    write_layout(tmp_path, "task1", {"test": [{"query": {"name": "x"}, "candidates": [{"id": 1, "name": "y"}],
                                               "label": 9}]})
    with pytest.raises(KgprobeError, match="label 9 is not a candidate id"):
        load_official(tmp_path, "csj")
    with pytest.raises(KgprobeError, match="task2"):
        load_official(tmp_path, "cpj")
    write_layout(tmp_path, "task2", {"test": [{"text": "Dogs bark .", "concept": {"pos": [2, 9]}, "label": 1}]})
    with pytest.raises(KgprobeError, match="outside"):
        load_official(tmp_path, "cpj")


def test_written_sets_read_back_identically(tmp_path):
    for task, folder, records in (("csj", "task1", CSJ_RECORDS), ("cpj", "task2", CPJ_RECORDS),
                                  ("cic", "task3", CIC_RECORDS)):
        write_layout(tmp_path / "in", folder, {"test": records})
        items = load_official(tmp_path / "in", task)["test"]
        write_official(tmp_path / "out", task, {"test": items})
        again = load_official(tmp_path / "out", task)["test"]
        assert [to_json(i) for i in again] == [to_json(i) for i in items]


def test_select_keeps_groups_whole_and_is_seeded():
    items = [CPJItem(f"i{k}", "test", "Dogs bark .", (0, 1), 1, group=f"g{k // 3}") for k in range(30)]
    chosen = select(items, 10, seed=1)
    groups = {it.group for it in chosen}
    assert len(chosen) == 9 and all(sum(it.group == g for it in chosen) == 3 for g in groups)
    assert [it.id for it in select(items, 10, seed=1)] == [it.id for it in chosen]
    assert [it.id for it in select(items, 10, seed=2)] != [it.id for it in chosen]
    assert select(items, None, seed=1) == items


def test_top_level_split_follows_table16_and_fills_both_sides():
    sides = split_top_levels({"Person": 50, "Place": 40, "Gadget": 30, "Widget": 30}, seed=0)
    assert sides["Person"] == "train" and sides["Place"] == "test"
    assert {sides["Gadget"], sides["Widget"]} <= {"train", "test"}
    assert set(split_top_levels({"a": 1, "b": 1}, seed=0).values()) == {"train", "test"}
    assert PAPER_SPLIT["species"] == "test"


def test_lexical_overlap_and_concept_names():
    assert lexical_overlap("Stanford University", "University of California")
    assert lexical_overlap("Nile River", "rivers of Egypt")
    assert not lexical_overlap("Inter Milan", "Pohang Steelers")
    assert not lexical_overlap("The Hague", "the Alps")  # function words do not count
    assert humanize_concept("Q5_SportsTeam") == "sports team" and humanize_concept("person") == "person"
