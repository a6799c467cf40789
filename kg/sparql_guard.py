"""Which SPARQL requests would make the served store contact another host (SERVICE, LOAD).

`kg serve` and `kg query` refuse them unless `--allow-federation`: a query that reaches `SERVICE <url>` or an
update with `LOAD <url>` makes the Oxigraph server open a connection to any host, even a
read-only one, on behalf of whoever can send a request (a web page through the user's browser,
another local user).  Oxigraph has no option to turn federation off, so the proxy in front of
it (kg/serve_proxy.py) asks this module.

Detection must not be bypassable, so it errs towards refusing:

1. SPARQL's codepoint escapes (`\\u0053ERVICE` is `SERVICE`, spec §19.2) are expanded first, as
   Oxigraph and rdflib both do before parsing.
2. Text that does not contain "service" or "load" in any case cannot call either: allowed at
   once (every ordinary query, and every query kgprobe's own clients send).
3. Otherwise rdflib's SPARQL 1.1 parser reads it, and every `ServiceGraphPattern` and `Load`
   in the parse tree is a finding; a keyword scan that skips only strings, IRIs and comments
   is added to them, so a difference between rdflib's parser and Oxigraph's cannot hide one.
4. Text rdflib cannot parse (Oxigraph's extensions, or simply invalid) or that is too long to
   parse quickly is refused whole: we cannot show that it calls nobody.

The parse is pure Python (pyparsing) and slow on long texts (about 0.3 s per KB of a long
FILTER), so `MAX_PARSED` keeps one check under a few seconds of one core; and checks run side
by side, with no lock held across a parse, so one long text does not hold up the requests
behind it (`kg serve` checks each request in its own thread).  Packrat caching, the one piece
of shared state pyparsing guards, stays off (rdflib does not turn it on); the grammar's one-time
preparation (`streamline`) is done once, under a lock, before any parse may run beside another.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from kgprobe.errors import QueryError

#: above this many characters a text that mentions service/load is refused unparsed
#: (a parse costs up to ~3 s of one core at this length; any real federated query is shorter)
MAX_PARSED = 10_000

_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_MENTION = re.compile(r"service|load", re.IGNORECASE)
# the terminals that can hide a keyword from a word scan: strings (long first), IRIs, comments
_OPAQUE = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""' r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
                     r'|"(?:[^"\\\n\r]|\\.)*"' r"|'(?:[^'\\\n\r]|\\.)*'"
                     r'|<[^<>"{}|^`\\\x00-\x20]*>' r"|#[^\n\r]*", re.DOTALL)
# a keyword is a word not glued to a prefixed name, variable, blank node or language tag (a
# name with "-load" or ".service" in it counts: the scan may refuse too much, never too little)
_KEYWORD = re.compile(r"(?<![\w:?$@])(service|load)(?![\w:])", re.IGNORECASE)
_PREPARED = threading.Lock()  # held only for the grammar's first, one-time preparation
_prepared: set[str] = set()


class FederationError(QueryError):
    """A query would send requests to another server and the user did not allow it."""


@dataclass(frozen=True)
class Finding:
    """One reason a request may reach another host: `keyword` SERVICE, LOAD or `unverified`."""

    keyword: str
    target: str

    def __str__(self) -> str:
        return f"{self.keyword} {self.target}".strip()


def expand_escapes(text: str) -> str:
    """SPARQL 1.1 §19.2: `\\uXXXX` and `\\UXXXXXXXX` are replaced before the text is parsed."""
    def one(m: re.Match) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group(0)
    return _ESCAPE.sub(one, text)


def federation(text: str, kind: str) -> list[Finding]:
    """The SERVICE/LOAD calls in a query (`kind` "query") or update ("update"); a single
    `unverified` finding when the text mentions one but cannot be parsed to check."""
    text = expand_escapes(text)
    if not _MENTION.search(text):
        return []
    if len(text) > MAX_PARSED:
        return [Finding("unverified", f"({len(text)} characters, too long to check)")]
    try:
        tree = _parse(text, kind)
    except Exception as err:  # noqa: BLE001 - any parse failure means "cannot show it is safe"
        return [Finding("unverified", f"(rdflib cannot parse it: {' '.join(str(err).split())[:80]})")]
    found = list(_walk(tree))
    if not found and keyword_scan(text):
        found = [Finding(word.upper(), "(seen by the keyword scan)") for word in keyword_scan(text)]
    return found


def refuse_federation(sparql: str, *, allow: bool, kind: str = "query",
                      option: str = "--allow-federation") -> None:
    """One line naming the first SERVICE/LOAD target unless `allow`: no request leaves the
    machine because of a query the user may have copied from elsewhere."""
    found = [] if allow else federation(sparql, kind)
    if found:
        raise FederationError(f"the {kind} may call another server ({found[0]}); pass {option} "
                              "to allow federated queries")


def keyword_scan(text: str) -> list[str]:
    """SERVICE/LOAD keywords outside strings, IRIs and comments (any case)."""
    code = _OPAQUE.sub(" ", text)
    return [m.group(1) for m in _KEYWORD.finditer(code)]


def _parse(text: str, kind: str):
    from rdflib.plugins.sparql.parser import parseQuery, parseUpdate

    parse = parseUpdate if kind == "update" else parseQuery
    if kind not in _prepared:  # the first parse streamlines the shared grammar: one at a time
        with _PREPARED:
            try:
                return parse(text)
            finally:
                _prepared.add(kind)
    return parse(text)


def _walk(node):
    from rdflib.plugins.sparql.parserutils import CompValue

    if isinstance(node, CompValue):
        if node.name == "ServiceGraphPattern":
            yield Finding("SERVICE", _term(node.get("term")))
        elif node.name == "Load":
            yield Finding("LOAD", _term(node.get("iri")))
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, (list, tuple)) or hasattr(node, "as_list"):
        for value in node:
            yield from _walk(value)


def _term(term) -> str:
    """The target as the text wrote it: `<iri>`, `prefix:name` or `?var`."""
    if term is None:
        return "?"
    if type(term).__name__ == "Variable":
        return f"?{term}"
    if getattr(term, "name", None) == "pname":  # rdflib's CompValue for a prefixed name
        return f"{term['prefix'] if 'prefix' in term else ''}:" + (
            term["localname"] if "localname" in term else "")
    return f"<{term}>"
