"""Text from data (labels, literals, IRIs from an endpoint) made safe to print on a terminal.

An ontology's label can hold ANSI escape sequences: printed raw in a table, it recolours the
terminal, moves the cursor over earlier rows or retitles the window, and a stray newline
breaks the table's rows. Every table and message kgprobe prints from data goes through
`printable`: control characters (C0, DEL, C1) and the Unicode bidirectional overrides become
visible escapes, everything else is left as it is.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = [*range(0x200E, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {c: _NAMED.get(chr(c), f"\\x{c:02x}")
            for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_ESCAPES.update({c: f"\\u{c:04x}" for c in _BIDI})


def printable(text: str) -> str:
    """`text` with every control character written as an escape (``\\x1b``, ``\\n``)."""
    return text.translate(_ESCAPES)
