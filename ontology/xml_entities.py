"""Entity declarations in RDF/XML, checked before any parser sees the file.

Why: pyoxigraph's RDF/XML parser expands the general entities of a document's internal DTD
without a limit, so a 1 KB "billion laughs" file (ten entities each referring ten times to the
previous one) asks for gigabytes and Rust aborts (exit 134).  Protégé and the OWL API write
small harmless entities (``<!ENTITY owl "http://www.w3.org/2002/07/owl#">``, used as
``&owl;Class``), so entities are not refused outright: each declared entity's expanded size is
computed (references to other entities included, cycles refused), every reference in the
document is counted, and a file whose expansion would add more than `MAX_EXPANSION` bytes is
refused with one line.  Parameter entities (``<!ENTITY % …>``) and external entities
(``SYSTEM``/``PUBLIC``, which name a file or URL to read) are refused outright: kgprobe reads
no file or URL the user did not name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import IO

from kgprobe.errors import OntologyError

#: The most bytes entity references may add to a document when expanded.
MAX_EXPANSION = 64 << 20
#: The DTD must end within this many bytes from the start of the file.
MAX_PROLOG = 4 << 20
_CHUNK = 1 << 20
_DECL = re.compile(rb"<!ENTITY\s+(%\s*)?([^\s%\"']+)\s+(?:(SYSTEM|PUBLIC)\b|\"([^\"]*)\"|'([^']*)')")
_REF = re.compile(rb"&([A-Za-z_][\w.-]*);")
_PREDEFINED = {b"lt", b"gt", b"amp", b"apos", b"quot"}


def check_entities(fh: IO[bytes], path: Path) -> None:
    """Refuse an RDF/XML file whose entities are external, parameter or too large expanded;
    read through `fh` (the whole file when it declares entities, else its prolog only)."""
    head = b""
    while len(head) < MAX_PROLOG:
        chunk = fh.read(_CHUNK)
        head += chunk
        if not chunk or _root_started(head):
            break
    start = head.find(b"<!DOCTYPE")
    if start < 0 or b"<!ENTITY" not in head:
        return
    end = head.find(b"]>", start)
    if end < 0:
        raise _refuse(path, f"its DTD does not end within the first {MAX_PROLOG >> 20} MiB")
    sizes = _expanded_sizes(head[start:end], path)
    if not sizes:
        return
    total, buf = 0, head[end:]
    while True:
        chunk = fh.read(_CHUNK)
        data = buf + chunk
        keep = len(data)
        if chunk:  # a reference cut at the chunk's end is counted with the next chunk
            amp = data.rfind(b"&", max(0, len(data) - 256))
            if amp >= 0 and b";" not in data[amp:]:
                keep = amp
        total += sum(sizes.get(m.group(1), 0) for m in _REF.finditer(data, 0, keep))
        if total > MAX_EXPANSION:
            raise _refuse(path, f"its entity references expand to more than "
                                f"{MAX_EXPANSION >> 20} MiB")
        buf = data[keep:]
        if not chunk:
            return


def _root_started(head: bytes) -> bool:
    """Whether the document's first element has begun (no DTD can follow it)."""
    text = re.sub(rb"<!--.*?-->|<\?.*?\?>", b"", head, flags=re.S)
    doctype = text.find(b"<!DOCTYPE")
    if doctype >= 0:
        close = text.find(b"]>", doctype)
        if close < 0:
            return False
        text = text[close + 2:]
    return re.search(rb"<[A-Za-z_]", text) is not None


def _expanded_sizes(dtd: bytes, path: Path) -> dict[bytes, int]:
    """Each general entity's size with its references expanded (cycles and huge ones refused)."""
    values: dict[bytes, bytes] = {}
    for match in _DECL.finditer(dtd):
        param, name, external, dq, sq = match.groups()
        label = name.decode("utf-8", "replace")
        if param:
            raise _refuse(path, f"it declares the parameter entity %{label}")
        if external:
            raise _refuse(path, f"the entity &{label}; names an external {external.decode()} "
                                "file or URL, which kgprobe does not read")
        values.setdefault(name, dq if dq is not None else sq)
    sizes: dict[bytes, int] = {}

    def size(name: bytes, seen: tuple[bytes, ...]) -> int:
        if name in sizes:
            return sizes[name]
        if name in seen:
            raise _refuse(path, f"the entity &{name.decode('utf-8', 'replace')}; refers to itself")
        value = values[name]
        total = len(_REF.sub(b"", value))
        for ref in _REF.findall(value):
            if ref in values:
                total += size(ref, seen + (name,))
            elif ref not in _PREDEFINED:
                total += len(ref) + 2
            if total > MAX_EXPANSION:
                raise _refuse(path, f"the entity &{name.decode('utf-8', 'replace')}; expands "
                                    f"to more than {MAX_EXPANSION >> 20} MiB")
        sizes[name] = total
        return total

    for name in values:
        size(name, ())
    return sizes


def _refuse(path: Path, why: str) -> OntologyError:
    return OntologyError(f"{path}: RDF/XML refused: {why} (a DTD entity attack or an unusual "
                         "file); expand or remove the DTD entities, e.g. re-save the file as "
                         "Turtle, and load it again")
