"""Does a SPARQL request reach out to other servers?  `SERVICE` (federated query) and `LOAD`
(SPARQL Update: read a URL into the store).

Why here and as text: pyoxigraph evaluates `SERVICE <http://…>` by sending the query there
(an HTTP request the user may not expect from a local `kg query`), and exposes no algebra to
inspect a query before running it.  Both keywords can only appear as keywords once strings,
IRIs and comments are blanked out and names that merely contain them (`?service`,
`ex:SERVICE`, `SERVICE:x`, `"…"@service`) are skipped, so a scan of what is left finds every
use with no false alarm on ordinary queries.  The served store (`kg serve`) can use the same
helpers for its own SERVICE/LOAD refusal.
"""

from __future__ import annotations

import re

from kgprobe.errors import QueryError

#: Strings (long and short), IRIs and comments: blanked before keywords are looked for.
_OPAQUE = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
                     r'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<[^<>"{}|^`\\\s]*>|#[^\n]*',
                     re.S)
_KEYWORD = r"(?<![\w:?$@.-]){}(?![\w:-])"
_SERVICE = re.compile(_KEYWORD.format("SERVICE") + r"(?:\s+SILENT)?\s*(\S*)", re.I)
_LOAD = re.compile(_KEYWORD.format("LOAD") + r"(?:\s+SILENT)?\s*(\S*)", re.I)


class FederationError(QueryError):
    """A query would send requests to another server and the user did not allow it."""


def _blank(sparql: str) -> tuple[str, list[str]]:
    """The query with strings, IRIs and comments replaced by `<N>` / spaces; the IRIs."""
    iris: list[str] = []

    def sub(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("<"):
            iris.append(text)
            return f"<{len(iris) - 1}>"
        return " "

    return _OPAQUE.sub(sub, sparql), iris


def _targets(pattern: re.Pattern, sparql: str) -> list[str]:
    text, iris = _blank(sparql)
    found = []
    for match in pattern.finditer(text):
        target = match.group(1)
        index = re.fullmatch(r"<(\d+)>.*", target)
        found.append(iris[int(index.group(1))] if index else target.rstrip("{") or "?")
    return found


def service_targets(sparql: str) -> list[str]:
    """The endpoints of the query's SERVICE clauses (`<IRI>`, a prefixed name or a variable)."""
    return _targets(_SERVICE, sparql)


def load_targets(sparql: str) -> list[str]:
    """The documents a SPARQL Update's LOAD operations would fetch."""
    return _targets(_LOAD, sparql)


def uses_service(sparql: str) -> bool:
    return bool(service_targets(sparql))


def uses_load(sparql: str) -> bool:
    return bool(load_targets(sparql))


def refuse_federation(sparql: str, *, allow: bool, option: str = "--allow-federation") -> None:
    """One line naming the SERVICE target unless `allow`: no request leaves the machine
    because of a query the user may have copied from elsewhere."""
    targets = service_targets(sparql)
    if targets and not allow:
        raise FederationError(f"the query calls SERVICE {targets[0]}, which sends a request to "
                              f"that server; pass {option} to allow federated queries")
