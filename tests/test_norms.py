"""Feature-norm loaders (McRae, CSLB) and property phrasing."""

from __future__ import annotations

from pathlib import Path

import pytest
from kgprobe.ontology.labels import article, starts_with_vowel_sound
from kgprobe.ontology.norms import (
    GROUPS,
    NormsError,
    coarse_group,
    concept_word,
    conjoin,
    load_cslb,
    load_mcrae,
    load_norms,
    load_word_list,
    phrase_cslb,
    phrase_mcrae,
)
from kgprobe.studies.sta.retrieval import retrieval_prompt

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MCRAE = SHARED / "mcrae"

MCRAE_HEADER = "Concept\tFeature\tWB_Label\tBR_Label\tProd_Freq\tRank_PF\tPhon_1st"


def write_mcrae(path: Path, rows: list[tuple[str, str, str, int, str]]) -> Path:
    """A McRae-layout file: (concept, feature, BR_Label, PF, first phoneme)."""
    lines = [MCRAE_HEADER] + [f"{c}\t{f}\tx\t{label}\t{pf}\t0\t{ph}" for c, f, label, pf, ph in rows]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="latin-1")
    return path


# The published CSLB layout (norms.dat): tab-separated with a header row.
CSLB_ROWS = """concept\tfeature type\tfeature\tfeature alternatives\tparticipant list\tpf
bear\tvisual perceptual\thas fur\thas fur; furry\tp1/p2\t20
bear\ttaxonomic\tis an animal\tis an animal\tp1\t19
bear\tfunctional\tdoes eat fish\teats fish\tp3\t9
bear\tvisual perceptual\tis large\tis big\tp4\t23
bear\tencyclopaedic\tdoes hibernate\thibernates\tp5\t8
apple\tother perceptual\tis tasty\tis yummy\tp1\t12
apple\ttaxonomic\tis a fruit\tis a fruit\tp2\t25
knife\tfunctional\tdoes cut\tcuts\tp1\t22
knife\tvisual perceptual\tis made of metal\tmade of metal\tp2\t15
"""


# ------------------------------------------------------------------------------ phrasing


@pytest.mark.parametrize("feature, phrase", [
    ("has_fur", "has fur"),
    ("is_big", "is big"),
    ("a_mammal", "is a mammal"),
    ("an_animal", "is an animal"),
    ("made_of_metal", "is made of metal"),
    ("used_for_cutting", "is used for cutting"),
    ("worn_by_women", "is worn by women"),
    ("found_in_kitchens", "is found in kitchens"),
    ("beh_-_eats_fish", "eats fish"),
    ("inbeh_-_rolls", "rolls"),
    ("beh_-_cannot_fly", "cannot fly"),
    ("lives_in_forests", "lives in forests"),
    ("different_colours", "comes in different colours"),
    ("eg_-_cheddar", "has kinds such as cheddar"),
    ("symbol_of_peace", "is a symbol of peace"),
    ("king_of_the_jungle", "is the king of the jungle"),
    ("like_a_cat", "is like a cat"),
    ("part_of_a_house", "is part of a house"),
    ("clothing", "is clothing"),
    ("is_furry/fuzzy", "is furry or fuzzy"),
    ("has_>_4_wheels", "has more than 4 wheels"),
    ("bought/sold_in_stores", "is bought or sold in stores"),
    ("inbeh_-_water_flows_through_it", "lets water flow through it"),
])
def test_mcrae_phrases(feature, phrase):
    assert phrase_mcrae(feature) == phrase


@pytest.mark.parametrize("feature, phrase", [
    ("has fur", "has fur"),
    ("is a mammal", "is a mammal"),
    ("does eat grass", "eats grass"),
    ("does fly", "flies"),
    ("does catch mice", "catches mice"),
    ("made of metal", "is made of metal"),
    ("has_four_legs", "has four legs"),
])
def test_cslb_phrases(feature, phrase):
    assert phrase_cslb(feature) == phrase


def test_conjunction_is_grammatical():
    assert conjoin(["has fur"]) == "has fur"
    assert conjoin(["has fur", "is big"]) == "has fur and is big"
    assert conjoin(["has fur", "is big", "has claws"]) == "has fur, is big, and has claws"
    assert retrieval_prompt(["has fur", "is big", "has claws"]) == "A [MASK] has fur, is big, and has claws ."
    assert retrieval_prompt(["has fur"], "the") == "The [MASK] has fur ."
    assert retrieval_prompt(["has fur", "is big"], template="question") == "What has fur and is big? It is a [MASK] ."
    with pytest.raises(ValueError):
        conjoin([])


def test_every_real_mcrae_phrase_starts_with_a_verb(shared_data):
    shared_data("data/mcrae")
    norms = load_mcrae(MCRAE)
    # Each phrase must follow "A bear ...": a third-person verb or a modal.
    bad = [(f.feature, f.phrase) for f in norms.features
           if not (f.phrase.split()[0] in {"is", "has", "cannot", "will", "lets", "does", "can"}
                   or f.phrase.split()[0].endswith("s"))]
    assert bad == []


@pytest.mark.parametrize("word, phoneme, vowel", [
    ("apple", None, True), ("bear", None, False), ("unicorn", None, False), ("hour", None, True),
    ("umbrella", None, True), ("yacht", "j", False), ("oven", "V", True), ("urn", "3:00", True),
    ("chair", "tS", False), ("hammer", "h", False),
])
def test_vowel_sounds(word, phoneme, vowel):
    assert starts_with_vowel_sound(word, phoneme) is vowel
    assert article(word, vowel) == ("an" if vowel else "a")
    if phoneme is None:  # without a phoneme the spelling decides, the same as article()
        assert article(word) == ("an" if vowel else "a")


def test_concept_words_and_groups():
    assert concept_word("bat_(animal)") == "bat"
    assert concept_word("teddy_bear") == "teddy bear"
    assert coarse_group("visual-colour") == "visual perceptual"
    assert coarse_group("function") == "functional"
    assert coarse_group("other perceptual") == "other perceptual"
    assert coarse_group("smell") == "other perceptual"
    assert coarse_group("nonsense") == "other"


# ------------------------------------------------------------------------------ loaders


def test_mcrae_fixture_loads_sorted_by_pf(tmp_path):
    path = write_mcrae(tmp_path / "CONCS_FEATS_concstats_brm.txt", [
        ("bear", "has_fur", "visual-form_and_surface", 20, "b"),
        ("bear", "is_large", "visual-form_and_surface", 23, "b"),
        ("bear", "an_animal", "taxonomic", 19, "b"),
        ("bear", "has_claws", "visual-form_and_surface", 15, "b"),
        ("bear", "beh_-_eats_fish", "visual-motion", 9, "b"),
        ("bear", "hibernates", "encyclopaedic", 9, "b"),
        ("apple", "is_red", "visual-colour", 20, "&"),
        ("bat_(animal)", "beh_-_flies", "visual-motion", 18, "b"),
    ])
    norms = load_norms(tmp_path, "mcrae")  # the folder works as well as the file
    assert load_mcrae(path).concepts.keys() == norms.concepts.keys()
    assert list(norms.concepts) == ["bear", "apple", "bat_(animal)"]
    bear = norms.concepts["bear"]
    assert [f.phrase for f in bear.features] == [
        "is large", "has fur", "is an animal", "has claws", "eats fish", "hibernates"]
    # equal PF (9, 9): file order
    assert [f.pf for f in bear.features] == [23, 20, 19, 15, 9, 9]
    assert bear.features[2].group == "taxonomic" and bear.features[4].group == "visual perceptual"
    assert norms.concepts["apple"].vowel_sound and not bear.vowel_sound
    assert norms.concepts["bat_(animal)"].word == "bat"
    assert norms.words() == ["bear", "apple", "bat"]


def test_cslb_fixture_loads(tmp_path):
    (tmp_path / "norms.dat").write_text(CSLB_ROWS, encoding="utf-8")
    norms = load_cslb(tmp_path / "norms.dat")
    assert norms.format == "cslb"
    bear = norms.concepts["bear"]
    assert [(f.phrase, f.pf) for f in bear.features] == [
        ("is large", 23), ("has fur", 20), ("is an animal", 19), ("eats fish", 9), ("hibernates", 8)]
    assert [f.group for f in bear.features] == [
        "visual perceptual", "visual perceptual", "taxonomic", "functional", "encyclopaedic"]
    assert set(GROUPS) >= {f.group for f in norms.features}
    assert norms.concepts["apple"].vowel_sound
    assert norms.concepts["knife"].features[1].phrase == "is made of metal"


def test_real_mcrae_norms(shared_data):
    shared_data("data/mcrae")
    norms = load_mcrae(MCRAE)
    assert len(norms.concepts) == 541
    assert len(norms.features) == 7259
    bear = norms.concepts["bear"]
    assert bear.features[0].phrase == "is large" and bear.features[0].pf == 23
    pfs = [f.pf for f in bear.features]
    assert pfs == sorted(pfs, reverse=True)
    assert norms.concepts["apple"].vowel_sound and norms.concepts["yacht"].vowel_sound is False
    assert norms.concepts["bat_(animal)"].word == norms.concepts["bat_(baseball)"].word == "bat"


def test_loader_errors_are_one_line_and_name_the_fix(tmp_path):
    with pytest.raises(NormsError, match="not found.*--norms"):
        load_mcrae(tmp_path / "missing")
    (tmp_path / "norms.dat").write_text(CSLB_ROWS, encoding="utf-8")
    with pytest.raises(NormsError, match="--norms-format cslb"):
        load_mcrae(tmp_path / "norms.dat")
    mcrae = write_mcrae(tmp_path / "m.txt", [("bear", "has_fur", "visual-colour", 20, "b")])
    with pytest.raises(NormsError, match="--norms-format mcrae"):
        load_cslb(mcrae)
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(NormsError, match="empty"):
        load_mcrae(tmp_path / "empty.txt")
    with pytest.raises(NormsError, match="unknown norms format"):
        load_norms(tmp_path, "xml")
    for err in (NormsError("x"),):
        assert "\n" not in str(err)


def test_word_list(tmp_path):
    (tmp_path / "v.txt").write_text("dog\n\ncat\ndog\n", encoding="utf-8")
    assert load_word_list(tmp_path / "v.txt") == ["dog", "cat"]
    with pytest.raises(NormsError, match="--vocab-file"):
        load_word_list(tmp_path / "nope.txt")
