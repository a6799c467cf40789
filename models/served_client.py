"""The client side of served models (`models.served`): the ``openai:URL#MODEL?settings`` name
and JSON over HTTP with bounded retries with exponential backoff, and the API key read from the
environment at each run (never stored).

The server is trusted to rank, not with anything else, so each request is bounded:

* **no redirect is followed.** A redirect (HTTP 3xx) is one line naming where it points. urllib
  would follow it with every header, the ``Authorization: Bearer`` key included, to any host,
  and even to ``ftp://``; refusing it is the one way the key never leaves the origin the user
  named (http(s) only, checked by `parse_served`), and a server that moved is named by the user;
* **one deadline per request** (``timeout``): connecting, the headers and the whole body. A
  socket timeout alone is per read, so a server dripping a byte at a time held a request
  without end; a watchdog cuts the connection at the deadline;
* **a cap on the answer's size** (``max_answer``, default 16 MiB; an echo of a long prompt is
  a few hundred KB): checked against ``Content-Length`` first, then while reading, so a huge
  answer never sits in memory;
* **a JSON object or one line:** an answer that is not JSON, or JSON that is not an object,
  names the URL (`models.served` checks the fields it reads).

Light on purpose (standard library only): `models.names` checks a served name's form with it
before anything heavy is imported.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from kgprobe.errors import KgprobeError, ModelError
from kgprobe.guard import human, parse_size

__all__ = ["KNOWN", "PREFIX", "ServedClient", "ServedName", "is_served", "no_logprobs",
           "parse_served", "with_settings"]

PREFIX = "openai:"
#: What a server must offer, said in every "cannot rank" line.
KNOWN = ("llama.cpp's server (llama-cpp-python `python -m llama_cpp.server --logits_all true`) "
         "and vLLM return prompt log-probabilities with echo")
_SETTINGS = ("key_env", "start", "rev", "concurrency", "timeout", "retries", "tokenizer",
             "max_answer")
_RETRY_STATUS = (429, 502, 503, 504)
#: The largest answer read (``max_answer``): an echoed prompt of 4,000 tokens is under 1 MiB.
MAX_ANSWER = 16 << 20
#: What is read of an error answer: its message is cut to 200 characters anyway.
_ERROR_BODY = 64 << 10
_CHUNK = 1 << 16


@dataclass(frozen=True)
class ServedName:
    """The parts of an ``openai:URL#MODEL?settings`` model name."""

    url: str
    model: str | None
    key_env: str | None = None
    start: str | None = None
    rev: str | None = None
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 3
    tokenizer: str | None = None  # an HF id or directory; None: the server's own offsets
    max_answer: int = MAX_ANSWER  # bytes


def is_served(name: str) -> bool:
    return str(name).startswith(PREFIX)


def _bad(name: str, why: str) -> ModelError:
    return ModelError(f"model '{name}': {why}; write openai:http://HOST:PORT/v1#MODEL"
                      f"[?key_env=NAME&start=TEXT&rev=R&concurrency=N&timeout=S&retries=N"
                      f"&tokenizer=ID&max_answer=SIZE]")


def parse_served(name: str) -> ServedName:
    """Parse and check a served model name (no network): one `ModelError` line when malformed."""
    rest = name[len(PREFIX):]
    url, _, tail = rest.partition("#")
    model, _, query = tail.partition("?")
    if not tail and "?" in url:
        url, _, query = url.partition("?")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _bad(name, f"'{url}' is not an http(s) URL")
    settings = dict(urllib.parse.parse_qsl(query, keep_blank_values=True)) if query else {}
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise _bad(name, f"unknown setting {unknown[0]!r} (known: {', '.join(_SETTINGS)})")
    try:
        numbers = {"concurrency": int(settings.get("concurrency", 4)),
                   "timeout": float(settings.get("timeout", 60)),
                   "retries": int(settings.get("retries", 3))}
    except ValueError:
        raise _bad(name, "concurrency, timeout and retries take numbers") from None
    if not (numbers["concurrency"] >= 1 and 0 < numbers["timeout"] < float("inf")
            and numbers["retries"] >= 0):
        raise _bad(name, "concurrency must be ≥ 1, timeout > 0, retries ≥ 0")
    key_env = settings.get("key_env") or os.environ.get("KGPROBE_API_KEY_ENV") or None
    return ServedName(url.rstrip("/"), model or None, key_env, settings.get("start") or None,
                      settings.get("rev") or None, **numbers,
                      tokenizer=settings.get("tokenizer") or None,
                      max_answer=_max_answer(name, settings.get("max_answer")))


def _max_answer(name: str, text: str | None) -> int:
    """``max_answer=SIZE`` (16M, 512K, bytes): a size, never off, since the cap is what keeps a
    hostile server from filling memory."""
    if text is None:
        return MAX_ANSWER
    try:
        size = parse_size(text, "max_answer")
    except KgprobeError:  # said again below, in this name's words
        size = None
    if not size:
        raise _bad(name, f"max_answer={text} is not a size; give e.g. 16M or 512K")
    return size


def with_settings(name: str, settings: dict[str, str]) -> str:
    """`name` with `settings` set in its ``?key=value`` part (``--api-key-env``,
    ``--tokenizer``); a setting the name already gives differently is one line."""
    parse_served(name)
    head, sep, query = name.partition("?")
    given = dict(urllib.parse.parse_qsl(query, keep_blank_values=True)) if sep else {}
    for key, value in settings.items():
        if given.get(key, value) != value:
            raise ModelError(f"model '{name}': it sets {key}={given[key]} and an option sets "
                             f"{key}={value}; give it once")
        given[key] = value
    return head + "?" + urllib.parse.urlencode(given, safe="/:")


# --------------------------------------------------------------------------------------
# The client: bounded retries with backoff, one deadline per request, a cap on the answer,
# no redirects, the key from the environment
# --------------------------------------------------------------------------------------


class _Retry(Exception):
    """One try failed in a way another try may not (a network error, a busy server): `final`
    is what is raised when no try is left."""

    def __init__(self, why: str, final: ModelError | None = None):
        super().__init__(why)
        self.final = final


class _Watchdog:
    """One request's deadline: at `seconds` it shuts down every connection the request opened,
    which wakes a read blocked in the TLS handshake, the headers or the body (a socket timeout
    bounds only each read). It holds a duplicate of each socket (TLS takes the original's
    descriptor over, and urllib drops its reference once the headers are read), closed by
    `stop`; a socket opened after it fired is shut at once."""

    def __init__(self, seconds: float):
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        copy = sock.dup()
        with self._lock:
            self._socks.append(copy)
            fired = self._fired
        if fired:
            _shut(copy)

    def _fire(self) -> None:
        with self._lock:
            self._fired = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)

    def stop(self) -> None:
        self._timer.cancel()
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Watched:
    """A urllib handler whose connections give each socket they open to the request's
    `_Watchdog`."""

    def __init__(self, watchdog: _Watchdog, **kwargs: Any):
        super().__init__(**kwargs)
        self.watchdog = watchdog

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        watchdog = self.watchdog

        def connection(host: str, **args: Any) -> Any:
            conn = http_class(host, **args)
            create = conn._create_connection

            def watched(*a: Any, **kw: Any) -> socket.socket:
                sock = create(*a, **kw)
                watchdog.add(sock)
                return sock

            conn._create_connection = watched
            return conn

        return super().do_open(connection, req, **kwargs)


class _WatchedHTTP(_Watched, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPS(_Watched, urllib.request.HTTPSHandler):
    pass


def _opener(watchdog: _Watchdog) -> urllib.request.OpenerDirector:
    """urllib without its redirect handler (a 3xx answer is an HTTPError here, see the module
    docstring), its sockets watched; proxies from the environment as before."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), _WatchedHTTP(watchdog),
                    _WatchedHTTPS(watchdog), urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:200]


class ServedClient:
    """JSON over HTTP to one server, with retries on what a busy server answers."""

    def __init__(self, spec: ServedName, label: str):
        self.spec = spec
        self.label = label
        self._key: str | None = None
        if spec.key_env:
            self._key = os.environ.get(spec.key_env)
            if not self._key:
                raise ModelError(f"model '{label}': the API key variable {spec.key_env} is not "
                                 f"set; export {spec.key_env}=KEY (or drop key_env)")

    def request(self, path: str, body: dict | None = None) -> dict:
        """The JSON object answering GET (no `body`) or POST `path`; `ModelError` after the
        retries. Each try has one deadline (``timeout``) and reads at most ``max_answer``
        bytes, so one request takes at most (retries + 1) × timeout plus the backoff."""
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = json.dumps(body).encode() if body is not None else None
        url = self.spec.url + path
        for attempt in range(self.spec.retries + 1):
            try:
                return self._json(url, self._try(url, path, data, headers))
            except _Retry as err:
                if attempt == self.spec.retries:
                    raise err.final or ModelError(
                        f"model '{self.label}': cannot reach {url} ({err}) after {attempt + 1} "
                        "tries; start the server or fix the URL") from None
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise AssertionError(url)  # unreachable: the last attempt returns or raises

    def _try(self, url: str, path: str, data: bytes | None, headers: dict) -> bytes:
        """One try: the answer's body, read whole before the deadline."""
        req = urllib.request.Request(url, data=data, headers=headers,
                                     method="POST" if data is not None else "GET")
        deadline = time.monotonic() + self.spec.timeout
        watchdog = _Watchdog(self.spec.timeout)
        try:
            with _opener(watchdog).open(req, timeout=self.spec.timeout) as resp:
                return self._read(resp, url, deadline)
        except urllib.error.HTTPError as err:
            raise self._refused(err, path) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            if time.monotonic() >= deadline:
                raise _Retry(f"no whole answer within timeout={self.spec.timeout:g} s") from None
            raise _Retry(_one_line(getattr(err, "reason", err))) from None
        finally:
            watchdog.stop()

    def _read(self, resp: Any, url: str, deadline: float) -> bytes:
        """The body, chunk by chunk, the total checked against ``max_answer`` (the announced
        length first); a body cut by the watchdog is a timeout, never a short answer."""
        cap = self.spec.max_answer
        announced = str(resp.headers.get("Content-Length") or "").strip()
        if announced.isdigit() and int(announced) > cap:
            raise self._too_large(url, f"{human(int(announced))} announced")
        parts, size = [], 0
        while True:
            chunk = resp.read1(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                raise self._too_large(url, "more than that arrived")
            parts.append(chunk)
        if time.monotonic() >= deadline:
            raise TimeoutError("the deadline passed")
        return b"".join(parts)

    def _too_large(self, url: str, what: str) -> ModelError:
        return ModelError(f"model '{self.label}': {url} answered more than max_answer="
                          f"{human(self.spec.max_answer)} ({what}); nothing of it was used; "
                          "raise max_answer=SIZE in the model name if the server is trusted")

    def _json(self, url: str, raw: bytes) -> dict:
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            raise ModelError(f"model '{self.label}': {url} answered something that is not "
                             "JSON; is it an OpenAI-compatible /v1 URL?") from None
        if not isinstance(answer, dict):
            raise ModelError(f"model '{self.label}': {url} answered a JSON "
                             f"{type(answer).__name__}, not an object; is it an "
                             "OpenAI-compatible /v1 URL?")
        return answer

    def _refused(self, err: urllib.error.HTTPError, path: str) -> Exception:
        """An HTTP error answer: a redirect is refused (one line), a busy server retried."""
        if 300 <= err.code < 400:
            err.close()
            where = _one_line(err.headers.get("Location", "")) or "nowhere"
            return ModelError(f"model '{self.label}': {self.spec.url}{path} redirects to {where} "
                              f"(HTTP {err.code}); kgprobe follows no redirect, so the API key "
                              "is never sent anywhere else: if you trust that address, give it "
                              "as the URL")
        try:
            text = err.read(_ERROR_BODY).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            text = ""
        finally:
            err.close()
        final = self._http_error(path, err.code, text)
        if err.code not in _RETRY_STATUS:
            return final
        return _Retry(f"HTTP {err.code}", final)

    def _http_error(self, path: str, code: int, text: str) -> ModelError:
        try:  # OpenAI's error shape: {"error": {"message": ...}}
            text = str(json.loads(text)["error"]["message"])
        except (ValueError, KeyError, TypeError, RecursionError):
            pass
        message = " ".join(text.split())[:200]
        if "logprob" in text.lower() or "logits_all" in text:
            return no_logprobs(self.label, self.spec.url, f"it answered HTTP {code}: {message}")
        if code in (401, 403):
            return ModelError(f"model '{self.label}': {self.spec.url} refused the request "
                              f"(HTTP {code}); give the API key with key_env=NAME")
        return ModelError(f"model '{self.label}': {self.spec.url}{path} answered HTTP {code}: "
                          f"{message}")


def no_logprobs(label: str, url: str, why: str) -> ModelError:
    return ModelError(f"model '{label}': the server at {url} cannot return prompt "
                      f"log-probabilities ({why}); rank with a server that can: {KNOWN}")
