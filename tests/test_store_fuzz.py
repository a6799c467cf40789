"""Fuzzed RDF into `kg load` (in-process, through `kgprobe.cli.main`): real files — the bundled
data as `kg export` writes it, pizza.owl, the DBpedia ontology — sliced small, then mutated
byte-wise and structurally.  Every outcome is a load (exit 0) or exit 2 with exactly one line
on stderr: never an exception, and a failed load leaves the exported store byte-identical.

Seeded (derandomize=True) and bounded: about 40 s on two busy cores."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgprobe.cli import main


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    out.flush()
    return code, out.buffer.getvalue().decode("utf-8"), err.getvalue()


def _cut(text: str, size: int, end: str) -> str:
    head = text[:size]
    return head[:head.rfind(end) + len(end)]


@pytest.fixture(scope="module")
def world(tmp_path_factory, shared_data):
    """A store holding the bundled data, its export, and the seed files (small slices)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    store = str(tmp / "store")
    assert cli("kg", "load", "--default", "--store", store)[0] == 0
    nt = cli("kg", "export", "--format", "ntriples", "--store", store)
    ttl = cli("kg", "export", "--format", "turtle", "--store", store)
    assert nt[0] == ttl[0] == 0
    seeds = {"bundled.nt": "".join(nt[1].splitlines(keepends=True)[:60]),
             "bundled.ttl": _cut(ttl[1], 6000, "\n\n")}
    pizza = shared_data("data/ontologies/pizza.owl").read_text(encoding="utf-8")
    seeds["pizza.owl"] = _cut(pizza, 12000, "</owl:Class>\n") + "</rdf:RDF>\n"
    dbo = shared_data("data/ontologies/dbpedia-ontology.ttl").read_text(encoding="utf-8")
    seeds["dbpedia.ttl"] = _cut(dbo, 8000, " .\n")
    for name, text in seeds.items():
        (tmp / name).write_text(text, encoding="utf-8")
    before = cli("kg", "export", "--format", "ntriples", "--store", store)[1]
    return tmp, store, seeds, before


def _tokens(text: str) -> list[re.Match]:
    return list(re.finditer(r'<[^<>\s]*>|"[^"\n]*"|_:\w+|\w+:\w*', text))


@st.composite
def mutated(draw, seeds: dict[str, str]) -> tuple[str, bytes]:
    """A seed file, then 1-4 mutations: byte edits on the encoded file, or structural edits
    (lines dropped/duplicated/swapped, terms replaced by other terms or junk)."""
    name = draw(st.sampled_from(sorted(seeds)))
    text = seeds[name]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["line", "swap", "term", "junk", "prefix"]))
        lines = text.splitlines(keepends=True) or [""]
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "line":
            lines[i] = draw(st.sampled_from(["", lines[i] * 2, lines[i][: len(lines[i]) // 2]]))
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "term" and _tokens(text):
            toks = _tokens(text)
            m = draw(st.sampled_from(toks))
            new = draw(st.sampled_from([t.group() for t in toks] + [
                "_:b0", '"x"@en', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>', "<>", "<a b>",
                '"unterminated', "<http://ex.org/\u00e9>", "a", "[]", "()", "undeclared:x"]))
            text = text[:m.start()] + new + text[m.end():]
            continue
        elif kind == "junk":
            junk = draw(st.text(st.sampled_from('<>"@^_:;.,[](){}#\\ \n\tazé\u0000'), max_size=12))
            lines[i] = lines[i][: len(lines[i]) // 2] + junk + lines[i][len(lines[i]) // 2:]
        else:
            lines.insert(i, draw(st.sampled_from(["@prefix rdfs: <http://ex.org/> .\n", "@base <rel> .\n",
                                                  "PREFIX : <#>\n", "<!DOCTYPE x [<!ENTITY e 'v'>]>\n"])))
        text = "".join(lines)
    data = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(0, 3))):  # byte-wise: flips, deletions, raw bytes
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[at:]
    return name, bytes(data)


def test_fuzzed_files_load_or_fail_with_one_line_and_change_nothing(world):
    tmp, store, seeds, before = world
    codes: list[int] = []

    @settings(max_examples=80, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated(seeds))
    def check(case: tuple[str, bytes]) -> None:
        name, data = case
        path = tmp / f"fuzz{Path(name).suffix}"
        path.write_bytes(data)
        code, _, err = cli("kg", "load", str(path), "--name", "fuzz", "--store", store)
        codes.append(code)
        if code == 0:  # a load: undo it, and the store is back where it was
            assert cli("kg", "remove", "fuzz", "--store", store)[0] == 0
        else:
            assert code == 2, err
            assert len(err.strip().splitlines()) == 1 and err.startswith("kgprobe: error: "), err
        assert cli("kg", "export", "--format", "ntriples", "--store", store)[1] == before

    check()
    assert {0, 2} <= set(codes), codes  # the mutations reach both the loads and the refusals
