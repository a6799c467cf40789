"""The front door of `kg serve`: a small reverse proxy before the Oxigraph server.

The Oxigraph server (0.5) has no authentication, checks neither `Host` nor `Origin`, and
follows `SERVICE`/`LOAD` to any host, so on its own any web page the user visits could
`POST update=DROP ALL` to it (CSRF), read it after DNS rebinding, or use it to reach other
hosts.  It cannot be told otherwise, so kgprobe puts this proxy on the address the user asked
for and keeps the real server on a loopback address nobody is told (see kg/serve.py), and the
proxy forwards only requests that pass kg/serve_checks.py (Host, Origin, the update token,
SERVICE/LOAD).

Nothing a client sends holds the server for long (docs/limits.md):

* at most `max_connections` connections are served at once; one more is answered 503 at once
  by the accepting thread, which never waits on a client;
* a client has `request_timeout_s` for its whole request (request line, headers and body),
  however slowly it drips bytes: every socket read waits only for what is left of it;
* a forwarded request has `query_timeout_s` for its whole answer.  Oxigraph's own timeout does
  not stop every query (a COUNT over a three-way cross product ran on at one core, long past
  it, after the client had gone), so past the deadline the proxy answers 503 itself and has
  `kg serve` restart the Oxigraph server (`Upstream.stuck`), which ends the query for certain.
  An answer is held back until it is complete or `PREBUFFER` long, so a query that times out
  before (every aggregate) gets a real 503, not a 200 with a cut body; a longer answer is
  relayed chunked, so a cut one is visibly incomplete to an HTTP/1.1 client.

An accepted write first marks the store's inferences stale in the meta graph (every source's
recorded hash changes, as `kg load` changes one; the inferences' fingerprint is replaced; the
`kg stats` figures recorded at load time go), then is forwarded, then the mark is made again
(a write may have touched the meta graph): so `kg stats`, `generate` and the studies refuse the
store until `kgprobe reason` as after `kg load`.  Marking first means a crash between the two
leaves a stale mark and no write, never a write and a fresh mark; a mark that fails refuses
the write.  Writes are forwarded one at a time.
"""

from __future__ import annotations

import http.client
import io
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol
from urllib.parse import urlsplit

from kgprobe.kg.meta import (
    COMPUTED_FROM,
    INFERRED_GRAPH,
    META_GRAPH,
    SOURCE_HASH,
    STAT_PREDICATES,
)
from kgprobe.kg.serve_checks import (
    ProxyPolicy,
    Refusal,
    Request,
    check,
    check_headers,
    split_target,
)
from kgprobe.kg.serve_limits import DeadlineReader, ProxyLimits, arm
from kgprobe.terminal import printable

MAX_BODY = 64 * 1024 * 1024  # a bigger Graph Store upload: `kg load` the file instead
#: an answer up to this long is read whole before its status is sent (see the docstring)
PREBUFFER = 64 * 1024
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "expect", "content-length", "authorization", "cookie",
        "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"}
RESTARTING = ("the Oxigraph server behind kg serve was restarted (a query ran past "
              "--query-timeout); send the request again")


class Upstream(Protocol):
    """The Oxigraph server as the proxy sees it: kg/serve.py's `OxigraphServer`."""

    generation: int  # counts restarts: a request knows which server it was sent to

    def wait_ready(self, timeout: float) -> bool: ...

    def stuck(self, generation: int) -> None: ...


def log(line: str) -> None:
    """One line on kg serve's stderr; client text in it is already made printable."""
    print(line, file=sys.stderr, flush=True)


class SparqlProxy(ThreadingHTTPServer):
    """The threaded proxy server; `serve_forever` in a thread, `shutdown` from another."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, policy: ProxyPolicy, family: int, address: tuple,
                 limits: ProxyLimits = ProxyLimits(), upstream: Upstream | None = None):
        self.address_family = family
        self.policy = policy
        self.limits = limits
        self.upstream = upstream
        self.write_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._busy_logged = 0.0
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        """A thread per connection up to `max_connections`; past it a 503 at once."""
        if not self._slots.acquire(blocking=False):
            self._turn_away(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address) -> None:
        """A request the handler did not expect: one line, never a traceback."""
        err = sys.exc_info()[1]
        log(f"kg serve: could not answer a request ({printable(repr(err))[:200]})")

    def _turn_away(self, sock: socket.socket) -> None:
        cap = self.limits.max_connections
        body = (f"kg serve is answering {cap} connections already (--max-connections {cap}); "
                "try again shortly\n").encode()
        head = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8"
                f"\r\nContent-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close"
                "\r\n\r\n").encode()
        try:
            sock.setblocking(False)  # a fresh socket's buffer takes these bytes at once
            sock.send(head + body)
            sock.recv(65536)  # what the client sent already: closing over it would reset
        except OSError:
            pass
        now = time.monotonic()
        if now - self._busy_logged > 10:  # a flood of them must not flood the log
            self._busy_logged = now
            log(f"kg serve: refused connections: {cap} open already (--max-connections)")

    def upstream_generation(self, deadline: float) -> int:
        """The server generation to send to, once it is up (it may be restarting)."""
        if self.upstream is None:
            return 0
        if not self.upstream.wait_ready(max(0.0, deadline - time.monotonic())):
            raise Refusal(503, RESTARTING)
        return self.upstream.generation

    def stuck(self, generation: int) -> None:
        if self.upstream is not None:
            self.upstream.stuck(generation)

    def restarted_since(self, generation: int) -> bool:
        return self.upstream is not None and self.upstream.generation != generation

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
        conn = http.client.HTTPConnection(*self.policy.upstream,
                                          timeout=self.limits.query_timeout_s)
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
    protocol_version = "HTTP/1.1"  # so a long answer can be relayed chunked; all close after one

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the base class's reader: replaced by one with a deadline
        limit = self.server.limits.request_timeout_s
        self.rfile = io.BufferedReader(DeadlineReader(self.connection,
                                                       time.monotonic() + limit))

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
            pass  # the client went away or stopped reading: nothing to answer to

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_QUERY = _handle

    def _request(self) -> Request:
        parts = split_target(self.path)
        if "transfer-encoding" in (k.lower() for k in self.headers):
            raise Refusal(411, "send the body with a Content-Length (chunked bodies are refused)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refusal(400, "Content-Length is not a number") from None
        if length < 0 or length > MAX_BODY:
            raise Refusal(413, f"request bodies are limited to {MAX_BODY} bytes; load big files "
                          "with `kgprobe kg load`")
        try:
            body = self.rfile.read(length) if length else b""
        except TimeoutError:
            raise Refusal(408, f"the request took longer than kg serve's --request-timeout "
                          f"({self.server.limits.request_timeout_s:g} s) to arrive") from None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        return Request(self.command, parts.path or "/", parts.query, ctype, body)

    def _forward(self, req: Request) -> None:
        deadline = time.monotonic() + self.server.limits.query_timeout_s
        generation = self.server.upstream_generation(deadline)
        conn = http.client.HTTPConnection(*self.server.policy.upstream,
                                          timeout=self.server.limits.query_timeout_s)
        try:
            sock, resp, head, complete = self._ask(conn, req, deadline, generation)
            self._relay(sock, resp, head, complete, deadline, generation)
        finally:
            conn.close()

    def _ask(self, conn: http.client.HTTPConnection, req: Request, deadline: float,
             generation: int):
        """Send `req` upstream; its response with up to PREBUFFER bytes of its body read."""
        try:
            conn.putrequest(req.method, req.target, skip_host=True, skip_accept_encoding=True)
            for key, value in self.headers.items():
                if key.lower() not in _HOP:
                    conn.putheader(key, value)
            if req.body or req.method in ("POST", "PUT"):
                conn.putheader("Content-Length", str(len(req.body)))
            conn.endheaders(req.body or None)
            sock = conn.sock  # the response keeps reading it after `conn` lets it go
            arm(sock, deadline)
            resp = conn.getresponse()
            parts, size, complete = [], 0, False
            while size < PREBUFFER and not complete:
                arm(sock, deadline)
                chunk = resp.read1(PREBUFFER - size)
                parts.append(chunk)
                size, complete = size + len(chunk), not chunk
            return sock, resp, b"".join(parts), complete
        except TimeoutError:
            raise Refusal(503, self._timed_out(generation)) from None
        except (OSError, http.client.HTTPException) as err:
            if self.server.restarted_since(generation):
                raise Refusal(503, RESTARTING) from None
            raise Refusal(502, "the Oxigraph server behind kg serve did not answer "
                          f"({printable(str(err))[:200]})") from None

    def _timed_out(self, generation: int) -> str:
        """Stop the query for certain (restart the server); the line for the client."""
        limit = self.server.limits.query_timeout_s
        log(f"kg serve: a {self.command} ran past --query-timeout ({limit:g} s); restarting the "
            "Oxigraph server to stop it")
        self.server.stuck(generation)
        return (f"the query ran past kg serve's --query-timeout ({limit:g} s) and was stopped; "
                "narrow it (a LIMIT, more specific patterns) or restart kg serve with a larger "
                "--query-timeout")

    def _relay(self, sock: socket.socket, resp: http.client.HTTPResponse, head: bytes,
               complete: bool, deadline: float, generation: int) -> None:
        self.send_response(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() not in _HOP:
                self.send_header(key, value)
        chunked = self._framing(resp, head, complete)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return
        self._send(head, chunked, deadline)
        while not complete:
            try:
                arm(sock, deadline)
                chunk = resp.read1(65536)
            except TimeoutError:
                self._timed_out(generation)
                return  # cut: the client sees no final chunk
            except (OSError, http.client.HTTPException):
                return
            complete = not chunk
            self._send(chunk, chunked, deadline)

    def _framing(self, resp: http.client.HTTPResponse, head: bytes, complete: bool) -> bool:
        """Send how the body ends: its length when known, else chunked (an HTTP/1.1 client
        then sees a cut answer as cut), else the connection's close; True when chunked."""
        length = resp.getheader("Content-Length")
        if self.command == "HEAD" or resp.status in (204, 304):
            if length is not None:
                self.send_header("Content-Length", length)
            return False
        if complete or length is not None:
            self.send_header("Content-Length", str(len(head)) if complete else length)
            return False
        if self.request_version == "HTTP/1.1":
            self.send_header("Transfer-Encoding", "chunked")
            return True
        return False

    def _send(self, data: bytes, chunked: bool, deadline: float) -> None:
        """Relay to the client, which has until the query's deadline to read it."""
        arm(self.connection, deadline)
        if chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data) if data else b"0\r\n\r\n"
        if data:
            self.wfile.write(data)

    def _refuse(self, status: int, message: str) -> None:
        log(f"kg serve: refused {printable(self.command or '')} {self._shown_path()}: {message}")
        body = (message + "\n").encode()
        self.connection.settimeout(5)  # a client that does not read its refusal: let it go
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="kgprobe kg serve"')
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _shown_path(self) -> str:
        try:
            path = urlsplit(self.path).path
        except ValueError:
            path = self.path
        return printable(path[:200])

    def log_error(self, format: str, *args) -> None:  # the base class's argument name
        """The base class's own refusals (a malformed request line, a request that did not
        arrive in time): one printable line each."""
        text = format % args
        if text.startswith("Request timed out"):
            text = (f"closed a connection whose request took longer than --request-timeout "
                    f"({self.server.limits.request_timeout_s:g} s)")
        log(f"kg serve: {printable(text)[:300]}")

    def log_message(self, format: str, *args) -> None:  # the base class's argument name
        """Quiet: refusals are logged, one line each, by `_refuse` and `log_error`."""
