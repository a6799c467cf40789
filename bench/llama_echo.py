"""``python -m llama_cpp.server`` with its echo's vocabulary sort done by numpy.

llama-cpp-python 0.3.x answers a ``/v1/completions`` request with ``echo`` and ``logprobs`` by
sorting, for every echoed token, the whole vocabulary's ``(log-probability, token id)`` pairs
with Python's ``sorted`` (``Llama._create_completion``; upstream issue abetlen/llama-cpp-python
#1983) and then reading only the first ``logprobs`` of them (``sorted_logprobs[:logprobs]``):
for SmolLM2's 49,152 tokens about 0.15 s per token, so a 20-token prompt takes seconds of which
llama.cpp's own evaluation is milliseconds. `fast_sorted` stands in for ``sorted`` inside
``llama_cpp.llama`` only, for that one call shape (a zip of a sequence of numbers and
``range(n)``, reversed, no key): it returns the first ``logprobs`` pairs of what ``sorted``
returns, the same pairs in the same order (Python orders them by log-probability, then by
token id, reversed; numpy's ``lexsort`` on the same two keys, reversed), which is all the
server reads; `patch` records each request's ``logprobs`` for it. Every other call, and a
call whose ``logprobs`` is unknown, goes to the built-in. Nothing else changes, so the
log-probabilities, tokens and offsets a client reads are llama.cpp's own
(tests/test_served_model.py checks them against in-process scores of the same tokens;
tests/test_bench_smoke.py checks `fast_sorted` against ``sorted``).

Run as ``python bench/llama_echo.py ARGS`` with ``llama_cpp.server``'s own arguments;
`backends.llama_server` starts the bench's and the test suite's server this way.
``python bench/llama_echo.py time [--requests N]`` measures it: N echo requests of the same
prompt to SmolLM2's GGUF in-process, with the built-in sort and with `fast_sorted`, their CPU
seconds, ratio and whether the answers are equal, as one JSON line.
"""

from __future__ import annotations

import builtins
import inspect
import runpy
import sys
import threading
from typing import Any

#: Below this many pairs the built-in sort is as fast: the patch leaves short lists alone.
MIN_PAIRS = 1024
#: ``TOP.logprobs``: the ``logprobs`` of the completion being answered (None: unknown).
TOP = threading.local()


def _sources(pairs: zip) -> tuple[Any, Any] | None:
    """The two sequences a fresh ``zip(seq, range(n))`` reads, from its pickling state (a
    zip's ``__reduce__`` names its iterators; an iterator over a list, an array or a range
    names its sequence and position), or None for anything else."""
    try:
        _, iterators = pairs.__reduce__()
        if len(iterators) != 2:
            return None
        sources = []
        for it in iterators:
            _, (seq,), *position = it.__reduce__()
            if position and position[0]:
                return None  # already advanced
            sources.append(seq)
    except (TypeError, ValueError, AttributeError):
        return None
    values, ids = sources
    if not isinstance(ids, range) or ids != range(len(ids)) or len(values) != len(ids):
        return None
    return values, ids


def fast_sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False,
                top: int | None = None) -> list:
    """The first `top` items of ``sorted(iterable, key=key, reverse=reverse)`` (by default the
    current request's ``logprobs``; all of them when it is unknown), by numpy for the echo's
    ``sorted(zip(logprobs, range(n)), reverse=True)``."""
    top = getattr(TOP, "logprobs", None) if top is None else top
    if key is not None or not reverse or not isinstance(iterable, zip) or top is None:
        return builtins.sorted(iterable, key=key, reverse=reverse)
    sources = _sources(iterable)
    if sources is None or len(sources[1]) < MIN_PAIRS:
        return builtins.sorted(iterable, reverse=True)[:top]
    import numpy as np

    values, _ = sources
    try:
        keys = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return builtins.sorted(iterable, reverse=True)[:top]
    if keys.ndim != 1 or np.isnan(keys).any():  # NaN: Python's order is not a total order
        return builtins.sorted(iterable, reverse=True)[:top]
    if top <= 0:
        return []
    # every pair whose value reaches the top-th largest (ties with it included), then exactly
    # Python's order on those: value, then id, both descending
    cut = np.partition(keys, len(keys) - min(top, len(keys)))[len(keys) - min(top, len(keys))]
    near = np.flatnonzero(keys >= cut)
    order = near[np.lexsort((near, keys[near]))[::-1]][:top].tolist()
    return [(values[i], i) for i in order]


def patch() -> None:
    """Use `fast_sorted` inside ``llama_cpp.llama`` only, each completion recording its
    ``logprobs`` in `TOP` first (the server answers one completion at a time)."""
    import llama_cpp.llama

    original = llama_cpp.llama.Llama._create_completion
    signature = inspect.signature(original)

    def _create_completion(self, *args: Any, **kwargs: Any) -> Any:
        TOP.logprobs = signature.bind(self, *args, **kwargs).arguments.get("logprobs")
        yield from original(self, *args, **kwargs)

    llama_cpp.llama.Llama._create_completion = _create_completion
    llama_cpp.llama.sorted = fast_sorted


def time_echo(requests: int) -> dict:
    """CPU seconds of `requests` echo completions (``logprobs=1``, as kgprobe asks) of one
    20-token prompt, unpatched then patched, in one process; the answers compared."""
    import tempfile
    import time
    from pathlib import Path

    import llama_cpp.llama
    from kgprobe.models.gguf import PRESETS

    gguf = PRESETS["smollm2-135m"].locate(Path(tempfile.gettempdir()))  # as backends.py's server
    model = llama_cpp.llama.Llama(model_path=str(gguf), logits_all=True,
                                  n_ctx=512, n_threads=1, n_threads_batch=1, verbose=False)
    prompt = "The capital of France is Paris , a city on the Seine and the largest in the country ."

    def run() -> tuple[float, list]:
        model(prompt, max_tokens=1, echo=True, logprobs=1, temperature=0)  # warm
        start = time.process_time()
        answers = [model(prompt, max_tokens=1, echo=True, logprobs=1, temperature=0)
                   ["choices"][0]["logprobs"] for _ in range(requests)]
        return time.process_time() - start, answers

    builtin_s, builtin = run()
    patch()
    fast_s, fast = run()
    return {"bench": "llama_echo", "requests": requests, "tokens": len(fast[0]["tokens"]),
            "builtin_cpu_s": round(builtin_s, 3), "fast_cpu_s": round(fast_s, 3),
            "speedup": round(builtin_s / fast_s, 1), "same_answers": builtin == fast}


if __name__ == "__main__":
    if sys.argv[1:2] == ["time"]:
        import argparse
        import json

        parser = argparse.ArgumentParser(prog="llama_echo.py time")
        parser.add_argument("--requests", type=int, default=3)
        print(json.dumps(time_echo(parser.parse_args(sys.argv[2:]).requests)))
        sys.exit(0)
    patch()
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
