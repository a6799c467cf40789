"""A served model's server is trusted to rank, nothing more (`models/served_client.py`,
`models/served_tokens.py`): fake OpenAI-compatible servers on 127.0.0.1 (threads, each
stopped when its `with` block ends, none running longer than a minute) answer as a hostile or
broken server would, and each test asserts what must hold:

* a redirect (302/307) to another host or port, for ``GET /models`` and for the ``POST`` of an
  echo, delivers no API key there: the redirect is refused in one line and the other server
  sees no request at all; a redirect to ``ftp://`` opens no connection;
* one deadline per request: a server dripping its headers or its body ends the request at
  ``timeout``, not at the server's pace;
* a cap on the answer's size (``max_answer``): a bigger answer is refused while it arrives;
* echoed log-probabilities that are NaN, infinite, positive, a list short of the tokens or
  offsets that do not increase are an error for the unit being scored: nothing of it is scored
  or written to the score cache, and once the server is fixed the same URL scores as a
  cache-free run does;
* malformed JSON (a list or a string from ``/models``, a bad ``top_logprobs``) is one line,
  exit 2, through the command line.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

from kgprobe.errors import ModelError
from kgprobe.models.score_cache import CachedScorer, ScoreCache
from kgprobe.models.served import PROBE, load_served
from kgprobe.models.served_client import ServedClient, parse_served

KEY_ENV = "KGPROBE_TEST_SERVED_KEY"
SECRET = "sk-served-secret-4242"
#: The longest any fake server keeps a connection open: a test of an unfixed client ends.
SERVER_LIMIT_S = 12.0


# --------------------------------------------------------------------------------------
# A fake OpenAI-compatible server
# --------------------------------------------------------------------------------------


def echo_logprobs(prompt: str) -> dict:
    """What an aligned server echoes for `prompt`: word-like tokens with their offsets, a
    log-probability each (None for the first), the token itself as the top alternative, and
    one generated token."""
    tokens = re.findall(r"\s*\S+", prompt) + [" x"]
    offsets, at = [], 0
    for tok in tokens:
        offsets.append(at)
        at += len(tok)
    values = [None] + [-(1 + (sum(map(ord, t)) + 7 * k) % 40) / 10 for k, t in
                       enumerate(tokens[1:], 1)]
    tops = [None] + [{t: v} for t, v in zip(tokens[1:], values[1:])]
    return {"tokens": tokens, "text_offset": offsets, "token_logprobs": values,
            "top_logprobs": tops}


class Fake:
    """What the fake server answers: `models` (the JSON of ``GET /v1/models``), `fault` (a
    change to an echo's logprobs, for every prompt but the alignment probe unless `everywhere`),
    `route(handler)` (answers a request itself when it returns True); every request's method,
    path and headers land in `seen`."""

    def __init__(self) -> None:
        self.models: object = {"data": [{"id": "fake"}]}
        self.fault: Callable[[dict], None] | None = None
        self.everywhere = False
        self.route: Callable[[BaseHTTPRequestHandler], bool] | None = None
        self.seen: list[tuple[str, str, dict]] = []

    def keys_seen(self) -> list[str]:
        return [h["authorization"] for _, _, h in self.seen if "authorization" in h]


def _handler(fake: Fake) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _json(self, value: object) -> None:
            body = json.dumps(value).encode()  # NaN and Infinity as a sloppy server sends them
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self, method: str) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake.seen.append((method, self.path, headers))
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            if fake.route is not None and fake.route(self):
                return
            if self.path.endswith("/models"):
                return self._json(fake.models)
            prompt = str(body.get("prompt", ""))
            lp = echo_logprobs(prompt)
            if fake.fault is not None and (fake.everywhere or prompt != PROBE):
                fake.fault(lp)
            self._json({"choices": [{"text": " x", "logprobs": lp}]})

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

    return Handler


@contextlib.contextmanager
def fake_server(host: str = "127.0.0.1") -> Iterator[tuple[str, Fake]]:
    """(base URL ``http://HOST:PORT/v1``, its `Fake`), served by threads until the block ends."""
    fake = Fake()
    httpd = ThreadingHTTPServer((host, 0), _handler(fake))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}/v1", fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@contextlib.contextmanager
def listener() -> Iterator[tuple[int, list[float]]]:
    """A bare 127.0.0.1 TCP port recording when each connection was accepted (an FTP client
    waits for a greeting, so it may send nothing: the connection itself is the evidence)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.05)
    accepted: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        end = time.monotonic() + SERVER_LIMIT_S
        while not stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(time.monotonic())
            conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(10)
        sock.close()


def redirect(code: int, location: str, method: str | None = None) -> Callable:
    """A route answering `code` with `location` (every request, or only `method`'s)."""
    def route(handler: BaseHTTPRequestHandler) -> bool:
        if method is not None and handler.command != method:
            return False
        handler.send_response(code)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    return route


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return f"key_env={KEY_ENV}"


def _load(url: str, settings: str = "") -> object:
    return load_served(f"openai:{url}#fake?retries=0&timeout=5{settings}")


def _refusal(url: str, settings: str) -> str | None:
    try:
        _load(url, settings)
    except ModelError as err:
        return str(err)
    return None


# --------------------------------------------------------------------------------------
# 1. Redirects carry no key
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("code, method, other_host", [
    (307, "GET", "127.0.0.1"),    # GET /models to another port
    (302, "GET", "127.0.0.2"),    # GET /models to another host
    (302, "POST", "127.0.0.1"),   # the echo's POST /completions
])
def test_a_redirect_to_another_origin_delivers_no_key(key, code, method, other_host):
    """The attack: urllib followed the redirect with every header, so the other server got
    ``Authorization: Bearer KEY``. Now the redirect is one line naming where it points, and the
    other server sees no request."""
    with fake_server() as (url, fake), fake_server(other_host) as (elsewhere, other):
        fake.route = redirect(code, f"{elsewhere}{'/models' if method == 'GET' else '/completions'}",
                              method)
        line = _refusal(url, "&" + key)
        assert other.keys_seen() == [], "the API key reached another server"
        assert other.seen == []
        assert fake.keys_seen() and set(fake.keys_seen()) == {f"Bearer {SECRET}"}
    assert line is not None and f"redirects to {elsewhere}" in line and f"HTTP {code}" in line
    assert SECRET not in line and "\n" not in line


def test_a_redirect_to_ftp_opens_no_connection(key):
    """The attack: urllib's FTP handler logged in to the redirect's target (``USER
    anonymous``). Now nothing connects there; the answer is one line."""
    with listener() as (port, accepted), fake_server() as (url, fake):
        fake.route = redirect(302, f"ftp://127.0.0.1:{port}/models")
        line = _refusal(url, "&" + key)
        time.sleep(0.2)  # a connection the client opened would have been accepted by now
        assert accepted == [], "the client connected to the ftp:// target"
    assert line is not None and f"redirects to ftp://127.0.0.1:{port}/models" in line


# --------------------------------------------------------------------------------------
# 5. One deadline per request
# --------------------------------------------------------------------------------------


def _drip(head: bytes, body_length: int, where: str) -> Callable:
    """A route that drips its answer, one byte every 0.3 s (each read well within any timeout),
    in the headers or the body, for at most SERVER_LIMIT_S."""
    def route(handler: BaseHTTPRequestHandler) -> bool:
        end = time.monotonic() + SERVER_LIMIT_S
        status = b"HTTP/1.1 200 OK\r\n"
        headers = (b"Content-Type: application/json\r\nContent-Length: "
                   + str(body_length).encode() + b"\r\n\r\n")
        try:
            handler.wfile.write(status if where == "headers" else status + headers)
            handler.wfile.flush()
            for byte in (headers + head if where == "headers" else head) * 1000:
                if time.monotonic() > end:
                    break
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(0.3)
        except OSError:
            pass
        handler.close_connection = True
        return True

    return route


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_dripping_server_is_cut_at_one_deadline(where):
    """The attack: ``timeout`` bounded each socket read, so a server sending a byte at a time
    held the request (and the run) as long as it liked. Now ``timeout=2`` ends it in about 2 s."""
    with fake_server() as (url, fake):
        fake.route = _drip(b'{"data": []}' + b" " * 100, 5000, where)
        client = ServedClient(parse_served(f"openai:{url}#fake?timeout=2&retries=0"), "m")
        t0 = time.monotonic()
        with pytest.raises(ModelError, match=r"no whole answer within timeout=2 s") as err:
            client.request("/models")
        took = time.monotonic() - t0
    assert 1.5 < took < 4.5, took
    assert "1 tries" in str(err.value)


def test_retries_each_get_their_own_deadline():
    """``retries=1``: two tries of 1.5 s and the 0.5 s backoff, not one per byte."""
    with fake_server() as (url, fake):
        fake.route = _drip(b" " * 200, 5000, "body")
        client = ServedClient(parse_served(f"openai:{url}#fake?timeout=1.5&retries=1"), "m")
        t0 = time.monotonic()
        with pytest.raises(ModelError, match="after 2 tries"):
            client.request("/models")
        took = time.monotonic() - t0
    assert 3.0 < took < 6.0, took
    assert len(fake.seen) == 2


# --------------------------------------------------------------------------------------
# 6. A cap on the answer's size
# --------------------------------------------------------------------------------------


def _big(size: int, announce: bool) -> Callable:
    """A route answering `size` bytes of a JSON string, its length announced or not (then the
    end is the connection's close)."""
    def route(handler: BaseHTTPRequestHandler) -> bool:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if announce:
            handler.send_header("Content-Length", str(size))
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            handler.wfile.write(b'"' + b"a" * (size - 2) + b'"')
        except OSError:
            pass  # the client hung up once it had read past its cap
        handler.close_connection = True
        return True

    return route


@pytest.mark.parametrize("announce", [True, False])
def test_an_answer_past_max_answer_is_refused(announce):
    """``max_answer=64K``: an answer of 1 MiB is refused, whether its Content-Length says so or
    it only keeps coming; the default cap (16 MiB) refuses 17 MiB the same way."""
    with fake_server() as (url, fake):
        fake.route = _big(1 << 20, announce)
        client = ServedClient(parse_served(f"openai:{url}#fake?max_answer=64K&retries=0"), "m")
        with pytest.raises(ModelError, match=r"answered more than max_answer=64\.0 KiB"):
            client.request("/models")
        fake.route = _big(17 << 20, announce)
        client = ServedClient(parse_served(f"openai:{url}#fake?retries=0"), "m")
        with pytest.raises(ModelError, match=r"more than max_answer=16\.0 MiB"):
            client.request("/models")


def test_max_answer_must_be_a_size():
    for bad in ("0", "lots", "-1M"):
        with pytest.raises(ModelError, match="max_answer=.* is not a size"):
            parse_served(f"openai:http://127.0.0.1:9/v1#m?max_answer={bad}")
    assert parse_served("openai:http://127.0.0.1:9/v1#m?max_answer=2M").max_answer == 2 << 20


# --------------------------------------------------------------------------------------
# 7. Echoed log-probabilities are checked; an invalid echo is never scored or cached
# --------------------------------------------------------------------------------------


def _set(field: str, index: int, value: object) -> Callable[[dict], None]:
    def fault(lp: dict) -> None:
        lp[field][index] = value
    return fault


FAULTS = {
    "nan": _set("token_logprobs", 2, math.nan),
    "inf": _set("token_logprobs", 2, math.inf),
    "positive": _set("token_logprobs", 2, 50.0),
    "null inside": _set("token_logprobs", 2, None),
    "two short": lambda lp: lp.update(token_logprobs=lp["token_logprobs"][:-2]),
    "offsets all 0": lambda lp: lp.update(text_offset=[0] * len(lp["text_offset"])),
    "offsets back": _set("text_offset", 3, 1),
}

PROMPTS = ["Lionel Messi is a soccer [MASK] .", "Paris is the capital of [MASK] ."]
CANDIDATES = ["player", "France", "piece of music"]


@pytest.mark.parametrize("name", list(FAULTS))
def test_an_invalid_echo_is_an_error_and_never_cached(name, tmp_path):
    """The attack: the numbers were scored as they came (a NaN row even went into the score
    cache, so the same URL kept the wrong ranking after the server was fixed). Now the scoring
    call fails with one line, nothing is cached, and after the fix the cached run equals a
    cache-free one."""
    cache = ScoreCache(tmp_path / "cache")
    with fake_server() as (url, fake):
        model = _load(url)
        fake.fault = FAULTS[name]
        scorer = CachedScorer(model.scorer(), model, cache)
        with pytest.raises(ModelError, match="echoed invalid log-probabilities") as err:
            scorer.score(PROMPTS, CANDIDATES)
        assert "\n" not in str(err.value) and "nothing of it was scored or cached" in str(err.value)
        assert cache.stats().rows == 0
        fake.fault = None  # the server is fixed
        cached = scorer.score(PROMPTS, CANDIDATES)
        assert cache.stats().rows == len(PROMPTS)
        fresh = _load(url).scorer().score(PROMPTS, CANDIDATES)
    assert np.isfinite(cached).all() and (cached <= 0).all()
    assert np.array_equal(cached, fresh)


def test_a_valid_echo_still_scores():
    """The checks pass a well-formed echo: a token of no text (a piece of a character split
    over tokens) may share its offset with the next, and a log-probability of exactly 0 is one."""
    from kgprobe.models.served_tokens import checked_echo

    echo = checked_echo({"tokens": ["A", "", " b", " c"], "text_offset": [0, 1, 1, 3],
                         "token_logprobs": [None, -0.5, 0.0, -2], "top_logprobs": None})
    assert echo.offsets == [0, 1, 1, 3] and echo.top == [None] * 4


def test_models_without_a_list_is_one_line():
    """``{"data": "fake"}`` was read as a list of letters (no model, no complaint)."""
    with fake_server() as (url, fake):
        fake.models = {"data": "fake"}
        line = _refusal(url, "")
    assert line is not None and "/models answered no list of models (its data is a str)" in line


# --------------------------------------------------------------------------------------
# Malformed JSON through the command line: one line, exit 2
# --------------------------------------------------------------------------------------


STUDY = ("study", "memorization", "--ontology", "bundled", "--task", "domain", "--template", "0",
         "--limit", "2", "--candidates", "3", "--threads", "1")


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KGPROBE_STORE=str(tmp / "store"), KGPROBE_CACHE_DIR=str(tmp / "cache"),
               OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "kgprobe.cli", *args], cwd=tmp, env=env, check=False,
                          capture_output=True, text=True, timeout=300)


def _bad_top(lp: dict) -> None:
    lp["top_logprobs"] = [5] * len(lp["tokens"])


@pytest.mark.parametrize("case", ["models list", "models string", "bad top_logprobs", "nan"])
def test_malformed_served_json_is_one_line_through_the_cli(case, tmp_path):
    """A list or a string from ``/models`` and ``top_logprobs`` of numbers ended in an
    AttributeError traceback; a NaN among the echoed numbers ran the study to exit 0. Each is
    one line, exit 2, no results and no cached rows."""
    with fake_server() as (url, fake):
        if case == "models list":
            fake.models = [{"id": "fake"}]
        elif case == "models string":
            fake.models = "fake"
        elif case == "bad top_logprobs":
            fake.fault, fake.everywhere = _bad_top, True
        else:
            fake.fault = FAULTS["nan"]
        r = _cli(tmp_path, *STUDY, "--model", f"openai:{url}#fake?retries=0&timeout=30",
                 "--out", str(tmp_path / "out"))
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    # one error line, the last; the study's progress display may stand above it
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert "Traceback" not in r.stderr and len(errors) == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == errors[0].strip()
    assert errors[0].startswith("kgprobe: error: model 'openai:"), errors
    want = {"models list": "answered a JSON list, not an object",
            "models string": "answered a JSON str, not an object",
            "bad top_logprobs": "top_logprobs[0] is 5,",
            "nan": "token_logprobs[2] is nan"}[case]
    assert want in errors[0], errors
    assert not (tmp_path / "out" / "results.csv").exists()
    assert ScoreCache(tmp_path / "cache").stats().rows == 0
