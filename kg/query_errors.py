"""What is wrong with a query text Oxigraph could not parse, in one line.

Oxigraph's parser answers "expected CONSTRUCT" to a misspelt SELECT and to an update alike,
and lists the characters it would have accepted for an unknown prefix; `explain` names the
actual problem where it can tell: not a query at all, an update given to a command that only
reads, a prefix that is not declared (with those that are).
"""

from __future__ import annotations

import re

QUERY_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
UPDATE_FORMS = ("INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY",
                "WITH")
_PROLOGUE = re.compile(r"\s*(?:(?:PREFIX\s+[\w.-]*:\s*<[^>]*>|BASE\s*<[^>]*>)\s*)*",
                       re.IGNORECASE)
_COMMENT = re.compile(r"#[^\n]*")
_STRING = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"",
                     re.DOTALL)
_IRI = re.compile(r"<[^<>\"{}|^`\\\s]*>")
_DECLARED = re.compile(r"PREFIX\s+([\w.-]*):", re.IGNORECASE)
# a prefixed name (pfx:local or pfx:), not a variable, a blank node or a language tag
_USED = re.compile(r"(?<![\w?$@.:-])([A-Za-z][\w.-]*?)?:(?=[\w%\\(\s.;,)\]}]|$)")


def _strip(sparql: str) -> str:
    return _IRI.sub(" ", _STRING.sub(" ", _COMMENT.sub(" ", sparql)))


def explain(sparql: str, parser_line: str, prefixes: dict[str, str]) -> str:
    """One line saying what is wrong with `sparql`; `parser_line` is the parser's own message,
    used when nothing more specific is found. `prefixes`: those predeclared."""
    text = _COMMENT.sub(" ", sparql)
    head = text[_PROLOGUE.match(text).end():]
    word = re.match(r"[A-Za-z]*", head).group(0).upper()
    if word in UPDATE_FORMS:
        return (f"this is a SPARQL update ({word}), and this command only reads; give a query "
                f"({', '.join(QUERY_FORMS)})")
    if word not in QUERY_FORMS:
        start = head.strip().split(None, 1)[0][:30] if head.strip() else "nothing"
        return (f"not a SPARQL query: it starts with '{start}'; a query starts with "
                f"{', '.join(QUERY_FORMS)} (after any PREFIX lines)")
    declared = set(prefixes) | {m.lower() for m in _DECLARED.findall(sparql)}
    declared |= set(_DECLARED.findall(sparql))
    clean = _strip(_PROLOGUE.sub(" ", text, count=1))
    unknown = [p or "" for p in _USED.findall(clean) if (p or "") not in declared]
    if unknown:
        known = ", ".join(f"{p}:" for p in sorted(prefixes))
        return (f"unknown prefix '{unknown[0]}:'; declare it (PREFIX {unknown[0]}: <…>) or use "
                f"one of {known}")
    return f"invalid SPARQL query ({parser_line}); check the syntax"
