"""Backends that agree: the same memorization probes through three engines, compared.

* in-process: ``--model`` (default ``smollm2-135m``, SmolLM2's Q4_1 GGUF de-quantised to
  float32 by transformers), kgprobe's causal scorer;
* served: the same GGUF file behind llama-cpp-python's ``llama_cpp.server --logits_all true``
  (started here on 127.0.0.1, or ``--served URL``), ``--model openai:URL#smollm2``;
* lm-eval: ``kgprobe export lm-eval``'s documents of the same probes, scored by
  lm-evaluation-harness's ``HFLM.loglikelihood`` on the same weights (context = the exported
  ``text``, continuation = each exported ``continuations`` entry). The exported strings are
  first checked to be the in-process prompt split exactly (context + continuation is the
  scored sentence, the context's end is where kgprobe's candidate starts).

Per backend pair: per-candidate |Δ log-probability| (max, median), the share within the
tolerance, and rank agreement on the candidate pairs whose in-process margin exceeds twice the
tolerance; per backend: R@1 and MRR with their bootstrap intervals (`studies.stats`).

The served pair is measured twice: on the same tokens (the start token the alignment check
chose, then the prompt, in-process too) — what llama.cpp's quantised arithmetic alone changes,
the weights being the same four-bit numbers on both sides — and as the study runs it (the
served side with its start token, in-process without) — what BOS handling adds.

Prints one JSON line. ``--served none`` leaves the server out (any in-process model then).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import numpy as np

#: Per-candidate tolerance in nats between backends on the same tokens: ABS + REL x |score|
#: (docs/served-models.md). llama.cpp multiplies the four-bit weights with 8-bit activations
#: where transformers multiplies the same weights de-quantised in float32: the round-off grows
#: with the tokens scored, so with the score's size (measured: median 1%, at most ~3% of it).
TOLERANCE_ABS, TOLERANCE_REL = 0.1, 0.03


def log(msg: str) -> None:
    print(f"[bench/backends] {msg}", file=sys.stderr, flush=True)


def smollm2_gguf() -> Path:
    """The GGUF file the ``smollm2-135m`` preset de-quantises (its own locator, so the
    server and the in-process model read the same file)."""
    from kgprobe.models.gguf import PRESETS

    return PRESETS["smollm2-135m"].locate(Path(tempfile.gettempdir()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_server(gguf: Path, log_path: Path, *, logits_all: bool = True, timeout: float = 180):
    """``llama_cpp.server`` on a free port (through `llama_echo`, its echo's vocabulary sort
    done by numpy); yields its ``/v1`` URL, stops it after."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit("llama-cpp-python is not installed: pip install "
                         "'llama-cpp-python[server]==0.3.36' (the 'served' extra)")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("llama_echo.py")), "--model", str(gguf),
             "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--logits_all",
             str(logits_all).lower(), "--n_ctx", "512", "--n_threads", "1",
             "--n_threads_batch", "1", "--verbose", "false"], stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(log_path.read_text()[-2000:])
                try:
                    with urllib.request.urlopen(url + "/models", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"llama_cpp.server did not answer in {timeout} s")
                    time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ------------------------------------------------------------------ the probes, two ways


def probes(args, folder: Path) -> list[dict]:
    """The memorization study's requests and the lm-eval export of the same probes, joined by
    document id: prompt, candidates, golds (study) and text, continuations (export)."""
    from kgprobe.studies.lm_eval.export import (ExportSettings, export_lm_eval, memorization_config,
                                                memorization_study)

    settings = ExportSettings(studies=("memorizing",), relations=(args.task,),
                              templates=str(args.template), candidates=args.candidates,
                              limit=args.limit, seed=0)
    export_lm_eval(folder, settings)
    exported = {}
    for path in folder.glob("kgprobe_memorizing_*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            exported[doc["id"]] = doc
    rows = []
    for unit in memorization_study().plan_of(memorization_config(settings)).requests():
        for req, rec in zip(unit.requests, unit.records):
            doc = exported.get(f"{rec.id}-t{unit.template}")
            if doc is None:
                continue  # no gold among the candidates: the export leaves it out, as we do
            rows.append({"id": doc["id"], "prompt": req.prompt, "candidates": list(req.candidates),
                         "gold": list(doc["gold"]), "text": doc["text"],
                         "continuations": doc["continuations"], "choices": doc["choices"]})
    return rows


def export_mismatches(rows: list[dict]) -> int:
    """Exported (context, continuation) pairs that are not the in-process split of the same
    sentence (`models.served.cloze_text`, which spaces as the in-process encoder does) after
    lm-eval moves the context's trailing space into the continuation (`_encode_pair`)."""
    from kgprobe.models.cloze import AUTO, uses_suffix
    from kgprobe.models.served import cloze_text

    bad = 0
    for row in rows:
        assert row["choices"] == row["candidates"], row["id"]
        for cand, cont in zip(row["candidates"], row["continuations"]):
            text, start, _ = cloze_text(row["prompt"], cand, uses_suffix(AUTO, row["prompt"]))
            ctx = row["text"].rstrip()
            moved = row["text"][len(ctx):] + cont
            bad += not (ctx + moved == text and ctx == text[:start])
    return bad


# ------------------------------------------------------------------ the backends


def score_lm_eval(source: str, rows: list[dict]) -> np.ndarray | None:
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    lm = HFLM(pretrained=source, backend="causal", device="cpu", dtype="float32", batch_size=16)
    flat = [Instance(request_type="loglikelihood", doc={}, arguments=(row["text"], cont), idx=j)
            for row in rows for j, cont in enumerate(row["continuations"])]
    values = iter(ll for ll, _ in lm.loglikelihood(flat, disable_tqdm=True))
    return [np.array([next(values) for _ in row["continuations"]]) for row in rows]


def score_all(scorer, rows: list[dict], start: str = "") -> list[np.ndarray]:
    return [scorer.score([start + row["prompt"]], row["candidates"])[0] for row in rows]


# ------------------------------------------------------------------ the comparison


def tolerance(scores: np.ndarray, abs_: float = TOLERANCE_ABS, rel: float = TOLERANCE_REL) -> np.ndarray:
    return abs_ + rel * np.abs(scores)


def compare(a: list[np.ndarray], b: list[np.ndarray], abs_: float = TOLERANCE_ABS,
            rel: float = TOLERANCE_REL) -> dict:
    """Per-candidate |Δ| (and |Δ| / |score in a|), the share within the tolerance of `a`'s
    scores, and rank agreement on the candidate pairs whose margin in `a` exceeds twice the
    larger tolerance of the two."""
    diff = np.concatenate([np.abs(x - y) for x, y in zip(a, b)])
    ref = np.concatenate(a)
    pairs = same = 0
    for x, y in zip(a, b):
        i, j = np.triu_indices(len(x), 1)
        tol = tolerance(x, abs_, rel)
        wide = np.abs(x[i] - x[j]) > 2 * np.maximum(tol[i], tol[j])
        pairs += int(wide.sum())
        same += int((np.sign(x[i] - x[j]) == np.sign(y[i] - y[j]))[wide].sum())
    rel_diff = diff / np.maximum(np.abs(ref), 1e-9)
    return {"max_abs": round(float(diff.max()), 4), "median_abs": round(float(np.median(diff)), 4),
            "max_rel": round(float(rel_diff.max()), 4),
            "median_rel": round(float(np.median(rel_diff)), 4),
            "within_tolerance": round(float((diff <= tolerance(ref, abs_, rel)).mean()), 4),
            "wide_pairs": pairs, "wide_pairs_same_order": same,
            "top1_same": round(float(np.mean([x.argmax() == y.argmax() for x, y in zip(a, b)])), 4)}


def metrics(scores: list[np.ndarray], rows: list[dict]) -> dict:
    from kgprobe.studies.metrics import item_metrics
    from kgprobe.studies.stats import mean_interval

    per = [item_metrics(s, row["gold"]) for s, row in zip(scores, rows)]
    out = {}
    for name in ("R@1", "MRR"):
        iv = mean_interval([m[name] for m in per], seed=0, key=(name,))
        out[name] = [round(float(v), 4) for v in (iv.estimate[0], iv.lo[0], iv.hi[0])]
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="the in-process model")
    ap.add_argument("--served", default="start",
                    help="start (llama_cpp.server with SmolLM2's GGUF), a /v1 URL, or none")
    ap.add_argument("--task", default="type", help="memorizing relation (default type)")
    ap.add_argument("--template", type=int, default=0)
    ap.add_argument("--limit", type=int, default=20, help="records (default 20)")
    ap.add_argument("--candidates", type=int, default=10, help="gold + K-1 distractors")
    ap.add_argument("--tolerance-abs", type=float, default=TOLERANCE_ABS, help="nats per candidate")
    ap.add_argument("--tolerance-rel", type=float, default=TOLERANCE_REL,
                    help="share of the candidate's |log-probability| added to --tolerance-abs")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)

    from kgprobe.models.loading import load_model, set_threads

    set_threads(args.threads)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rows = probes(args, Path(tmp) / "export")
        log(f"{len(rows)} probes x {args.candidates} candidates ({args.task}, template {args.template})")
        tol = (args.tolerance_abs, args.tolerance_rel)
        loaded = load_model(args.model)
        local = loaded.scorer()
        result = {"bench": "backends", "model": args.model, "task": args.task, "probes": len(rows),
                  "candidates": args.candidates, "tolerance": [args.tolerance_abs, args.tolerance_rel],
                  "export_mismatches": export_mismatches(rows), "pairs": {}, "metrics": {}}
        scores = {"in_process": score_all(local, rows)}
        lm = score_lm_eval(loaded.source, rows)
        result["lm_eval"] = lm is not None
        if lm is not None:
            scores["lm_eval"] = lm
            result["pairs"]["lm_eval"] = compare(scores["in_process"], lm, *tol)
        if args.served != "none":
            with _server(args.served, Path(tmp)) as url:
                served = load_model(f"openai:{url}#smollm2")
                start = served.reader().start
                scores["served"] = score_all(served.scorer(), rows)
                same = score_all(local, rows, start)
            result["served_start"] = start
            result["pairs"]["served_same_tokens"] = compare(same, scores["served"], *tol)
            result["pairs"]["served"] = compare(scores["in_process"], scores["served"], *tol)
        for name, s in scores.items():
            result["metrics"][name] = metrics(s, rows)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result), flush=True)
    return result


@contextmanager
def _server(served: str, tmp: Path):
    if served == "start":
        with llama_server(smollm2_gguf(), tmp / "server.log") as url:
            yield url
    else:
        yield served.rstrip("/")


if __name__ == "__main__":
    main()
