"""Backends that agree (docs/served-models.md): the same memorization probes on smollm2-135m
through in-process transformers (the GGUF de-quantised to float32), the same GGUF behind a real
``llama_cpp.server`` and lm-eval's export of the probes scored by lm-eval's ``HFLM``.

What would fail: a shifted or mis-cut echo (several nats off, ranks reorder), an exported
context/continuation that is not the in-process split of the same sentence, a scorer that
pools or spaces differently from lm-eval. The figures come from `bench/backends.py`, whose
functions this test drives on a few items (the bench's own run is the documented measurement).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[1] / "bench" / "backends.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_backends", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_backends"] = module
    spec.loader.exec_module(module)
    return module


def test_in_process_served_and_lm_eval_agree(tmp_path):
    bench = _bench()
    from argparse import Namespace

    from kgprobe.models.loading import load_model

    args = Namespace(task="domain", template=0, limit=4, candidates=5)
    rows = bench.probes(args, tmp_path / "export")
    assert len(rows) >= 3
    # lm-eval reads exactly the in-process sentences, split where kgprobe's candidate starts
    assert bench.export_mismatches(rows) == 0
    loaded = load_model("smollm2-135m")
    local = bench.score_all(loaded.scorer(), rows)
    lm = bench.score_lm_eval(loaded.source, rows)
    if lm is not None:  # lm-eval installed (make test): the same weights, the same float32 sums
        pair = bench.compare(local, lm)
        assert pair["max_abs"] <= 1e-3, pair
    with bench.llama_server(bench.smollm2_gguf(), tmp_path / "server.log") as url:
        served_model = load_model(f"openai:{url}#smollm2")
        start = served_model.reader().start
        served = bench.score_all(served_model.scorer(), rows)
    same = bench.score_all(loaded.scorer(), rows, start)
    pair = bench.compare(same, served)
    print(f"same tokens: {pair}")
    # most candidates within the tolerance; every pair wider than 2x tolerance in the same order
    assert pair["within_tolerance"] >= 0.8, pair
    assert pair["wide_pairs"] > 0 and pair["wide_pairs_same_order"] == pair["wide_pairs"], pair
    # R@1 and MRR: each backend's estimate inside the other's interval
    a, b = bench.metrics(same, rows), bench.metrics(served, rows)
    for name in ("R@1", "MRR"):
        assert b[name][1] <= a[name][0] <= b[name][2] and a[name][1] <= b[name][0] <= a[name][2], (a, b)
    assert all(np.isfinite(s).all() for s in served)
