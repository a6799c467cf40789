"""The front door of `kg serve`: a small reverse proxy before the Oxigraph server.

The Oxigraph server (0.5) has no authentication, checks neither `Host` nor `Origin`, and
follows `SERVICE`/`LOAD` to any host, so on its own any web page the user visits could
`POST update=DROP ALL` to it (CSRF), read it after DNS rebinding, or use it to reach other
hosts.  It cannot be told otherwise, so kgprobe puts this proxy on the address the user asked
for and keeps the real server on a loopback address nobody is told (see kg/serve.py), and the
proxy forwards only requests that pass `check`:

* every request (reads too: DNS rebinding reads): exactly one `Host` naming this server,
  no foreign `Origin` and no `Sec-Fetch-Site: cross-site|same-site`;
* writes (SPARQL updates, Graph Store writes): refused unless `--allow-updates`, and then
  only with `Authorization: Bearer TOKEN`, the token `kg serve` printed at start;
* SERVICE and LOAD (kg/sparql_guard.py): refused unless `--allow-federation`.

An accepted write first marks the store's inferences stale in the meta graph (every source's
recorded hash changes, as `kg load` changes one; the inferences' fingerprint is replaced; the
`kg stats` figures recorded at load time go), then is forwarded, then the mark is made again
(a write may have touched the meta graph): so `kg stats`, `generate` and the studies refuse the
store until `kgprobe reason` as after `kg load`.  Marking first means a crash between the two
leaves a stale mark and no write, never a write and a fresh mark; a mark that fails refuses
the write.  Writes are forwarded one at a time.
"""

from __future__ import annotations

import hmac
import http.client
import ipaddress
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from kgprobe.kg.meta import (
    COMPUTED_FROM,
    INFERRED_GRAPH,
    META_GRAPH,
    SOURCE_HASH,
    STAT_PREDICATES,
)
from kgprobe.kg.sparql_guard import federation

FORM = "application/x-www-form-urlencoded"
SPARQL_PATHS = ("/query", "/update", "/sparql")
MAX_BODY = 64 * 1024 * 1024  # a bigger Graph Store upload: `kg load` the file instead
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "expect", "content-length", "authorization", "cookie",
        "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"}


class Refusal(Exception):
    """A request the proxy answers itself: `status` and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ProxyPolicy:
    """What the proxy lets through, and where to."""

    upstream: tuple[str, int]
    bind: str
    allow_updates: bool = False
    allow_federation: bool = False
    token: str | None = None


@dataclass(frozen=True)
class Request:
    """One client request as the proxy understood it: what it checks is what it forwards."""

    method: str
    path: str
    query: str
    content_type: str
    body: bytes

    @property
    def target(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")


def host_allowed(host: str, bind: str) -> bool:
    """Is `host` (a Host header, or an Origin's host[:port]) a name of the server at `bind`?

    Names an attacker controls (DNS rebinding) never are: the bound address, and for a
    loopback bind `localhost`, `127.0.0.1`, `[::1]`; for a wildcard bind any IP address and
    this machine's own names."""
    bind_host, _, port = bind.rpartition(":")
    name, sep, got_port = host.strip().lower().rpartition(":")
    if not sep or "]" in got_port:  # no port given: only the default one
        name, got_port = host.strip().lower(), "80"
    if got_port != port:
        return False
    bind_host = bind_host.strip("[]").lower()
    name = name.strip("[]")
    if name == bind_host:
        return True
    if _is_loopback(bind_host):
        return name in ("localhost", "127.0.0.1", "::1")
    if bind_host in ("0.0.0.0", "::", ""):
        return _is_ip(name) or name in ("localhost", socket.gethostname().lower(),
                                        socket.getfqdn().lower())
    return False


def check_headers(policy: ProxyPolicy, headers) -> None:
    """Refuse (`Refusal`) a request not meant for this server, before its body is read."""
    hosts = headers.get_all("Host") or []
    if len(hosts) != 1 or not host_allowed(hosts[0], policy.bind):
        raise Refusal(403, f"Host {', '.join(hosts) or '(none)'} is not this server "
                      f"({policy.bind}); send Host: {policy.bind} (DNS rebinding guard)")
    for origin in headers.get_all("Origin") or []:
        parts = urlsplit(origin.strip())
        if parts.scheme != "http" or not parts.netloc or not host_allowed(parts.netloc, policy.bind):
            raise Refusal(403, f"Origin {origin} is another site; kg serve answers pages of "
                          "other sites nothing (cross-site request guard)")
    if (headers.get("Sec-Fetch-Site") or "").strip().lower() in ("cross-site", "same-site"):
        raise Refusal(403, "a request another site's page made (Sec-Fetch-Site); refused")
    if (headers.get("Content-Encoding") or "identity").strip().lower() != "identity":
        raise Refusal(415, "send the request body without Content-Encoding")


def check(policy: ProxyPolicy, req: Request, headers) -> bool:
    """Refuse (`Refusal`) a request that may not pass; else say whether it writes."""
    write, texts = classify(req)
    if write:
        if not policy.allow_updates:
            raise Refusal(403, "this endpoint is read-only; restart `kgprobe kg serve` with "
                          "--allow-updates to accept updates (with the token it prints)")
        given = [value.split(None, 1) for value in headers.get_all("Authorization") or []]
        if (len(given) != 1 or len(given[0]) != 2 or given[0][0].lower() != "bearer"
                or not policy.token
                or not hmac.compare_digest(given[0][1].strip().encode(), policy.token.encode())):
            raise Refusal(401, "updates need the header `Authorization: Bearer TOKEN` with the "
                          "token `kgprobe kg serve --allow-updates` printed at start")
    if not policy.allow_federation:
        for kind, text in texts:
            found = federation(text, kind)
            if found:
                raise Refusal(403, f"{'; '.join(map(str, found))}: this {kind} would make the "
                              "server contact another host (SERVICE/LOAD); restart `kgprobe kg "
                              "serve` with --allow-federation to allow that")
    return write


def classify(req: Request) -> tuple[bool, list[tuple[str, str]]]:
    """(is it a write?, every SPARQL text it carries as (kind, text)), as Oxigraph routes it:
    every `query` and `update` parameter of the URL and a form body, and a raw SPARQL body."""
    if req.path not in SPARQL_PATHS:
        return req.method not in ("GET", "HEAD"), []
    params = parse_qsl(req.query, keep_blank_values=True, errors="replace")
    if req.content_type == FORM:
        params += parse_qsl(req.body.decode("utf-8", "replace"), keep_blank_values=True,
                            errors="replace")
    texts = [(key, value) for key, value in params if key in ("query", "update")]
    raw_update = req.content_type == "application/sparql-update"
    if req.content_type != FORM and req.body:
        try:
            texts.append(("update" if raw_update or req.path == "/update" else "query",
                          req.body.decode("utf-8")))
        except UnicodeDecodeError:
            raise Refusal(400, "the SPARQL text is not UTF-8") from None
    if req.path == "/update":
        return True, texts
    if req.path == "/sparql" and req.method not in ("GET", "HEAD", "QUERY"):
        pure_query = req.content_type == "application/sparql-query" or (
            req.content_type == FORM and not any(k == "update" for k, _ in texts))
        return not pure_query, texts
    return False, texts


class SparqlProxy(ThreadingHTTPServer):
    """The threaded proxy server; `serve_forever` in a thread, `shutdown` from another."""

    daemon_threads = True

    def __init__(self, policy: ProxyPolicy, family: int, address: tuple):
        self.address_family = family
        self.policy = policy
        self.write_lock = threading.Lock()
        super().__init__(address, _Handler)

    def mark_stale(self) -> None:
        """Make the served store's inferences stale and forget its load-time figures."""
        preds = " ".join(f"<{iri}>" for iri in STAT_PREDICATES.values())
        stamp = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} #{time.time_ns()}"
        update = (
            # every source's recorded hash changes, as `kg load` changes one: inferences
            # computed after this write must go stale when a source is reloaded as it was
            f"DELETE {{ GRAPH <{META_GRAPH}> {{ ?g <{SOURCE_HASH}> ?h }} }} "
            f"INSERT {{ GRAPH <{META_GRAPH}> {{ ?g <{SOURCE_HASH}> ?written }} }} "
            f"WHERE {{ GRAPH <{META_GRAPH}> {{ ?g <{SOURCE_HASH}> ?h }} "
            f"BIND(CONCAT(IF(CONTAINS(?h, \" \"), STRBEFORE(?h, \" \"), ?h), "
            f"\" written through kg serve {stamp}\") AS ?written) }} ;\n"
            # and the inferred graph's fingerprint matches nothing (a new graph, a write to the
            # inferred or meta graph change no recorded hash)
            f"DELETE {{ GRAPH <{META_GRAPH}> {{ <{INFERRED_GRAPH}> <{COMPUTED_FROM}> ?f }} }} "
            f"INSERT {{ GRAPH <{META_GRAPH}> {{ <{INFERRED_GRAPH}> <{COMPUTED_FROM}> "
            f"\"stale: written through kg serve at {stamp}\" }} }} "
            f"WHERE {{ GRAPH <{META_GRAPH}> {{ <{INFERRED_GRAPH}> <{COMPUTED_FROM}> ?f }} }} ;\n"
            f"DELETE {{ GRAPH <{META_GRAPH}> {{ ?g ?p ?n }} }} WHERE {{ GRAPH <{META_GRAPH}> "
            f"{{ ?g ?p ?n }} VALUES ?p {{ {preds} }} }}")
        conn = http.client.HTTPConnection(*self.policy.upstream, timeout=60)
        try:
            conn.request("POST", "/update", body=update.encode(),
                         headers={"Content-Type": "application/sparql-update"})
            resp = conn.getresponse()
            resp.read()
            ok = 200 <= resp.status < 300
        except OSError:
            ok = False
        finally:
            conn.close()
        if not ok:
            raise Refusal(502, "could not mark the store's inferences stale, so the write "
                          "was not made")


class _Handler(BaseHTTPRequestHandler):
    server: SparqlProxy
    server_version = "kgprobe-serve"
    timeout = 60  # a client that stops sending frees its thread

    def _handle(self) -> None:
        try:
            try:
                check_headers(self.server.policy, self.headers)
                req = self._request()
                if check(self.server.policy, req, self.headers):
                    with self.server.write_lock:
                        self.server.mark_stale()
                        self._forward(req)
                        self.server.mark_stale()
                else:
                    self._forward(req)
            except Refusal as refusal:
                self._refuse(refusal.status, str(refusal))
        except OSError:
            pass  # the client went away or stalled mid-request: nothing to answer to

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_QUERY = _handle

    def _request(self) -> Request:
        parts = urlsplit(self.path)
        if "transfer-encoding" in (k.lower() for k in self.headers):
            raise Refusal(411, "send the body with a Content-Length (chunked bodies are refused)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refusal(400, "Content-Length is not a number") from None
        if length < 0 or length > MAX_BODY:
            raise Refusal(413, f"request bodies are limited to {MAX_BODY} bytes; load big files "
                          "with `kgprobe kg load`")
        body = self.rfile.read(length) if length else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        return Request(self.command, parts.path or "/", parts.query, ctype, body)

    def _forward(self, req: Request) -> None:
        conn = http.client.HTTPConnection(*self.server.policy.upstream)
        try:
            conn.putrequest(req.method, req.target, skip_host=True, skip_accept_encoding=True)
            for key, value in self.headers.items():
                if key.lower() not in _HOP:
                    conn.putheader(key, value)
            if req.body or req.method in ("POST", "PUT"):
                conn.putheader("Content-Length", str(len(req.body)))
            conn.endheaders(req.body or None)
            resp = conn.getresponse()
        except OSError as err:
            conn.close()
            raise Refusal(502, f"the Oxigraph server behind kg serve did not answer ({err})") from None
        try:
            self.send_response(resp.status, resp.reason)
            for key, value in resp.getheaders():
                if key.lower() not in _HOP or key.lower() == "content-length":
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            if req.method != "HEAD":
                while chunk := resp.read(65536):
                    self.wfile.write(chunk)
        finally:
            conn.close()

    def _refuse(self, status: int, message: str) -> None:
        print(f"kg serve: refused {self.command} {urlsplit(self.path).path}: {message}",
              file=sys.stderr, flush=True)
        body = (message + "\n").encode()
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="kgprobe kg serve"')
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        """Quiet: the refusals are logged, one line each, by `_refuse`."""


def _is_loopback(host: str) -> bool:
    return host == "localhost" or (_is_ip(host) and ipaddress.ip_address(host).is_loopback)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False
