"""Entity declarations in RDF/XML, checked before any parser sees the file.

Why: pyoxigraph's RDF/XML parser expands the general entities of a DTD without a limit, and
eagerly: each ``<!ENTITY …>`` value is stored with its references already expanded, so a 1 KB
"billion laughs" file (ten entities each referring ten times to the previous one) asks for
gigabytes before a single triple is read, and Rust aborts (exit 134).  Protégé and the OWL API
write small harmless entities (``<!ENTITY owl "http://www.w3.org/2002/07/owl#">``, used as
``&owl;Class``), so entities are not refused outright: their expanded size is bounded.

The check reads what pyoxigraph would read, not what an XML grammar allows, because a check
narrower than the parser can be walked around.  pyoxigraph takes an entity name to be anything
up to ASCII whitespace (``a:b``, ``é``), accepts a DTD anywhere in the file (after megabytes
of whitespace, after a comment, even inside the root element), reads declarations inside the
DTD's comments, and lets a later declaration of a name replace an earlier one.  So every
``<!ENTITY`` in the whole file is read as a declaration, wherever it stands; a name's size is
the largest of its declarations with the references in it expanded (computed iteratively, in
any declaration order, cycles and self-references refused), and the file is refused with one
line when its declarations plus every reference to a declared entity anywhere in the file
would add more than `MAX_EXPANSION` bytes.  Counting too much (a reference in a comment, a
declaration in a CDATA section) can only refuse a strange file, never let a large one through.
Parameter entities (``<!ENTITY % …>``) and external entities (``SYSTEM``/``PUBLIC``, which name
a file or URL to read) are refused outright: kgprobe reads no file or URL the user did not name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from kgprobe.errors import OntologyError

#: The most bytes entity declarations and references may add to a document when expanded.
MAX_EXPANSION = 64 << 20
#: The longest entity name read (longer ones are refused: no ontology needs one).
MAX_NAME = 1024
#: The most declarations, and references inside declared values, a file may hold: what the
#: check keeps of each stays small, so a file of millions of them cannot make it grow.
MAX_DECLARATIONS = 100_000
MAX_VALUE_REFS = 1_000_000
_CHUNK = 1 << 20
_MARK = b"<!ENTITY"
#: Rust's `str::trim_start` (Unicode White_Space, UTF-8 encoded), which pyoxigraph uses around
#: the name and before the value.
_WS = re.compile(rb"(?:[\t\n\x0b\x0c\r ]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
                 rb"|\xe2\x81\x9f|\xe3\x80\x80)*")
#: A name runs to the first ASCII whitespace (Rust's `is_ascii_whitespace`: no \x0b).
_NAME = re.compile(rb"[^\t\n\x0c\r ]*")
#: A reference as quick-xml resolves it: from `&` to the next `;`, no `&` between.
_REF = re.compile(rb"&([^&;]{1,%d});" % MAX_NAME)
_PREDEFINED = {b"lt", b"gt", b"amp", b"apos", b"quot"}
_MORE = object()  # a declaration cut at the end of the bytes read so far


@dataclass(frozen=True)
class _Decl:
    name: bytes
    literal: int  # bytes of the value outside its references
    refs: dict[bytes, int]  # name referred to → how many times


def check_entities(fh: IO[bytes], path: Path) -> None:
    """Refuse an RDF/XML file whose entities are external, parameter or too large expanded.

    Reads `fh` once to its end (a fast byte search: every RDF/XML file is read this way), and a
    second time from its start only when it declares entities (`fh` must be seekable)."""
    decls: dict[bytes, list[_Decl]] = {}
    count = refs = 0
    for decl in _declarations(fh, path):
        decls.setdefault(decl.name, []).append(decl)
        count, refs = count + 1, refs + sum(decl.refs.values())
        if count > MAX_DECLARATIONS or refs > MAX_VALUE_REFS:
            raise _refuse(path, f"it declares more than {MAX_DECLARATIONS:,} entities or "
                                f"their values hold more than {MAX_VALUE_REFS:,} references")
    if not decls:
        return
    sizes = _expanded_sizes(decls, path)
    total = 0
    for decl in (d for group in decls.values() for d in group):
        total += _size(decl, sizes)  # pyoxigraph stores each value expanded
        _bound(total, path)
    fh.seek(0)
    for name in _references(fh):
        total += sizes.get(name, 0)
        _bound(total, path)


def _bound(total: int, path: Path) -> None:
    if total > MAX_EXPANSION:
        raise _refuse(path, f"its entity references expand to more than "
                            f"{MAX_EXPANSION >> 20} MiB")


def _declarations(fh: IO[bytes], path: Path) -> Iterator[_Decl]:
    """Every `<!ENTITY` in the file read as pyoxigraph would, wherever it stands.  Each is
    read on its own, so a declaration's value never hides another `<!ENTITY` inside it."""
    buf, pos, eof = bytearray(), 0, False
    while True:
        at = buf.find(_MARK, pos)
        if at >= 0:
            decl = _declaration(buf, at + len(_MARK), eof, path)
            if decl is not _MORE:
                if decl is not None:
                    yield decl
                pos = at + 1
                continue
            if len(buf) - at > MAX_EXPANSION + MAX_NAME + 64:
                raise _refuse(path, f"an entity declaration runs on past "
                                    f"{MAX_EXPANSION >> 20} MiB")
            keep = at
        elif eof:
            return
        else:
            keep = max(pos, len(buf) - len(_MARK) + 1)
        del buf[:keep]
        pos = 0
        chunk = fh.read(_CHUNK)
        eof = not chunk
        buf += chunk


def _declaration(buf: bytearray, start: int, eof: bool, path: Path):
    """The declaration whose text begins at `start` (just after `<!ENTITY`): a `_Decl`, None
    when the text there is not one pyoxigraph would read, or `_MORE` when it runs past the
    bytes read so far.  pyoxigraph: trim, an optional `%`, trim, the name up to ASCII
    whitespace, trim, a quoted value."""
    end, cut = len(buf), None if eof else _MORE
    p = _WS.match(buf, start).end()
    if p >= end:
        return cut
    param = buf[p] == ord("%")
    if param:
        p = _WS.match(buf, p + 1).end()
    stop = _NAME.match(buf, p).end()
    if stop - p > MAX_NAME:
        raise _refuse(path, f"it declares an entity name longer than {MAX_NAME} bytes")
    if stop >= end:
        return cut
    if stop == p:
        return None
    name = bytes(buf[p:stop])
    label = name.decode("utf-8", "replace")
    p = _WS.match(buf, stop + 1).end()
    if end - p < 6:
        return cut
    if param:
        raise _refuse(path, f"it declares the parameter entity %{label}")
    for keyword in (b"SYSTEM", b"PUBLIC"):
        if buf.startswith(keyword, p):
            raise _refuse(path, f"the entity &{label}; names an external {keyword.decode()} "
                                "file or URL, which kgprobe does not read")
    quote = buf[p:p + 1]
    if quote not in (b'"', b"'"):
        return None
    close = buf.find(quote, p + 1)
    if close < 0:
        return cut
    if b"&" in name or b";" in name:
        raise _refuse(path, f"the entity name {label!r} is not an XML name")
    value = bytes(buf[p + 1:close])
    refs: dict[bytes, int] = {}
    for n, match in enumerate(_REF.finditer(value)):
        if n >= MAX_VALUE_REFS:
            raise _refuse(path, f"the entity &{label}; holds more than {MAX_VALUE_REFS:,} "
                                "references")
        refs[match.group(1)] = refs.get(match.group(1), 0) + 1
    return _Decl(name, len(_REF.sub(b"", value)), refs)


def _size(decl: _Decl, sizes: dict[bytes, int]) -> int:
    """A declaration's value expanded: declared names at their size, others (character and
    predefined references, unknown names) at their written length, never less than theirs."""
    return decl.literal + sum(n * (sizes[r] if r in sizes else len(r) + 2)
                              for r, n in decl.refs.items())


def _expanded_sizes(decls: dict[bytes, list[_Decl]], path: Path) -> dict[bytes, int]:
    """Each declared name's size expanded: the largest of its declarations.  Iterative (a
    depth-first walk with its own stack), so 3,000 entities declared in reverse order are
    no deeper a problem than three; a name on the walk's stack met again is a cycle."""
    def deps(name: bytes) -> Iterator[bytes]:
        return iter({r for d in decls[name] for r in d.refs
                     if r in decls and r not in _PREDEFINED})

    sizes: dict[bytes, int] = {}
    for root in decls:
        if root in sizes or root in _PREDEFINED:
            continue
        stack, walking = [(root, deps(root))], {root}
        while stack:
            name, todo = stack[-1]
            nxt = next((r for r in todo if r not in sizes), None)
            if nxt is not None:
                if nxt in walking:
                    raise _refuse(path, f"the entity &{nxt.decode('utf-8', 'replace')}; "
                                        "refers to itself")
                stack.append((nxt, deps(nxt)))
                walking.add(nxt)
                continue
            stack.pop()
            walking.discard(name)
            sizes[name] = max(_size(d, sizes) for d in decls[name])
            if sizes[name] > MAX_EXPANSION:
                raise _refuse(path, f"the entity &{name.decode('utf-8', 'replace')}; expands "
                                    f"to more than {MAX_EXPANSION >> 20} MiB")
    return sizes


def _references(fh: IO[bytes]) -> Iterator[bytes]:
    """The name of every `&name;` in the file, read in chunks (a reference cut at a chunk's
    end is read with the next one)."""
    buf = b""
    while True:
        chunk = fh.read(_CHUNK)
        data = buf + chunk
        keep = len(data)
        if chunk:
            amp = data.rfind(b"&", max(0, len(data) - MAX_NAME - 2))
            if amp >= 0 and b";" not in data[amp:]:
                keep = amp
        for match in _REF.finditer(data, 0, keep):
            yield match.group(1)
        buf = data[keep:]
        if not chunk:
            return


def _refuse(path: Path, why: str) -> OntologyError:
    return OntologyError(f"{path}: RDF/XML refused: {why} (a DTD entity attack or an unusual "
                         "file); expand or remove the DTD entities, e.g. re-save the file as "
                         "Turtle, and load it again")
