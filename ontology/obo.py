"""OBO 1.4 as ontologies release it: fastobo's parse, and a line-by-line mend where it refuses.

fastobo follows the OBO 1.4 grammar to the letter, and released files do not: a definition's
xrefs hold free text (``[Adapted from URL:http\\://x.org/a]``, ``[TAO:Bird and Mabee 2003]``),
an ``xref:`` line a name with a space (``xref: KEGG COMPOUND:70458-96-7 "CAS"``), a comment
braces that are not trailing qualifiers (``comment: see {x}``).  One such line made fastobo
refuse the whole file, with an error naming ``<stdin>``.

So the whole text is parsed first (the fast path every well-formed file takes); if fastobo
refuses it, each frame (the header, each ``[Term]``/``[Typedef]``/``[Instance]``) is parsed on
its own, and in a frame it refuses each line is checked alone after the frame's header and
``id:`` line (time in proportion to the frame; re-parsing the frame after each mend took n²).
A line fastobo refuses is mended once (unescaped spaces and brackets inside an xref are
escaped, as OBO 1.4 writes them, a missing xref list is added, text braces are escaped):
nothing is lost, and one warning lists the mended lines.  A line that still fails is left out
with a warning naming its line (the first `NAMED_LINES`, then a count); only a frame header or
an ``id:`` line that cannot be read stops the load (the frame would fall apart), with one error
naming file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kgprobe.errors import OntologyError

#: How many left-out lines are named one by one before the rest are counted.
NAMED_LINES = 10
_CLAUSE = re.compile(r"(\s*)([A-Za-z_][\w-]*):(\s*)(.*)")
_ID_SPECIALS = set('{}[],"!')
_QUOTED = r'"(?:[^"\\]|\\.)*"'


@dataclass
class Mend:
    """What the tolerant pass did, by line number (1-based, in the file)."""

    mended: list[int] = field(default_factory=list)
    dropped: list[tuple[int, str, str]] = field(default_factory=list)  # line, text, why

    def warnings(self) -> list[str]:
        out = []
        self.mended.sort()
        self.dropped.sort()
        if self.mended:
            named = ", ".join(map(str, self.mended[:NAMED_LINES]))
            more = f" and {len(self.mended) - NAMED_LINES} more" if len(self.mended) > NAMED_LINES \
                else ""
            out.append(f"line{'s' * (len(self.mended) > 1)} {named}{more}: not OBO 1.4 as written (free text in an xref, or "
                       "braces in text), read with those characters escaped; nothing was lost")
        for line, text, why in self.dropped[:NAMED_LINES]:
            out.append(f"line {line}: left out, not OBO 1.4 ({why}): {_short(text)}; fix the "
                       "line to keep it")
        if len(self.dropped) > NAMED_LINES:
            out.append(f"{len(self.dropped) - NAMED_LINES} more lines left out, not OBO 1.4 "
                       f"(lines {', '.join(str(d[0]) for d in self.dropped[NAMED_LINES:][:5])} …)")
        return out


def _short(text: str, n: int = 70) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + "…"


#: ``property_value: IAO:0000119 "text"`` as ENVO releases it: a quoted value and no datatype.
_UNTYPED_VALUE = re.compile(r'^(property_value:\s+\S+\s+"(?:[^"\\\n]|\\.)*")[ \t]*$', re.M)


def read_obo(path: Path, raw: bytes):
    """The fastobo document of an OBO file, and the warnings the mend left (empty when the
    file is OBO 1.4 as fastobo reads it)."""
    import fastobo

    text, warnings = _decode(path, raw)
    if not text.endswith("\n"):  # fastobo refuses a last line without its newline
        text += "\n"
    text, n_typed = _UNTYPED_VALUE.subn(r"\1 xsd:string", text)
    if n_typed:  # fastobo reads such a value as an identifier, and its quotes end up in an IRI
        warnings.append(f"{n_typed} property_value line(s) with a quoted value and no "
                        "datatype read as xsd:string")
    try:
        return fastobo.loads(text), warnings
    except SyntaxError:
        pass  # mend frame by frame below
    mend = Mend()
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    kept: list[tuple[int, str]] = []
    for frame in _frames(lines):
        kept += _mend_frame(path, frame, mend)
    try:
        doc = fastobo.loads("\n".join(t for _, t in kept) + "\n")
    except SyntaxError as err:  # every frame parsed alone; together they should too
        where = kept[min(max((err.lineno or 1) - 1, 0), len(kept) - 1)][0] if kept else 1
        raise OntologyError(f"{path}: line {where}: malformed OBO ({err.msg}); fix the line "
                            "and load the file again") from None
    return doc, warnings + mend.warnings()


def _decode(path: Path, raw: bytes) -> tuple[str, list[str]]:
    try:
        return raw.decode("utf-8").lstrip("\ufeff"), []
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        note = (f"line {line}: not UTF-8 text; undecodable bytes read as U+FFFD (re-encode "
                "the file as UTF-8 to keep them)")
        return raw.decode("utf-8", "replace").lstrip("\ufeff"), [note]


def _frames(lines: list[str]) -> list[list[tuple[int, str]]]:
    """The header, then each frame, as (line number, text) lists."""
    frames: list[list[tuple[int, str]]] = [[]]
    for number, line in enumerate(lines, 1):
        if _is_frame_start(line):
            frames.append([])
        frames[-1].append((number, line))
    return [f for f in frames if f]


def _is_frame_start(line: str) -> bool:
    return bool(re.match(r"\s*\[\s*\w+", line))


def _mend_frame(path: Path, frame: list[tuple[int, str]], mend: Mend) -> list[tuple[int, str]]:
    """The frame's lines, mended or left out until fastobo reads the frame alone.

    Each line is checked on its own, after the frame's header and `id:` line, so a frame of
    n lines costs n small parses: re-parsing the whole frame after each mend took n² (a frame
    of 8,000 lines to mend ran for minutes). Only what a line-by-line check cannot see (an
    `id:` that is not first, a clause that fails only beside another) is left to re-parsing
    the frame, at most `CONTEXT_PARSES` times."""
    if _parses(frame):
        return frame
    skeleton = _skeleton(frame)
    error = _parse_error(skeleton)
    if error is not None:  # the header or id line itself: the frame cannot be read
        i = min(max((error.lineno or 1) - 1, 0), len(skeleton) - 1)
        _check_droppable(path, *skeleton[i], error.msg)
    else:
        frame = _mend_each_line(path, frame, skeleton, mend)
        if _parses(frame):
            return frame
    return _mend_in_context(path, frame, mend)


def _skeleton(frame: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines every other line of the frame is checked after: its header and first `id:`
    line (nothing for the file's header frame, whose clauses stand alone)."""
    if not _is_frame_start(frame[0][1]):
        return []
    ident = next((ln for ln in frame[1:] if re.match(r"\s*id\s*:", ln[1])), None)
    return [frame[0]] + ([ident] if ident else [])


def _mend_each_line(path: Path, frame: list[tuple[int, str]], skeleton: list[tuple[int, str]],
                    mend: Mend) -> list[tuple[int, str]]:
    """Each line fastobo refuses after the skeleton alone mended once, or left out. The
    skeleton comes first: an `id:` line written after other clauses (OBO 1.4 wants it first)
    is read as the frame's id, its clauses kept."""
    head = [t for _, t in skeleton]
    kept = list(skeleton)
    for number, line in frame:
        if (number, line) in skeleton:
            continue
        error = _parse_error([(0, t) for t in head] + [(number, line)])
        if error is None:
            kept.append((number, line))
            continue
        fixed = mend_line(line)
        if fixed != line:
            error = _parse_error([(0, t) for t in head] + [(number, fixed)])
            if error is None:
                kept.append((number, fixed))
                mend.mended.append(number)
                continue
        _check_droppable(path, number, line, error.msg)
        mend.dropped.append((number, line, str(error.msg)))
    return kept


#: How many times one frame is re-parsed whole to find lines that fail only in context.
CONTEXT_PARSES = 50


def _mend_in_context(path: Path, frame: list[tuple[int, str]], mend: Mend) -> list[tuple[int, str]]:
    """The line-by-line mend where a line fails only inside its frame: the line fastobo stops
    at is mended once or left out, and the frame parsed again, `CONTEXT_PARSES` times at most
    (then the frame is one error naming its first line: each parse costs the whole frame)."""
    frame = list(frame)
    tried: set[int] = set()
    for _ in range(CONTEXT_PARSES):
        err = _parse_error(frame)
        if err is None:
            return frame
        i = min(max((err.lineno or 1) - 1, 0), len(frame) - 1)
        number, line = frame[i]
        if number not in tried:
            tried.add(number)
            fixed = mend_line(line)
            if fixed != line:
                frame[i] = (number, fixed)
                mend.mended.append(number)
                continue
        _check_droppable(path, number, line, err.msg)
        if number in mend.mended:
            mend.mended.remove(number)
        mend.dropped.append((number, line, str(err.msg)))
        del frame[i]
    if _parses(frame):
        return frame
    raise OntologyError(f"{path}: line {frame[0][0]}: a frame fastobo still refuses after "
                        f"{CONTEXT_PARSES} lines were mended or left out: {_short(frame[0][1])}; "
                        "fix its lines and load the file again")


def _parse_error(lines: list[tuple[int, str]]) -> SyntaxError | None:
    """fastobo's error for these lines as one document (None when it reads them). One
    thread: fastobo's thread pool costs ten times a small frame's parse."""
    import fastobo

    try:
        fastobo.loads("\n".join(t for _, t in lines) + "\n", threads=1)
    except SyntaxError as err:
        return err
    return None


def _parses(lines: list[tuple[int, str]]) -> bool:
    return _parse_error(lines) is None


def _check_droppable(path: Path, number: int, line: str, why: str) -> None:
    """A frame header or an `id:` line holds the frame together: leaving it out would pour
    the frame's clauses into another term, so it stops the load instead."""
    stripped = line.lstrip()
    if stripped.startswith("[") or re.match(r"id\s*:", stripped):
        what = "frame header" if stripped.startswith("[") else "id line"
        raise OntologyError(f"{path}: line {number}: malformed OBO {what} ({why}): "
                            f"{_short(line)}; fix this line and load the file again")


# ---------------------------------------------------------------------------- mending


def mend_line(line: str) -> str:
    """`line` with the OBO 1.4 escapes released files leave out (or `line` unchanged)."""
    m = _CLAUSE.match(line)
    if m is None:
        return line
    lead, tag, gap, value = m.groups()
    if tag in ("def", "synonym"):
        value = _mend_xref_list(value)
    elif tag == "xref":
        value = _mend_xref_clause(value)
    else:
        value = _escape_unescaped(value, "{}")
    return f"{lead}{tag}:{gap}{value}"


def _quoted_end(text: str, start: int) -> int:
    """The index after the quoted string opening at `start` (or -1 when it never closes)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return -1


def _list_end(text: str, start: int) -> int:
    """The index of the `]` closing the xref list that opens at `start` (or -1)."""
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            end = _quoted_end(text, i)
            if end < 0:
                return -1
            i = end
            continue
        if c == "]":
            return i
        i += 1
    return -1


def _mend_xref_list(value: str) -> str:
    """`"text" … [xrefs] …`: each xref made an OBO 1.4 xref (an escaped id, an optional
    quoted description); a missing list becomes `[]`."""
    start = value.find('"')
    end = _quoted_end(value, start) if start >= 0 else -1
    if end < 0:
        return value
    open_ = value.find("[", end)
    if open_ < 0:
        return value.rstrip() + " []"
    close = _list_end(value, open_)
    if close < 0:
        return value
    xrefs = [_mend_xref(x) for x in _split_commas(value[open_ + 1:close])]
    return f"{value[:open_ + 1]}{', '.join(x for x in xrefs if x)}{value[close:]}"


def _split_commas(text: str) -> list[str]:
    parts, current, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if c == '"':
            end = _quoted_end(text, i)
            end = len(text) if end < 0 else end
            current.append(text[i:end])
            i = end
            continue
        if c == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


def _mend_xref(xref: str) -> str:
    m = re.fullmatch(rf"\s*(.*?)\s*({_QUOTED})?\s*", xref)
    ident, desc = (m.group(1), m.group(2)) if m else (xref.strip(), None)
    if not ident and desc:  # a description alone: its text becomes the xref
        ident, desc = desc[1:-1], None
    if not ident:
        return ""
    return escape_id(ident) + (f" {desc}" if desc else "")


def _mend_xref_clause(value: str) -> str:
    """`xref: ID ["description"] [{qualifiers}] [! comment]`, the ID escaped."""
    comment = re.search(r"(?<!\\)\s!\s.*$", value)
    tail = comment.group(0) if comment else ""
    body = value[:comment.start()] if comment else value
    quals = re.search(r"(?<!\\)\s\{[^{}]*\}\s*$", body)
    if quals:
        tail, body = quals.group(0) + tail, body[:quals.start()]
    m = re.fullmatch(rf"(.*?)\s*({_QUOTED})?\s*", body)
    ident, desc = (m.group(1), m.group(2)) if m else (body, None)
    return escape_id(ident.strip()) + (f" {desc}" if desc else "") + tail


def escape_id(ident: str) -> str:
    """An identifier with its whitespace and OBO delimiters escaped (``a b`` → ``a\\ b``)."""
    return _escape_unescaped(ident, _ID_SPECIALS, spaces=True)


def _escape_unescaped(text: str, chars: str, *, spaces: bool = False) -> str:
    """`text` with each of `chars` (and, with `spaces`, each whitespace) not already escaped
    given a backslash; an existing escape pair is kept as it is."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i:i + 2])
            i += 2
            continue
        out.append("\\ " if spaces and c.isspace() else f"\\{c}" if c in chars else c)
        i += 1
    return "".join(out)
