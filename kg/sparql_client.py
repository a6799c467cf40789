"""A SPARQL 1.1 Protocol client: one query over HTTP, with a timeout and retries with backoff.

Only the standard library (urllib) speaks HTTP here; answers are parsed by pyoxigraph's own
SPARQL results and RDF parsers, so any conforming endpoint (Oxigraph, Fuseki, Virtuoso for
DBpedia, Blazegraph for Wikidata) works.  Network trouble and server overload (5xx, 429) are
retried with exponential backoff; an endpoint that rejects the query (4xx) is not, since asking
again gets the same answer, nor is `kg serve`'s own 503 for a query past its --query-timeout
(`SERVE_TIMEOUT`): that query was stopped and would only be stopped again.  Every failure ends
as one line naming the endpoint and the fix.
"""

from __future__ import annotations

import http.client
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

import pyoxigraph as ox
from kgprobe.errors import QueryError, StoreError

#: What we ask for: SPARQL results (JSON first, XML for older servers) and RDF for CONSTRUCT.
RESULTS_ACCEPT = ("application/sparql-results+json, application/sparql-results+xml;q=0.9, "
                  "text/tab-separated-values;q=0.5")
GRAPH_ACCEPT = "application/n-triples, text/turtle;q=0.9, application/rdf+xml;q=0.5"
_RETRY_STATUS = {429, 500, 502, 503, 504}
#: What `kg serve` says in the 503 it answers for a query that ran past its --query-timeout
#: (kg/serve_proxy.py): the server stopped the query, so asking again would only run it again
#: (and restart the server again), never answer it.
SERVE_TIMEOUT = "ran past kg serve's --query-timeout"
#: The largest answer read by default (`--max-answer`): a bulk read pages long before this.
MAX_ANSWER = 512 << 20
_CHUNK = 1 << 16


class EndpointError(StoreError):
    """A SPARQL endpoint cannot be reached or answered with an error."""


class AnswerTooLarge(EndpointError):
    """The answer passed --max-answer: not retried (asking again gets the same answer)."""


class _Deadline(Exception):
    """The request's --timeout passed while the answer was still arriving."""


@dataclass
class SparqlClient:
    """How to talk to one endpoint: `timeout` seconds per request, the whole answer included
    (a server dripping bytes cannot hold a request longer: such an answer is not retried),
    `retries` further tries after a network failure (waiting `backoff`, 2×`backoff`, …
    seconds), so one request takes at most (retries + 1) × timeout plus the backoff; `max_answer` bytes at most per answer (checked
    against Content-Length first, then while reading), `default_graphs` sent as the
    protocol's `default-graph-uri` (the dataset a query sees; none: the endpoint's default)."""

    url: str
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    default_graphs: tuple[str, ...] = ()
    max_answer: int = MAX_ANSWER

    def __post_init__(self) -> None:
        if urllib.parse.urlsplit(self.url).scheme not in ("http", "https"):
            raise EndpointError(f"--endpoint {self.url}: not an http(s) URL; give the endpoint's "
                                "query URL, e.g. http://127.0.0.1:7878/query")

    def select(self, sparql: str, *, default_graphs: tuple[str, ...] | None = None):
        """A SELECT or ASK answer as pyoxigraph QuerySolutions / QueryBoolean."""
        media, body = self.request(sparql, RESULTS_ACCEPT, default_graphs)
        fmt = ox.QueryResultsFormat.from_media_type(media) or ox.QueryResultsFormat.JSON
        try:
            return ox.parse_query_results(body, fmt)
        except (SyntaxError, ValueError) as err:
            raise EndpointError(f"{self.url}: the answer is not valid SPARQL results "
                                f"({media}: {_one_line(err)}); is this a SPARQL endpoint?") from None

    def select_rows(self, sparql: str, *, default_graphs: tuple[str, ...] | None = None) -> list:
        """A SELECT answer as a list of solutions. pyoxigraph parses solutions lazily, so a
        term it refuses (an IRI with a space in it) raises only while they are read: here,
        where it is one line naming the endpoint, not wherever a caller iterates."""
        answer = self.select(sparql, default_graphs=default_graphs)
        try:
            return list(answer)
        except (SyntaxError, ValueError) as err:
            raise EndpointError(f"{self.url}: the answer holds a term that is not valid RDF "
                                f"({_one_line(err)}); nothing of it was used: fix the data "
                                "at the endpoint, or ask for less (kg pull --namespace)") from None

    def construct(self, sparql: str, *, default_graphs: tuple[str, ...] | None = None) -> list:
        """A CONSTRUCT or DESCRIBE answer as a list of pyoxigraph Triples."""
        media, body = self.request(sparql, GRAPH_ACCEPT, default_graphs)
        fmt = ox.RdfFormat.from_media_type(media) or ox.RdfFormat.N_TRIPLES
        try:
            return [q.triple for q in ox.parse(body, fmt)]
        except (SyntaxError, ValueError) as err:
            raise EndpointError(f"{self.url}: the answer is not valid RDF ({media}: "
                                f"{_one_line(err)}); is this a SPARQL endpoint?") from None

    def request(self, sparql: str, accept: str,
                default_graphs: tuple[str, ...] | None = None) -> tuple[str, bytes]:
        """POST the query (form-encoded, as the protocol allows for any length); return the
        answer's media type and body.  Retries transient failures with exponential backoff."""
        graphs = self.default_graphs if default_graphs is None else default_graphs
        form = [("query", sparql), *(("default-graph-uri", g) for g in graphs)]
        data = urllib.parse.urlencode(form).encode()
        headers = {"Accept": accept, "Content-Type": "application/x-www-form-urlencoded",
                   "User-Agent": "kgprobe (SPARQL 1.1 Protocol client)"}
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            deadline = time.monotonic() + self.timeout
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    media = resp.headers.get_content_type()
                    return media, self._read(resp, deadline)
            except _Deadline:  # the server is answering, too slowly: asking again would be too
                raise EndpointError(f"{self.url}: the answer did not arrive whole within "
                                    f"--timeout {self.timeout:g} s (the endpoint sends it too "
                                    "slowly); raise --timeout or ask for less") from None
            except urllib.error.HTTPError as err:
                detail = _one_line(err.read().decode("utf-8", "replace")) or err.reason
                if err.code == 503 and SERVE_TIMEOUT in detail:
                    raise EndpointError(f"{self.url}: query timed out at the endpoint ({detail})"
                                        ) from None
                if err.code not in _RETRY_STATUS:
                    kind = QueryError if err.code == 400 else EndpointError
                    raise kind(f"{self.url}: the endpoint refused the query (HTTP {err.code}: "
                               f"{detail}); check the query and the endpoint URL") from None
                last = f"HTTP {err.code}: {detail}"
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError,
                    http.client.HTTPException, OSError) as err:
                reason = getattr(err, "reason", err)
                last = f"timed out after {self.timeout:g} s" if isinstance(
                    reason, (socket.timeout, TimeoutError)) else _one_line(
                    f"{type(reason).__name__}: {reason}" if isinstance(
                        reason, http.client.HTTPException) else reason)
        raise EndpointError(f"{self.url}: endpoint unreachable ({last}; {self.retries + 1} "
                            "tries); check the URL, or raise --timeout / --retries")


    def _read(self, resp, deadline: float) -> bytes:
        """The body, chunk by chunk: each socket read waits at most until `deadline`, and the
        total is checked against `max_answer` (the announced length first), so neither a slow
        nor a huge answer holds the command or its memory."""
        announced = resp.headers.get("Content-Length")
        if announced and announced.isdigit() and int(announced) > self.max_answer:
            raise self._too_large(f"{int(announced) >> 20} MiB announced")
        sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
        parts, size = [], 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Deadline
            if sock is not None:
                sock.settimeout(left)
            try:
                chunk = resp.read1(_CHUNK)
            except (socket.timeout, TimeoutError):
                raise _Deadline from None
            if not chunk:
                if getattr(resp, "length", None):  # the server closed before its Content-Length
                    raise http.client.IncompleteRead(b"".join(parts), resp.length)
                return b"".join(parts)
            size += len(chunk)
            if size > self.max_answer:
                raise self._too_large("more than that arrived")
            parts.append(chunk)

    def _too_large(self, what: str) -> AnswerTooLarge:
        from kgprobe.guard import human

        return AnswerTooLarge(f"{self.url}: the answer is larger than --max-answer "
                              f"{human(self.max_answer)} ({what}); ask for less (LIMIT, "
                              "--page-size) or raise --max-answer")


def with_prefixes(sparql: str, prefixes: dict[str, str]) -> str:
    """Declare the prefixes kgprobe queries may use without declaring them (remote endpoints
    know none of ours), skipping any the query declares itself.  All on the query's first
    line, so an endpoint's error names the user's line numbers."""
    declared = {m.lower() for m in re.findall(r"(?i)\bPREFIX\s+([\w.-]*):", sparql)}
    head = "".join(f"PREFIX {p}: <{ns}> " for p, ns in prefixes.items() if p.lower() not in declared)
    return head + sparql


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:200]
