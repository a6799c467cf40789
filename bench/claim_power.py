"""Benchmark: what the premise-ablation claim rule claims for models of known behaviour.

    python bench/claim_power.py [--q 25,50,75,90,100] [--seeds 0] [--out bench-claims]

Runs the study's demo design (`--preset demo` at `--limit` items per rule, the bundled ontology, every default control)
once per model and reads each run's ``comparisons.csv``:

* the positive controls ``reader:Q`` (reads the written premises on a seeded Q % of items,
  frequency otherwise; ``reader`` is Q = 100): the design's power is the smallest Q whose
  run claims a confirmatory row, with that row's effect size (model − the nearest control);
* premise-blind heuristics, none of which reads a premise as a reasoner does
  (``heuristic:copy-random``, ``heuristic:copy-wording``) and the controls run as models
  (``frequency``, ``copy``, ``random``, ``general``, ``test-prior``, each read against the
  others): the rule's false-claim rate is the share of their confirmatory rows claimed, with
  its Wilson 95 % interval over rows (rows of one run share items: read it as a rate per
  row, not per independent trial).

``--seeds`` repeats every run under other seeds (other items, pseudowords, candidates);
``--heuristics`` names the non-reasoners to run and ``--limit`` the items per rule (default
30: the demo design at the size its power is reported at; the preset itself asks 6). Weightless models only: no network, no torch model; each run takes one to
three minutes on one core. Prints one line per run to stderr and one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

HEURISTICS = ("heuristic:copy-random", "heuristic:copy-wording",
              "frequency", "copy", "random", "general", "test-prior")


def run(model: str, seed: int, out: Path, limit: int | None = None) -> list[dict]:
    """The confirmatory rows of one demo run of `model` (resumed if its folder holds one)."""
    folder = out / f"{model.replace(':', '-')}-seed{seed}"
    argv = [sys.executable, "-m", "kgprobe.cli", "study", "premise-ablation", "--ontology",
            "bundled", "--preset", "demo", "--model", model, "--seed", str(seed),
            "--out", str(folder), "--threads", "1",
            *(["--limit", str(limit)] if limit else [])]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[3:])}: exit {done.returncode}: {done.stderr[-500:]}")
    with open(folder / "comparisons.csv", encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r.get("role") == "confirmatory"]


def claimed(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("claimed") == "True"]


def margin(row: dict) -> float:
    """The row's smallest model − control difference (the control nearest the model)."""
    diffs = [float(v) for k, v in row.items() if k.startswith("control_diff_") and v]
    return min(diffs) if diffs else float("nan")


def wilson(k: int, n: int) -> list[float]:
    from scipy.stats import binomtest

    if n == 0:
        return [float("nan"), float("nan")]
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return [round(100 * ci.low, 1), round(100 * ci.high, 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", default="25,50,75,90,100", help="reader shares to run")
    ap.add_argument("--seeds", default="0", help="seeds, comma-separated")
    ap.add_argument("--out", type=Path, default=Path("bench-claims"))
    ap.add_argument("--heuristics", default=",".join(HEURISTICS),
                    help="the non-reasoners to run, comma-separated")
    ap.add_argument("--limit", type=int, default=30, help="items per rule (default 30, the size "
                    "docs/validity.md reports; the demo preset itself asks 6)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    power = {}
    for q in [int(x) for x in args.q.split(",")]:
        model = "reader" if q == 100 else f"reader:{q}"
        for seed in seeds:
            rows = run(model, seed, args.out, args.limit)
            got = claimed(rows)
            power[f"{model} seed {seed}"] = {
                "claimed": [r["comparison"] for r in got],
                "margins": {r["comparison"]: round(100 * margin(r), 1) for r in rows
                            if r.get("n_items") not in ("", "0")}}
            print(f"{model:>24} seed {seed}: {len(got)} of {len(rows)} rows claimed",
                  file=sys.stderr, flush=True)
    false_rows = total = 0
    false = {}
    for model in [m for m in args.heuristics.split(",") if m]:
        for seed in seeds:
            rows = [r for r in run(model, seed, args.out, args.limit)
                    if r.get("n_items") not in ("", "0")]
            got = claimed(rows)
            false_rows, total = false_rows + len(got), total + len(rows)
            false[f"{model} seed {seed}"] = [r["comparison"] for r in got]
            print(f"{model:>24} seed {seed}: {len(got)} of {len(rows)} rows claimed",
                  file=sys.stderr, flush=True)
    print(json.dumps({"bench": "claim_power", "power": power, "false_claims": false,
                      "false_claim_rate": {"rows": total, "claimed": false_rows,
                                           "percent": round(100 * false_rows / max(total, 1), 1),
                                           "wilson95": wilson(false_rows, total)}}))


if __name__ == "__main__":
    main()
