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
the whole answer included, default 60), ``retries`` (default 3, exponential backoff, on
connection errors, timeouts and 429/502/503/504) and ``max_answer`` (the largest answer read,
default 16M). The key is read from the environment at each run and never written anywhere, and
sent to no address but the URL's: `models.served_client` follows no redirect. Every echo is
checked (`served_tokens.checked_echo`) before any of its numbers is scored.

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

``tokenizer=ID|DIR`` (``--tokenizer``): the candidate's tokens are found with that tokenizer's
offsets instead of the server's (for a server whose offsets are missing or count bytes); the
echoed pieces must be the tokenizer's pieces of the same text, else one line says so.

Ranking and generation (`ServedModel.generate`: completions, or chat completions where a
chat template applies) are served: what needs weights or hidden states (slot distributions over a
vocabulary, pseudoword vectors, features, gradients) is one `ModelError` line.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Sequence

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.capabilities import Declared
from kgprobe.models.cloze import AUTO, RULE, SUFFIX_MODES, uses_suffix
from kgprobe.models.served_tokens import (Echo, InvalidEcho, checked_echo, load_tokenizer,
                                          retokenized)
from kgprobe.models.served_client import KNOWN, ServedClient, ServedName, no_logprobs, parse_served
from kgprobe.ontology.verbalize import MASK

__all__ = ["ServedModel", "ServedScorer", "cloze_text", "load_served"]

#: BOS spellings tried when the server's echo is shifted and no ``start=`` is given.
START_GUESSES = ("<|im_start|>", "<|endoftext|>", "<s>", "<bos>", "<|begin_of_text|>")
#: A text even a small model continues predictably: the alignment check's probe.
PROBE = ("Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday. "
         "January, February, March, April, May, June, July, August, September, October")

# --------------------------------------------------------------------------------------
# Echoed log-probabilities and the alignment check
# --------------------------------------------------------------------------------------


class EchoReader:
    """Echoes texts through ``/completions`` and reads back their token log-probabilities."""

    def __init__(self, client: ServedClient, model: str, start: str = "", tokenizer: Any = None):
        self.client = client
        self.model = model
        self.start = start
        self.tokenizer = tokenizer

    def echo(self, text: str) -> Echo:
        body = {"model": self.model, "prompt": self.start + text, "echo": True, "logprobs": 1,
                "max_tokens": 1, "temperature": 0}
        answer = self.client.request("/completions", body)
        try:
            echo = checked_echo(answer["choices"][0]["logprobs"])
        except (KeyError, IndexError, TypeError, AttributeError):
            raise no_logprobs(self.client.label, self.client.spec.url,
                              "its completions answer has no echoed logprobs") from None
        except InvalidEcho as why:
            # Not scored, so not cached either: the unit being scored stops here, and a
            # rerun once the server is fixed asks again.
            raise ModelError(f"model '{self.client.label}': the server at "
                             f"{self.client.spec.url} echoed invalid log-probabilities for "
                             f"{text[:60]!r} ({why}); nothing of it was scored or cached: fix "
                             f"the server, then run again") from None
        if not echo.tokens or all(v is None for v in echo.logprobs):
            raise no_logprobs(self.client.label, self.client.spec.url,
                              "it echoed no log-probabilities")
        # Offsets count from the echoed text: from after the start text where the server
        # stripped it (llama.cpp's BOS), from the start text where it echoed it back.
        tokens = echo.tokens
        shift = len(self.start) if self.start and tokens[0] and self.start.startswith(tokens[0]) else 0
        echo.offsets = [o - shift for o in echo.offsets]
        return retokenized(echo, text, self.tokenizer, self.client) if self.tokenizer else echo

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


def aligned_reader(client: ServedClient, model: str, start: str | None,
                   tokenizer: Any = None) -> EchoReader:
    """A reader whose echoed log-probabilities are checked to be log P(token | tokens before)."""
    tries = [start] if start else [""] + list(START_GUESSES)
    seen = []
    for text in tries:
        reader = EchoReader(client, model, text, tokenizer)
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
class ServedModel(Declared):
    """A model behind an OpenAI-compatible server: the `LanguageModel` calls a ranking study
    makes (`scorer`, `trained_on`) and `generate`; the rest need weights and say so in one
    line (`models.capabilities`)."""

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
    capabilities: ClassVar[frozenset[str]] = frozenset({"rank", "generate"})
    hint: ClassVar[str] = ("it is served and ranks candidates only; that needs an in-process "
                           "model (a preset, .gguf file or model directory)")
    model = None
    tokenizer = None
    device = "server"

    @property
    def source(self) -> str:
        return f"{self.spec.url}#{self.server_model}"

    def reader(self) -> EchoReader:
        """The echo reader, its alignment checked on first use (`load_served`: once per
        model, a few requests)."""
        if self._reader is None:
            tokenizer = (load_tokenizer(self.spec.tokenizer, self.name) if self.spec.tokenizer
                         else None)
            self._reader = aligned_reader(self.client, self.server_model, self.spec.start,
                                          tokenizer)
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

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 8,
                 stop: Sequence[str] = ("\n", "."), chat: bool = False,
                 candidates: Sequence[Sequence[str]] | None = None,
                 batch_size: int = 16, pseudowords=None) -> list[str]:
        """Greedy answers from the server (temperature 0): ``/chat/completions`` with the prompt
        as the user's turn when `chat` (the server applies its chat template), else
        ``/completions``; requests in flight bounded by the name's ``concurrency``, each with
        the client's timeout and retries. The answer is cut at `stop` here as well, since a
        server may return the text past a stop it does not honour."""
        from kgprobe.models.generation import cut

        if pseudowords is not None:
            raise ModelError(f"model '{self.name}' is served: it takes no pseudoword vectors; "
                             "--answers generate with pseudowords needs an in-process causal LM")

        def one(prompt: str) -> str:
            body = {"model": self.server_model, "max_tokens": max_new_tokens, "temperature": 0,
                    "stop": list(stop)}
            path = "/chat/completions" if chat else "/completions"
            answer = self.client.request(path, {**body, "messages": [
                {"role": "user", "content": prompt}]} if chat else {**body, "prompt": prompt})
            try:
                choice = answer["choices"][0]
                text = (choice["message"].get("content") if chat else choice.get("text")) or ""
            except (KeyError, IndexError, TypeError, AttributeError):
                raise ModelError(f"model '{self.name}': {self.spec.url}{path} answered without "
                                 "a completion text; is it an OpenAI-compatible server?") from None
            return cut(str(text), stop)

        with ThreadPoolExecutor(max_workers=self.spec.concurrency) as pool_:
            return list(pool_.map(one, prompts))


def load_served(name: str) -> ServedModel:
    """Connect to the server a served name points at and pick its model (`/models`)."""
    spec = parse_served(name)
    client = ServedClient(spec, name)
    t0 = time.perf_counter()
    listed = client.request("/models").get("data", [])
    if not isinstance(listed, list):
        raise ModelError(f"model '{name}': {spec.url}/models answered no list of models "
                         f"(its data is a {type(listed).__name__}); is it an OpenAI-compatible "
                         "/v1 URL?")
    ids = [m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)]
    model = spec.model
    if model is None:
        if len(ids) != 1:
            raise ModelError(f"model '{name}': the server serves {len(ids)} models "
                             f"({', '.join(map(str, ids)) or 'none'}); name one as #MODEL")
        model = ids[0]
    elif ids and model not in ids:
        raise ModelError(f"model '{name}': the server at {spec.url} does not serve '{model}' "
                         f"(it serves {', '.join(map(str, ids))}); name one of them after #")
    served = ServedModel(name=name, spec=spec, server_model=model, client=client)
    served.reader()  # a server that cannot rank says so now, before a study starts its work
    served.info["seconds"] = round(time.perf_counter() - t0, 3)
    return served
