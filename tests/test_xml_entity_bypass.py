"""The RDF/XML entity check cannot be walked around, and every command that
parses a user's file runs under the memory guard.

pyoxigraph reads entity names up to ASCII whitespace (``a:b``, ``é``), a DTD anywhere in the
file, declarations inside the DTD's comments, and stores each declared value already
expanded: each shape below made it allocate gigabytes while a prolog-only, ASCII-name check let
the file through.  The CLI runs use limits_helpers' 1 GB guard, so a check that fails is
stopped there instead of exhausting the machine."""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from limits_helpers import fails  # noqa: E402

from kgprobe.errors import OntologyError  # noqa: E402
from kgprobe.ontology import xml_entities  # noqa: E402
from kgprobe.ontology.xml_entities import check_entities  # noqa: E402

ROOT = ('<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">')
DECL = '<?xml version="1.0"?>\n'


def laughs(name: str = "lol", levels: int = 9) -> str:
    """Ten entities each referring ten times to the previous one: 3 GB from 1 KB."""
    lines = [f'<!ENTITY {name}0 "lol">'] + [
        f'<!ENTITY {name}{i} "{("&" + name + str(i - 1) + ";") * 10}">' for i in range(1, levels + 1)]
    return "\n".join(lines)


def body(ref: str) -> str:
    return (f'<rdf:Description rdf:about="http://ex.org/a"><rdfs:label>{ref}</rdfs:label>'
            "</rdf:Description>")


def document(prolog: str = "", dtd: str | None = None, name: str = "lol") -> str:
    dtd = f"<!DOCTYPE rdf:RDF [\n{laughs(name)}\n]>" if dtd is None else dtd
    return f"{DECL}{prolog}{dtd}\n{ROOT}{body(f'&{name}9;')}</rdf:RDF>\n"


#: Each a billion laughs pyoxigraph expands, in a place or a spelling a check must not miss.
BYPASSES = {
    "name_with_colon": document(name="lol:x"),
    "name_with_non_ascii_letters": document(name="lœlé"),
    "dtd_after_4_mib_of_spaces": document(prolog=" " * (4 << 20) + "\n"),
    "dtd_after_a_comment": document(prolog="<!-- <!DOCTYPE decoy []> -->\n"),
    "dtd_inside_the_root_element": (f"{DECL}{ROOT}{' ' * (2 << 20)}<!DOCTYPE r [\n{laughs()}\n]>"
                                    f"{body('&lol9;')}</rdf:RDF>\n"),
    "redeclared_to_double": document(dtd="<!DOCTYPE rdf:RDF [\n<!ENTITY lol9 \"lol\">\n"
                                     + '<!ENTITY lol9 "&lol9;&lol9;">\n' * 40 + "]>"),
    # pyoxigraph reads declarations inside the DTD's comments (a check that parses the DTD as
    # XML skips them), and a decoy's unclosed value must not hide the declarations after it
    "declared_in_a_comment_inside_the_dtd": document(
        dtd=f"<!DOCTYPE rdf:RDF [\n<!--\n{laughs()}\n-->\n]>"),
    "hidden_in_a_decoy_value": document(prolog='<!-- <!ENTITY decoy " -->\n',
                                        dtd=f'<!DOCTYPE rdf:RDF [\n{laughs()}\n]>\n<!-- " -->'),
}


def reverse_chain(n: int = 3000, refs: int = 1) -> str:
    """`n` entities, each declared before the one it refers to."""
    decls = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * refs}x">\n' for i in range(n, 0, -1))
    return f'{DECL}<!DOCTYPE rdf:RDF [\n{decls}<!ENTITY e0 "x">\n]>\n{ROOT}{body("&e5;")}</rdf:RDF>\n'


def check(text: str) -> None:
    check_entities(io.BytesIO(text.encode("utf-8")), Path("f.rdf"))


@pytest.mark.parametrize("shape", sorted(BYPASSES))
def test_each_bypass_shape_is_refused_before_parsing(shape):
    with pytest.raises(OntologyError, match="RDF/XML refused") as err:
        check(BYPASSES[shape])
    assert "Turtle" in str(err.value)


@pytest.mark.parametrize("shape", ["name_with_colon", "name_with_non_ascii_letters",
                                   "dtd_after_4_mib_of_spaces", "dtd_after_a_comment",
                                   "dtd_inside_the_root_element"])
def test_kg_load_refuses_each_bypass_in_one_line(tmp_path, shape):
    (tmp_path / "lol.rdf").write_text(BYPASSES[shape], encoding="utf-8")
    line = fails(tmp_path, "kg", "load", "lol.rdf")
    assert "lol.rdf: RDF/XML refused" in line and "entity" in line, line
    assert not (tmp_path / "store").exists(), "a refused first load leaves no store behind"


def test_study_dry_run_refuses_a_bypass_within_the_default_memory(tmp_path):
    """No --max-memory and no $KGPROBE_MAX_MEMORY: the default guard; the address-space limit
    only keeps a failing check from filling this machine (pyoxigraph then aborts, exit 134)."""
    (tmp_path / "lol.rdf").write_text(BYPASSES["name_with_colon"], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "KGPROBE_MAX_MEMORY"}
    env["KGPROBE_STORE"] = str(tmp_path / "store")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    r = subprocess.run([sys.executable, "-m", "kgprobe.cli", "study", "premise-ablation",
                        "--dry-run", "--ontology", "lol.rdf", "--out", "run"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "lol.rdf: RDF/XML refused" in r.stderr, r.stderr
    assert not (tmp_path / "run" / "prompts.jsonl").exists()


def test_reverse_declared_entities_are_sized_without_recursion():
    check(reverse_chain())  # 3,000 deep, each a byte more: small, so it passes the check
    with pytest.raises(OntologyError, match=r"&e\d+; expands to more than 64 MiB"):
        check(reverse_chain(refs=2))  # each twice the one before: refused, not RecursionError


def test_kg_load_of_reverse_declared_entities_is_one_line(tmp_path):
    """pyoxigraph needs an entity declared before its use; the check must not be what fails."""
    (tmp_path / "rev.rdf").write_text(reverse_chain(), encoding="utf-8")
    line = fails(tmp_path, "kg", "load", "rev.rdf")
    assert "rev.rdf" in line and "e2999" in line and "Recursion" not in line, line


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_the_verdict_does_not_depend_on_where_chunks_end(monkeypatch, chunk):
    """Declarations and references cut at a chunk's end are read whole: a 100-byte entity
    declared once and referenced 9 times adds 1,000 bytes, 10 times 1,100."""
    monkeypatch.setattr(xml_entities, "_CHUNK", chunk)
    monkeypatch.setattr(xml_entities, "MAX_EXPANSION", 1000)
    dtd = '<!DOCTYPE rdf:RDF [ <!ENTITY\u00a0a:é "' + "v" * 100 + '"> ]>'
    check(f"{DECL}{dtd}{ROOT}{body('&a:é;' * 9)}</rdf:RDF>")
    with pytest.raises(OntologyError, match="entity references expand"):
        check(f"{DECL}{dtd}{ROOT}{body('&a:é;' * 10)}</rdf:RDF>")


def test_harmless_entities_pass_and_the_check_reads_no_further_than_it_must():
    things = '<rdf:Description rdf:about="&owl;Thing"/>' * 100_000
    protege = (f'{DECL}<!DOCTYPE rdf:RDF [ <!ENTITY owl "http://www.w3.org/2002/07/owl#" > ]>'
               f"{ROOT}{things}</rdf:RDF>")
    check(protege)  # 100,000 references to a 30-byte entity: 3 MB, far below the bound
    check(f"{DECL}{ROOT}{body('&amp;&#233;&lt;')}</rdf:RDF>")  # no DTD at all
    for text, why in [('<!ENTITY % p "x">', "parameter entity %p"),
                      ('<!ENTITY x SYSTEM "file:///etc/passwd">', "external SYSTEM"),
                      (f'<!ENTITY {"n" * 2000} "x">', "longer than 1024 bytes")]:
        with pytest.raises(OntologyError, match=why):
            check(f"{DECL}<!DOCTYPE rdf:RDF [ {text} ]>{ROOT}</rdf:RDF>")


def test_many_declarations_or_references_are_refused_before_they_fill_the_check():
    """What the check keeps is a few bytes per declaration and per distinct name, so the
    number of both is bounded: a file of millions cannot make the check itself grow."""
    many = "".join(f'<!ENTITY a{i} "x">' for i in range(100_001))
    with pytest.raises(OntologyError, match="more than 100,000 entities"):
        check(f"{DECL}<!DOCTYPE rdf:RDF [ {many} ]>{ROOT}</rdf:RDF>")
    refs = "&b;" * 1_000_001
    with pytest.raises(OntologyError, match="1,000,000 references"):
        check(f'{DECL}<!DOCTYPE rdf:RDF [ <!ENTITY b "x"> <!ENTITY a "{refs}"> ]>{ROOT}</rdf:RDF>')


#: Every command that reads an ontology file the user names (`--ontology FILE`).
FILE_COMMANDS = {
    "study premise-ablation": ["--dry-run"],
    "study memorization": ["--dry-run"],
    "study consistency": ["--dry-run"],
    "study copen": ["--method", "zero-shot", "--from-kg", "--dry-run"],
    "export lm-eval": [],
    "generate memorizing": [],
    "generate reasoning": [],
}


@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
def test_commands_that_parse_a_user_file_run_under_the_memory_guard(tmp_path, shared_data,
                                                                    command):
    """A 1 MiB guard ($KGPROBE_MAX_MEMORY, as `kg load` reads it) stops each at once: the
    command ran in the guard's supervised child, as `kg load` does."""
    env = dict(os.environ, KGPROBE_STORE=str(tmp_path / "store"), KGPROBE_MAX_MEMORY="1M")
    pizza = shared_data("data/ontologies/pizza.owl")
    r = subprocess.run([sys.executable, "-m", "kgprobe.cli", *command.split(),
                        *FILE_COMMANDS[command], "--ontology", str(pizza), "--out", "out"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stderr.strip().splitlines() == [
        f"kgprobe: error: kgprobe {command} used more than 1.0 MiB of memory "
        "($KGPROBE_MAX_MEMORY=1M) and was stopped; the input may be corrupt or the work too "
        "large: check it, or raise --max-memory (e.g. --max-memory 2M)"], r.stderr
