"""OBO files as OBO Foundry releases write them load (issue 33 #6): the OBO 1.4 escapes
(``\\,`` ``\\:`` ``\\"``), free-text xrefs in ``def:`` and ``synonym:`` lines, trailing
modifiers ``{…}`` and comments ``!``; a line that cannot be read is left out with a warning
naming file and line, and a broken frame header or id line is one error naming both."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.obo import escape_id, mend_line

OBO = "http://purl.obolibrary.org/obo/"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
DEFINITION = OBO + "IAO_0000115"

#: Modelled on released PATO, ENVO, CL and Uberon files: every pattern below is one a real
#: release holds (the free-text xrefs made fastobo refuse the whole file).
RELEASE = r"""format-version: 1.2
data-version: zoo/releases/2024-05-01/zoo.obo
subsetdef: core_slim "Core slim"
synonymtypedef: ABBR "abbreviation" EXACT
default-namespace: zoo
ontology: zoo
property_value: owl:versionInfo "2024-05-01" xsd:string

[Term]
id: ZOO:0000001
name: animal
def: "A living thing\, that moves\: usually on its own." [PMID:123 "some text", url:http\://x.org/a]
comment: Note\: see the ZOO wiki {internal} for history.
subset: core_slim
synonym: "beast" EXACT ABBR [TAO:Bird and Mabee 2003]
xref: Wikipedia:Animal {source="MA:0000001"}
xref: KEGG COMPOUND:70458-96-7 "CAS Registry Number"

[Term]
id: ZOO:0000002
name: dog
def: "A \"good\" animal that barks." [Adapted from URL:http\://x.org/view.php?id=86861, PMID:31784573<new dbxref>] {comment="checked"}
is_a: ZOO:0000001 ! animal
relationship: part_of ZOO:0000003 {source="GOC:x"} ! pack

[Term]
id: ZOO:0000003
name: pack
def: "A group of dogs." [GOC:x, ]
is_a: ZOO:0000001 ! animal
is_a: ZOO:0000004 ZOO:0000005 leftover text

[Term]
id: ZOO:0000004
name: puppy
def: "A young dog." [ZOO:curator]
is_a: ZOO:0000002 {source="ZOO:0000002"} ! dog

[Typedef]
id: part_of
name: part of
xref: BFO:0000050
is_transitive: true
"""


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def write(tmp: Path, text: str, name: str = "zoo.obo") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def test_released_obo_with_escapes_and_free_text_xrefs_loads(tmp_path):
    path = write(tmp_path, RELEASE)
    store = str(tmp_path / "store")
    code, _, err = cli("kg", "load", str(path), "--store", store)
    assert code == 0, err
    with KnowledgeGraph(store, read_only=True) as kg:
        triples = set(kg.triples())
    dog, animal, puppy = OBO + "ZOO_0000002", OBO + "ZOO_0000001", OBO + "ZOO_0000004"
    assert {(dog, SUB, animal), (puppy, SUB, dog), (OBO + "ZOO_0000003", SUB, animal)} <= triples
    # the escapes are read as the characters they stand for
    definitions = {s: o for s, p, o in triples if p == DEFINITION}
    assert "A living thing, that moves: usually on its own." in definitions[animal]
    assert 'A \\"good\\" animal that barks.' in definitions[dog]  # N-Triples form of `"`
    comments = [o for s, p, o in triples if s == animal and p.endswith("#comment")]
    assert comments and "{internal}" in comments[0]
    # the mended lines are named in one warning; the unreadable is_a line in another
    lines = RELEASE.splitlines()
    where = {n: lines[n - 1] for n in range(1, len(lines) + 1)}
    bad = next(n for n, t in where.items() if "leftover text" in t)
    warnings = [w for w in err.splitlines() if "zoo.obo" in w]
    left_out = [w for w in warnings if "left out" in w]
    assert len(left_out) == 1 and f"zoo.obo: line {bad}: left out" in left_out[0]
    mended = next(w for w in warnings if "escaped" in w)
    for pattern in ("Bird and Mabee", "KEGG COMPOUND", "Adapted from", "{internal}"):
        n = next(k for k, t in where.items() if pattern in t)
        assert f" {n}," in mended or f" {n}:" in mended, (pattern, mended)
    assert "<stdin>" not in err and "Traceback" not in err


def test_well_formed_obo_loads_without_warnings_even_without_a_last_newline(tmp_path):
    text = "\n".join(ln for ln in RELEASE.splitlines()
                     if not any(p in ln for p in ("Bird", "KEGG", "Adapted", "{internal}",
                                                  "leftover", "GOC:x, ")))
    assert not text.endswith("\n")  # fastobo alone refuses the last line then
    code, _, err = cli("kg", "load", str(write(tmp_path, text)), "--store",
                       str(tmp_path / "store"))
    assert code == 0 and "zoo.obo: line" not in err, err


def test_broken_id_line_is_one_error_naming_file_and_line(tmp_path):
    text = RELEASE.replace("id: ZOO:0000004", "id: ZOO:0000004 junk junk")
    n = text.splitlines().index("id: ZOO:0000004 junk junk") + 1
    path = write(tmp_path, text)
    code, _, err = cli("kg", "load", str(path), "--store", str(tmp_path / "store"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{path}: line {n}: malformed OBO id line" in err
    assert "<stdin>" not in err and "--format" not in err
    assert not (tmp_path / "store").exists()


def test_many_unreadable_lines_are_counted_not_listed(tmp_path):
    text = RELEASE.replace("is_a: ZOO:0000001 ! animal\n", "is_a: ZOO:0000001 ! animal\n"
                           + "is_a: \n" * 15)
    code, _, err = cli("kg", "load", str(write(tmp_path, text)), "--store",
                       str(tmp_path / "store"))
    assert code == 0, err
    assert len([w for w in err.splitlines() if ": left out" in w]) == 10
    assert "more lines left out" in err  # 15 × 2 + 1 = 31: 10 named, 21 counted
    assert "21 more lines left out" in err


def test_mend_line_escapes_what_obo_1_4_escapes():
    assert escape_id("TAO:Bird and Mabee 2003") == r"TAO:Bird\ and\ Mabee\ 2003"
    assert escape_id(r"url:http\://x.org/a b") == r"url:http\://x.org/a\ b"
    assert mend_line('def: "A." [Adapted from URL:x, PMID:1 "t, u"]') == \
        r'def: "A." [Adapted\ from\ URL:x, PMID:1 "t, u"]'
    assert mend_line('def: "A."') == 'def: "A." []'
    assert mend_line('xref: KEGG COMPOUND:1 "CAS" {a="b"} ! c') == \
        r'xref: KEGG\ COMPOUND:1 "CAS" {a="b"} ! c'
    assert mend_line("comment: see {x} here") == r"comment: see \{x\} here"
    assert mend_line("is_a: ZOO:1 ! fine") == "is_a: ZOO:1 ! fine"


def test_a_quoted_property_value_without_datatype_is_a_string(tmp_path):
    """ENVO's material hierarchy writes `property_value: IAO:0000119 "…"` with no datatype:
    it loads, the value a string (not an IRI with quotes in it), and one warning counts it."""
    text = ("format-version: 1.4\nontology: zoo\n\n[Term]\nid: ZOO:0000001\nname: animal\n"
            'property_value: IAO:0000119 "Nutritional_supplement_and_food"\n'
            'property_value: seeAlso "1.01"\n')
    store = str(tmp_path / "store")
    code, _, err = cli("kg", "load", str(write(tmp_path, text)), "--store", store)
    assert code == 0, err
    assert "2 property_value line(s) with a quoted value and no datatype" in err
    with KnowledgeGraph(store, read_only=True) as kg:
        objects = {o for s, p, o in kg.triples() if s == OBO + "ZOO_0000001"}
    assert any(o.startswith('"Nutritional_supplement_and_food"') for o in objects), objects
    assert not any('"' in o and not o.startswith('"') for o in objects)
