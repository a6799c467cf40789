"""Served models: ``--model openai:URL#MODEL`` ranks candidates through an OpenAI-compatible server.

A causal LM behind a server (llama.cpp's, vLLM, …) scores a cloze the way `models.cloze` says
an in-process decoder does: log P(candidate + text after the slot | text before it). The
completions API gives exactly that when it *echoes* the prompt with its log-probabilities
(``echo=true, logprobs=1, max_tokens=1``): each prompt token comes back with its text offset
and log P(token | tokens before it). The candidate's tokens are the echoed tokens from the
character where the candidate starts (where the text before the slot ends, its joining space
included) to where it ends; the suffix's tokens follow. So no tokenizer is needed on this side:
the server's own tokenizer cuts the text, and the offsets say which pieces are whose.

The name: ``openai:http://HOST:PORT/v1#MODEL`` (``#MODEL`` may be left out when the server
serves one model), optionally followed by ``?key=value&…`` settings after the model:
``key_env`` (the environment variable holding the API key; default: the variable named by
``KGPROBE_API_KEY_ENV``), ``start`` (a start text, see below), ``rev`` (a revision for the score
cache), ``concurrency`` (requests in flight, default 4), ``timeout`` (seconds per request,
default 60) and ``retries`` (default 3, exponential backoff, on connection errors and 429/502/
503/504). The key is read from the environment at each run and never written anywhere.

The alignment check (why it exists): llama-cpp-python's server (0.3.x) pairs echoed token *i*
with the distribution computed *at* token *i* (which predicts token *i + 1*) unless the prompt
began with a BOS token that it strips — so for a model without an automatic BOS (SmolLM2) every
echoed log-probability is the probability of the token *after* it being that token: " player"
after "Lionel Messi is a soccer" comes back at −13, with " who" (the likely word after
"player") as the top alternative. Before any scoring the served model echoes a predictable text
and counts, per position, whether the top alternative is the echoed token itself (aligned) or
the next one (shifted). A shifted server is corrected by a start text the server strips (its
BOS token; given as ``start=`` or found among the common BOS spellings) and checked again; a
server that still disagrees, or that returns no prompt log-probabilities at all, is one
`ModelError` line naming the URL and the servers known to return them.

Only ranking is served: what needs weights or hidden states (slot distributions over a
vocabulary, pseudoword vectors, features, gradients) is one `ModelError` line.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Sequence

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.cloze import AUTO, RULE, SUFFIX_MODES, uses_suffix
from kgprobe.ontology.verbalize import MASK

__all__ = ["PREFIX", "ServedModel", "ServedName", "ServedScorer", "parse_served"]

PREFIX = "openai:"
#: What a server must offer, said in every "cannot rank" line.
KNOWN = ("llama.cpp's server (llama-cpp-python `python -m llama_cpp.server --logits_all true`) "
         "and vLLM return prompt log-probabilities with echo")
#: BOS spellings tried when the server's echo is shifted and no ``start=`` is given.
START_GUESSES = ("<|im_start|>", "<|endoftext|>", "<s>", "<bos>", "<|begin_of_text|>")
#: A text even a small model continues predictably: the alignment check's probe.
PROBE = ("Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday. "
         "January, February, March, April, May, June, July, August, September, October")
_SETTINGS = ("key_env", "start", "rev", "concurrency", "timeout", "retries")
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


def is_served(name: str) -> bool:
    return str(name).startswith(PREFIX)


def _bad(name: str, why: str) -> ModelError:
    return ModelError(f"model '{name}': {why}; write openai:http://HOST:PORT/v1#MODEL"
                      f"[?key_env=NAME&start=TEXT&rev=R&concurrency=N&timeout=S&retries=N]")


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
                      settings.get("rev") or None, **numbers)


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


# --------------------------------------------------------------------------------------
# Echoed log-probabilities and the alignment check
# --------------------------------------------------------------------------------------


@dataclass
class Echo:
    """One echoed prompt: per token its text, text offset, log-probability and top alternative."""

    tokens: list[str]
    offsets: list[int]
    logprobs: list[float | None]
    top: list[str | None]


class EchoReader:
    """Echoes texts through ``/completions`` and reads back their token log-probabilities."""

    def __init__(self, client: ServedClient, model: str, start: str = ""):
        self.client = client
        self.model = model
        self.start = start

    def echo(self, text: str) -> Echo:
        body = {"model": self.model, "prompt": self.start + text, "echo": True, "logprobs": 1,
                "max_tokens": 1, "temperature": 0}
        answer = self.client.request("/completions", body)
        try:
            lp = answer["choices"][0]["logprobs"]
            tokens, offsets, values = lp["tokens"], lp["text_offset"], lp["token_logprobs"]
            tops = lp.get("top_logprobs") or [None] * len(tokens)
        except (KeyError, IndexError, TypeError):
            raise no_logprobs(self.client.label, self.client.spec.url,
                              "its completions answer has no echoed logprobs") from None
        if not tokens or all(v is None for v in values):
            raise no_logprobs(self.client.label, self.client.spec.url,
                              "it echoed no log-probabilities")
        # Offsets count from the echoed text: from after the start text where the server
        # stripped it (llama.cpp's BOS), from the start text where it echoed it back.
        shift = len(self.start) if self.start and tokens[0] and self.start.startswith(tokens[0]) else 0
        top = [max(t, key=t.get) if t else None for t in tops]
        return Echo(list(tokens), [o - shift for o in offsets], list(values), top)

    def alignment(self) -> tuple[int, int]:
        """(aligned votes, shifted votes) over the probe's positions: the top alternative at
        echoed token *i* is token *i* itself where the server is aligned, token *i + 1* where
        it reports each position's own distribution (the llama-cpp-python BOS quirk)."""
        echo = self.echo(PROBE)
        aligned = shifted = 0
        for i in range(1, len(echo.tokens) - 1):
            if echo.top[i] is None or echo.offsets[i] >= len(PROBE):
                continue
            aligned += echo.top[i] == echo.tokens[i]
            shifted += echo.top[i] == echo.tokens[i + 1]
        return aligned, shifted


def aligned_reader(client: ServedClient, model: str, start: str | None) -> EchoReader:
    """A reader whose echoed log-probabilities are checked to be log P(token | tokens before)."""
    tries = [start] if start else [""] + list(START_GUESSES)
    seen = []
    for text in tries:
        reader = EchoReader(client, model, text)
        if text and not _stripped(reader, text):
            continue
        aligned, shifted = reader.alignment()
        seen.append(f"start {text!r}: {aligned} aligned / {shifted} shifted")
        if aligned >= 5 and aligned > 2 * shifted:
            return reader
    raise ModelError(f"model '{client.label}': the server at {client.spec.url} echoes "
                     f"log-probabilities that do not line up with their tokens "
                     f"({'; '.join(seen) or 'no start text stripped'}); give the server's BOS "
                     f"token as start=TEXT, or use a server that echoes aligned log-probabilities "
                     f"({KNOWN})")


def _stripped(reader: EchoReader, text: str) -> bool:
    """Whether the server drops `text` from the echo (so it read it as its BOS token)."""
    echo = reader.echo("Hello")
    return not any(text in tok for tok in echo.tokens)


# --------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------


def cloze_text(prompt: str, candidate: str, with_suffix: bool) -> tuple[str, int, int]:
    """(text, candidate start, candidate end): the prompt with `candidate` in its slot, spaced as
    the in-process encoder spaces it (`models.encoding`: pieces stripped, one space where the
    prompt had one), and the character span the candidate's tokens start in and end at."""
    before, after = prompt.split(MASK)
    head = before.strip()
    joiner = " " if head and before[-1:].isspace() else ""
    body = " ".join(str(candidate).split())
    text = head + joiner + body
    end = len(text)
    if with_suffix and after.strip():
        text += (" " if after[:1].isspace() else "") + after.strip()
    return text, len(head), end


def pool(values: Sequence[float], pooling: str) -> float:
    if pooling == "sum":
        return float(sum(values))
    if pooling == "mean":
        return float(sum(values) / len(values))
    if pooling == "max":
        return float(max(values))
    if pooling == "first":
        return float(values[0])
    raise ModelError(f"unknown pooling {pooling!r}; use mean, max, first or sum")


class ServedScorer:
    """A `Scorer` over a server's echoed prompt log-probabilities (see the module docstring)."""

    share_prefix = True  # the server's own prompt cache; part of the score cache's key shape

    def __init__(self, loaded: "ServedModel", *, pooling: str = "sum",
                 include_suffix: bool | str = AUTO):
        if include_suffix not in SUFFIX_MODES or not isinstance(include_suffix, (bool, str)):
            raise ModelError(f"include_suffix={include_suffix!r}; use 'auto', True or False")
        self.loaded = loaded
        self.pooling = pooling
        self.include_suffix = include_suffix
        self.suffix_rule = RULE if include_suffix == AUTO else None
        #: Requests sent (each one echoed prompt).
        self.stats = {"requests": 0}

    @property
    def name(self) -> str:
        return self.loaded.name

    def score(self, prompts: Sequence[str], candidates: Sequence[str], *, pseudowords=None,
              batch_size: int = 32) -> np.ndarray:
        """Scores [len(prompts), len(candidates)], float64; higher is better."""
        if pseudowords is not None:
            raise ModelError(f"model '{self.name}' is served: it takes no pseudoword vectors; "
                             "use an in-process model")
        if len(candidates) == 0:
            raise ModelError(f"no candidates to rank for {self.name}; give at least one")
        jobs = {}
        for i, prompt in enumerate(prompts):
            if prompt.count(MASK) != 1:
                raise ModelError(f"prompt must contain exactly one {MASK} slot: {prompt!r}; "
                                 "fix the template")
            with_suffix = uses_suffix(self.include_suffix, prompt)
            for j, cand in enumerate(candidates):
                jobs[(i, j)] = cloze_text(prompt, cand, with_suffix)
        reader = self.loaded.reader()
        texts = list(dict.fromkeys(t for t, _, _ in jobs.values()))
        with ThreadPoolExecutor(max_workers=self.loaded.spec.concurrency) as pool_:
            echoes = dict(zip(texts, pool_.map(reader.echo, texts)))
        self.stats["requests"] += len(texts)
        out = np.zeros((len(prompts), len(candidates)), dtype=np.float64)
        for (i, j), (text, start, end) in jobs.items():
            out[i, j] = self._score_one(echoes[text], text, start, end)
        return out

    def _score_one(self, echo: Echo, text: str, start: int, end: int) -> float:
        cand, suffix = [], []
        for k, (offset, value) in enumerate(zip(echo.offsets, echo.logprobs)):
            stop = echo.offsets[k + 1] if k + 1 < len(echo.offsets) else len(text)
            if offset >= len(text) or stop <= start:
                continue  # the generated token, or a token of the text before the slot
            if value is None:
                raise ModelError(f"model '{self.name}': the server gave no log-probability for "
                                 f"the first token of {text!r}; put text before the slot")
            (cand if offset < end else suffix).append(float(value))
        if not cand:
            raise ModelError(f"model '{self.name}': no echoed token starts inside the candidate "
                             f"of {text!r}; the server's offsets do not match the text")
        return pool(cand, self.pooling) + float(sum(suffix))


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class ServedModel:
    """A model behind an OpenAI-compatible server: the `LanguageModel` calls a ranking study
    makes (`scorer`, `trained_on`); the rest need weights and say so in one line."""

    name: str
    spec: ServedName
    server_model: str
    client: ServedClient
    info: dict = field(default_factory=dict)
    _reader: EchoReader | None = None

    kind: ClassVar[str] = "served"
    fills_masks: ClassVar[bool] = False
    answers_next_token: ClassVar[bool] = False
    default_pooling: ClassVar[str] = "sum"
    feature_pooling: ClassVar[str] = "last"
    pseudoword_anchor: ClassVar[str] = "mean"
    caches_scores: ClassVar[bool] = True
    model = None
    tokenizer = None
    device = "server"

    @property
    def source(self) -> str:
        return f"{self.spec.url}#{self.server_model}"

    def reader(self) -> EchoReader:
        """The echo reader, its alignment checked on first use (one probe, once per model)."""
        if self._reader is None:
            self._reader = aligned_reader(self.client, self.server_model, self.spec.start)
            self.info["start"] = self._reader.start
        return self._reader

    def cache_identity(self) -> dict:
        """The score cache's model key: the server's model id and revision (the endpoint too
        when no revision is given), never the API key."""
        return {"served": self.server_model, "revision": self.spec.rev,
                "endpoint": None if self.spec.rev else self.spec.url,
                "start": self.reader().start, "kind": self.kind}

    def trained_on(self, answers: Iterable) -> "ServedModel":
        return self

    def scorer(self, *, masks: str = "multi", pooling: str | None = None,
               include_suffix: bool | str = AUTO, share_prefix: bool = True) -> ServedScorer:
        return ServedScorer(self, pooling=pooling or self.default_pooling,
                            include_suffix=include_suffix)

    def _unsupported(self, what: str) -> ModelError:
        return ModelError(f"model '{self.name}' is served and ranks candidates only; {what} "
                          "needs an in-process model (a preset, .gguf file or model directory)")

    def slot_distribution(self, vocabulary: Any, *, batch_size: int = 32) -> Any:
        raise self._unsupported("a slot distribution over a vocabulary")

    def next_token_logits(self, rows: Any) -> Any:
        raise self._unsupported("next-token logits")

    def letter_scores(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("multiple-choice letter scores")

    def score_segments(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("segment log-probabilities")

    def features(self, *args: Any, **kwargs: Any) -> Any:
        raise self._unsupported("hidden-state features")

    def input_embeddings(self) -> Any:
        raise self._unsupported("pseudowords (input embeddings)")


def load_served(name: str) -> ServedModel:
    """Connect to the server a served name points at and pick its model (`/models`)."""
    spec = parse_served(name)
    client = ServedClient(spec, name)
    t0 = time.perf_counter()
    listed = client.request("/models")
    ids = [m.get("id") for m in listed.get("data", []) if isinstance(m, dict)]
    model = spec.model
    if model is None:
        if len(ids) != 1:
            raise ModelError(f"model '{name}': the server serves {len(ids)} models "
                             f"({', '.join(map(str, ids)) or 'none'}); name one as #MODEL")
        model = ids[0]
    elif ids and model not in ids:
        raise ModelError(f"model '{name}': the server at {spec.url} does not serve '{model}' "
                         f"(it serves {', '.join(map(str, ids))}); name one of them after #")
    return ServedModel(name=name, spec=spec, server_model=model, client=client,
                       info={"seconds": round(time.perf_counter() - t0, 3)})
