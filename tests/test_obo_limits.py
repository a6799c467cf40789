"""The OBO reader's mend pass costs time in proportion to the file (issue 45): one frame of
thousands of lines that each need a mend once took minutes at flat memory, below the memory
guard, because every mend re-parsed the whole frame. And however many lines are bad, the
report of them is a few lines."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import fastobo

from kgprobe.cli import main
from kgprobe.ontology.obo import NAMED_LINES, read_obo


def one_frame(n_mended: int, n_dropped: int = 0) -> str:
    """An OBO file whose first term holds `n_mended` lines fastobo refuses until they are
    mended (a free-text xref, as released files write them) and `n_dropped` it refuses
    whatever is done (an `is_a:` naming nothing)."""
    lines = ["format-version: 1.2", "ontology: zoo", "", "[Term]", "id: ZOO:0000001",
             "name: animal"]
    lines += [f'synonym: "beast {i}" EXACT [TAO:Bird and Mabee {i}]' for i in range(n_mended)]
    lines += ["is_a: "] * n_dropped
    lines += ["", "[Term]", "id: ZOO:0000002", "name: dog", "is_a: ZOO:0000001", ""]
    return "\n".join(lines)


def test_mending_a_frame_parses_a_bounded_multiple_of_the_file(tmp_path, monkeypatch):
    """fastobo is asked to read at most 20 times the file's characters, whatever the number
    of bad lines: a mend pass that re-parses the frame after each mend (n² characters) stops
    at the budget here instead of running for minutes."""
    text = one_frame(2000, 500)
    budget = 20 * len(text)
    parsed = [0]
    loads = fastobo.loads

    def counting(document: str, *args, **kwargs):
        parsed[0] += len(document)
        assert parsed[0] <= budget, f"parsed over {budget} characters of a {len(text)}-character file"
        return loads(document, *args, **kwargs)

    monkeypatch.setattr(fastobo, "loads", counting)
    path = tmp_path / "zoo.obo"
    path.write_text(text, encoding="utf-8")
    doc, warnings = read_obo(path, text.encode())
    assert len(doc) == 2  # both terms, every synonym kept (mended), the empty is_a lines left out
    assert sum(1 for c in doc[0] if isinstance(c, fastobo.term.SynonymClause)) == 2000
    assert "and 1990 more: not OBO 1.4 as written" in warnings[0]
    assert "490 more lines left out" in warnings[-1]


def _best_time(text: str, path: Path) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        read_obo(path, text.encode())
        best = min(best, time.perf_counter() - start)
    return best


def test_mend_time_grows_linearly_with_the_frame(tmp_path):
    """Four times the bad lines take about four times as long (under 6x, best of three); the
    re-parsing mend took 15x (1.3 s → 19 s for 250 → 1,000 lines)."""
    path = tmp_path / "zoo.obo"
    small, large = one_frame(250), one_frame(1000)
    ratio = _best_time(large, path) / _best_time(small, path)
    assert ratio < 6, f"1,000 bad lines took {ratio:.1f}x as long as 250"


def test_two_thousand_bad_lines_are_reported_in_a_few_lines(tmp_path):
    """1,000 mended and 1,000 left-out lines: one line for the mends, ten named left-out lines
    and one that counts the rest, never a line per bad line."""
    path = tmp_path / "zoo.obo"
    path.write_text(one_frame(1000, 1000), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["kg", "load", str(path), "--store", str(tmp_path / "store")])
    assert code == 0, err.getvalue()
    about_lines = [w for w in err.getvalue().splitlines() if "zoo.obo: line" in w or "more lines" in w]
    assert len(about_lines) == 1 + NAMED_LINES + 1, about_lines
    assert "and 990 more: not OBO 1.4 as written" in about_lines[0]
    assert "990 more lines left out" in about_lines[-1]
    assert len(err.getvalue().splitlines()) <= 16
    assert "Traceback" not in err.getvalue()


def test_a_left_out_line_is_reported_as_the_file_writes_it(tmp_path):
    """Each left-out line is named by its own number and text, in file order, with the reason
    fastobo gives for that line alone: not the escaped text of a mend that did not help
    (``\\{a="b", c\\}``), nor a reason an earlier bad line caused."""
    text = "\n".join(["format-version: 1.2", "ontology: zoo", "", "[Term]", "id: ZOO:0000001",
                      "name: animal", 'def: "unterminated', 'is_a: ZOO:0000002 {a="b", c}',
                      "comment: fine", "", "[Term]", "id: ZOO:0000002", "name: dog", ""])
    doc, warnings = read_obo(tmp_path / "zoo.obo", text.encode())
    assert warnings == [
        ('line 7: left out, not OBO 1.4 (expected QuotedString): def: "unterminated; fix the '
         "line to keep it"),
        ('line 8: left out, not OBO 1.4 (expected EOL): is_a: ZOO:0000002 {a="b", c}; fix the '
         "line to keep it")]
    assert [str(c) for c in doc[0]] == ["name: animal", "comment: fine"]


def test_an_id_line_after_other_clauses_keeps_them(tmp_path):
    """A frame whose `id:` comes after its name (OBO 1.4 wants it first) is read with every
    clause: checking each line after the frame's header and id puts the id first, where
    mending at the line fastobo stopped at left the name out."""
    text = "format-version: 1.2\n[Term]\nname: animal\nid: ZOO:0000001\n[Term]\nid: ZOO:0000002\n"
    doc, warnings = read_obo(tmp_path / "zoo.obo", text.encode())
    assert warnings == []
    assert str(doc[0].id) == "ZOO:0000001" and [str(c) for c in doc[0]] == ["name: animal"]
