"""Benchmark: how long the commands a researcher waits on take to start and finish, against
the cost of importing torch, measured in the same run.

    python bench/startup.py [--repeat 3] [--ontology tests/data/ontologies/foaf.ttl]

Each command runs `--repeat` times, each in a fresh subprocess (as a shell starts it); the
median wall time and the median CPU time (user + system, of the child) are reported:

* ``help``: ``kgprobe --help``;
* ``kg_load_empty_tag_cache``: ``kgprobe kg load ONTOLOGY`` into a new store with an empty
  tag cache, as on a new machine (FOAF, 631 triples, by default: its labels are worded with
  spaCy's tagger, which is imported without torch);
* ``kg_load``: the same load with the labels' tags cached by the load before (no tagger);
* ``reason``: ``kgprobe reason`` on that store;
* the anchor ``import_torch``: ``python -c "import torch"``, what every one of these
  commands paid before they stopped importing it.

Wall time on a loaded machine says little; the CPU times and the ratios to the anchor measured
beside them are what to compare across machines. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path | None = None,
          env: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run; a failed run stops the benchmark. Also
    `bench/load.py`'s timer."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode:
        sys.exit(f"{' '.join(argv)} failed ({run.returncode}): {run.stderr[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_of(runs: list[tuple[float, float]]) -> dict[str, float]:
    return {"wall_s": round(statistics.median(w for w, _ in runs), 3),
            "cpu_s": round(statistics.median(c for _, c in runs), 3)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command (default 3)")
    ap.add_argument("--ontology", type=Path,
                    default=ROOT / "tests" / "data" / "ontologies" / "foaf.ttl",
                    help="the file kg load reads (default: FOAF, 631 triples)")
    args = ap.parse_args(argv)
    cli = [sys.executable, "-m", "kgprobe.cli"]
    work = Path(tempfile.mkdtemp(prefix="kgprobe-startup-"))
    try:
        results: dict[str, list[tuple[float, float]]] = {
            "help": [], "kg_load_empty_tag_cache": [], "kg_load": [], "reason": [],
            "import_torch": []}
        load = cli + ["kg", "load", str(args.ontology.resolve()), "--store"]
        for n in range(args.repeat):
            store = work / f"store{n}"
            tags = dict(os.environ, KGPROBE_TAG_CACHE_DIR=str(work / f"tags{n}"))
            results["import_torch"].append(timed([sys.executable, "-c", "import torch"], work))
            results["help"].append(timed(cli + ["--help"], work))
            results["kg_load_empty_tag_cache"].append(timed(load + [str(work / f"cold{n}")],
                                                            work, tags))
            results["kg_load"].append(timed(load + [str(store)], work, tags))
            results["reason"].append(timed(cli + ["reason", "--store", str(store)], work))
        out = {name: median_of(runs) for name, runs in results.items()}
        torch_cpu = out["import_torch"]["cpu_s"] or float("nan")
        print(json.dumps({
            "bench": "startup", "repeat": args.repeat, "ontology": args.ontology.name,
            **out,
            "cpu_ratio_to_import_torch": {k: round(out[k]["cpu_s"] / torch_cpu, 2)
                                          for k in ("help", "kg_load_empty_tag_cache",
                                                    "kg_load", "reason")}}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
