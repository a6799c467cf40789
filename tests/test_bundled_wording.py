"""Issue 33 #10: the bundled ontology's own default-protocol prompts, as the premise-ablation
dry run writes them, read as English (labels worded by `ontology.wording`, its proper names
kept by `ontology/bundled_names.toml`). The paper protocol reads the files' labels unchanged:
tests/test_paper_protocol.py holds its prompts to the official ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kgprobe.ontology.loaders import bundled_source
from kgprobe.ontology.wording import class_label, keep_names

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import ok  # noqa: E402


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> set[str]:
    """Every prompt of rdfs9 (subclass, then type) and rdfs2/rdfs3 (domain, range) items."""
    out = tmp_path_factory.mktemp("bundled-wording")
    ok(out, "study", "premise-ablation", "--ontology", "bundled", "--dry-run", "--limit", "0",
       "--templates", "manual", "--candidates", "20", "--rules", "rdfs9,rdfs2,rdfs3",
       "--out", str(out / "run"))
    lines = (out / "run" / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["text"] for line in lines}


def test_the_quoted_item_10_prompts_are_grammatical(texts):
    premise = "Australian football team is a sports team . [X] is an Australian football team ."
    assert any(t.startswith(premise) for t in texts)
    assert any(t.startswith("Gene is a biomolecule . [X] is a gene .") for t in texts)
    assert any("[X] is a gnetophyte ." in t for t in texts)
    assert "One has to be a particular [MASK] if one is part of a constellation ." in texts
    assert any(t.startswith("One has to be a particular celestial body if one is part of a "
                            "constellation . [X] is part of constellation [Y] .") for t in texts)
    for wrong in ("football Team", "Biomolecule", "Gnetophytes", "constellation a constellation"):
        assert not [t for t in texts if wrong in t], wrong


def test_proper_names_keep_their_capitals(texts):
    """What wording alone lowered ("latter day saint", "supreme court of the united states
    case", "an american leader") reads as written, or as the name is spelt where the files
    lowered it ("nascar driver")."""
    for label in ("Latter Day Saint", "Supreme Court of the United States case",
                  "American leader", "NASCAR driver", "Grand Prix"):
        assert any(f" is a {label} ." in t or f" is an {label} ." in t for t in texts), label
    assert not [t for t in texts if "latter day saint" in t.lower() and "Latter Day" not in t]


def test_keep_names_restores_a_listed_name_in_any_case():
    names = ("Supreme Court of the United States", "Olympics", "Canadian")
    assert class_label("Supreme Court of the United States case", names=names)[0] == \
        "Supreme Court of the United States case"
    assert class_label("olympics", names=names)[0] == "Olympics"  # not "olympic"
    assert class_label("canadian football Player", names=names)[0] == "Canadian football player"
    assert class_label("Legal Case", names=names)[0] == "legal case"  # no name: lowered
    assert keep_names("canadianism", "canadianism", names) == "canadianism"  # whole words only


def test_the_paper_protocol_reads_the_files_labels():
    """`bundled_source()` (what `--protocol paper`, the paper's sets and memorization read)
    keeps the labels as the files write them."""
    labels = {c.label for c in bundled_source().ontology.classes.values()}
    assert {"australian football Team", "Biomolecule", "Gnetophytes"} <= labels
