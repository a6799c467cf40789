"""What `kg serve`'s proxy lets through (kg/serve_proxy.py forwards, this module decides).

* every request (reads too: DNS rebinding reads): exactly one `Host` naming this server,
  no foreign `Origin` and no `Sec-Fetch-Site: cross-site|same-site`;
* writes (SPARQL updates, Graph Store writes): refused unless `--allow-updates`, and then
  only with `Authorization: Bearer TOKEN`, the token `kg serve` printed at start;
* SERVICE and LOAD (kg/sparql_guard.py): refused unless `--allow-federation`.

Header values and paths are the client's own text: every message that quotes one passes it
through `terminal.printable`, so a request cannot write escape sequences to the operator's
terminal, and a value the URL parser cannot read is a refusal, never an exception.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qsl, urlsplit

from kgprobe.kg.sparql_guard import federation
from kgprobe.terminal import printable

FORM = "application/x-www-form-urlencoded"
SPARQL_PATHS = ("/query", "/update", "/sparql")


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


def split_target(target: str) -> SplitResult:
    """The request target split as a URL; one the parser refuses (`//[`) is a 400."""
    try:
        return urlsplit(target)
    except ValueError:
        raise Refusal(400, f"the request target {printable(target[:200])} is not a URL "
                      "path") from None


def split_host(host: str) -> tuple[str, str] | None:
    """(name, port) of a Host header or an Origin's host[:port], the port "80" when none is
    given; None when malformed.  An IPv6 address must be bracketed (`[::1]:7878`): a bare
    `::1:7878` cannot be told apart from the address `::1:7878`."""
    host = host.strip().lower()
    if host.startswith("["):
        name, sep, rest = host[1:].partition("]")
        if not sep or not _is_ip(name) or ":" not in name or (rest and rest[0] != ":"):
            return None
        return name, rest[1:] if rest else "80"
    if host.count(":") > 1:
        return None
    name, sep, port = host.partition(":")
    return name, port if sep else "80"


def host_allowed(host: str, bind: str) -> bool:
    """Is `host` (a Host header, or an Origin's host[:port]) a name of the server at `bind`?

    Names an attacker controls (DNS rebinding) never are: the bound address, and for a
    loopback bind `localhost`, `127.0.0.1`, `[::1]`; for a wildcard bind any IP address and
    this machine's own names."""
    bind_host, _, port = bind.rpartition(":")
    parts = split_host(host)
    if parts is None or parts[1] != port or not parts[0]:
        return False
    name = parts[0]
    bind_host = bind_host.strip("[]").lower()
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
        shown = printable(", ".join(hosts)[:200]) or "(none)"
        raise Refusal(403, f"Host {shown} is not this server ({policy.bind}); send Host: "
                      f"{policy.bind} (DNS rebinding guard)")
    for origin in headers.get_all("Origin") or []:
        try:
            parts = urlsplit(origin.strip())
            netloc = parts.netloc if parts.scheme == "http" else ""
        except ValueError:  # `http://[`: not a URL, so not this server's page
            netloc = ""
        if not netloc or not host_allowed(netloc, policy.bind):
            raise Refusal(403, f"Origin {printable(origin[:200])} is another site; kg serve "
                          "answers pages of other sites nothing (cross-site request guard)")
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
                raise Refusal(403, f"{printable('; '.join(map(str, found)))}: this {kind} would "
                              "make the server contact another host (SERVICE/LOAD); restart "
                              "`kgprobe kg serve` with --allow-federation to allow that")
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


def _is_loopback(host: str) -> bool:
    return host == "localhost" or (_is_ip(host) and ipaddress.ip_address(host).is_loopback)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False
