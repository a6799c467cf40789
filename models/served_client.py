"""The client side of served models (`models.served`): the ``openai:URL#MODEL?settings`` name
and JSON over HTTP with a timeout per request, bounded retries with exponential backoff, and the
API key read from the environment at each run (never stored).

Light on purpose (standard library only): `models.names` checks a served name's form with it
before anything heavy is imported.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from kgprobe.errors import ModelError

__all__ = ["KNOWN", "PREFIX", "ServedClient", "ServedName", "is_served", "no_logprobs",
           "parse_served", "with_settings"]

PREFIX = "openai:"
#: What a server must offer, said in every "cannot rank" line.
KNOWN = ("llama.cpp's server (llama-cpp-python `python -m llama_cpp.server --logits_all true`) "
         "and vLLM return prompt log-probabilities with echo")
_SETTINGS = ("key_env", "start", "rev", "concurrency", "timeout", "retries", "tokenizer")
_RETRY_STATUS = (429, 502, 503, 504)


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


def is_served(name: str) -> bool:
    return str(name).startswith(PREFIX)


def _bad(name: str, why: str) -> ModelError:
    return ModelError(f"model '{name}': {why}; write openai:http://HOST:PORT/v1#MODEL"
                      f"[?key_env=NAME&start=TEXT&rev=R&concurrency=N&timeout=S&retries=N"
                      f"&tokenizer=ID]")


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
    if numbers["concurrency"] < 1 or numbers["timeout"] <= 0 or numbers["retries"] < 0:
        raise _bad(name, "concurrency must be ≥ 1, timeout > 0, retries ≥ 0")
    key_env = settings.get("key_env") or os.environ.get("KGPROBE_API_KEY_ENV") or None
    return ServedName(url.rstrip("/"), model or None, key_env, settings.get("start") or None,
                      settings.get("rev") or None, **numbers,
                      tokenizer=settings.get("tokenizer") or None)


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
# The client: bounded retries with backoff, a timeout per request, the key from the environment
# --------------------------------------------------------------------------------------


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
        """The JSON answer of GET (no `body`) or POST `path`; `ModelError` after the retries."""
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = json.dumps(body).encode() if body is not None else None
        url = self.spec.url + path
        for attempt in range(self.spec.retries + 1):
            req = urllib.request.Request(url, data=data, headers=headers,
                                         method="POST" if data is not None else "GET")
            try:
                with urllib.request.urlopen(req, timeout=self.spec.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as err:
                text = err.read().decode("utf-8", "replace")
                if err.code not in _RETRY_STATUS or attempt == self.spec.retries:
                    raise self._http_error(path, err.code, text) from None
                why = f"HTTP {err.code}"
            except (urllib.error.URLError, OSError, TimeoutError) as err:
                why = str(getattr(err, "reason", err))
                if attempt == self.spec.retries:
                    raise ModelError(f"model '{self.label}': cannot reach {url} ({why}) after "
                                     f"{attempt + 1} tries; start the server or fix the URL") from None
            except json.JSONDecodeError:
                raise ModelError(f"model '{self.label}': {url} answered something that is not "
                                 "JSON; is it an OpenAI-compatible /v1 URL?") from None
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise AssertionError(why)  # unreachable: the last attempt returns or raises

    def _http_error(self, path: str, code: int, text: str) -> ModelError:
        try:  # OpenAI's error shape: {"error": {"message": ...}}
            text = str(json.loads(text)["error"]["message"])
        except (ValueError, KeyError, TypeError):
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
