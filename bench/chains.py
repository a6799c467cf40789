"""Benchmark: `kg load`, `reason` and `kg stats` of closed chains of unlabelled classes.

    python bench/chains.py [--depths 20,40,80,160] [--anchor-depths 12,14,16,18]

A closed chain of depth N is N + 1 classes c000 ⊑ c001 ⊑ … ⊑ cN, with every shortcut stated
(N(N+1)/2 subClassOf triples); only the bottom and the top have a label. The N - 1 classes
between are taken out of the model (no label usable as words) and the bottom's edges are
reconnected to its nearest kept ancestor, the top, through 2^(N-2) paths.

Each depth runs in its own fresh subprocess, which runs `kgprobe kg load`, `kgprobe reason`
and `kgprobe kg stats` in-process (`kgprobe.cli.main`, after a warm-up on a depth-2 chain so
that imports are not timed) on a new store, timing each. `fitted_exponent` is the least-squares slope of log(total seconds)
against log(depth): constant for polynomial growth (about 2 here: the file itself has
N(N+1)/2 triples), growing with depth for exponential growth.

Anchor, measured in the same run: the model build (`build_ontology`, the step that pruning is
part of) with the nearest kept ancestors found by the walk of every path that kgprobe used
before (`naive_nearest`), at small depths, next to the current build at the same depths.
`anchor.growth_per_level` is the fitted factor by which its time grows per level (about 2:
exponential), `anchor.speedup` the old build's time over the new one's at the largest anchor
depth. Extrapolated at the same factor, `anchor.extrapolated_s_at_max_depth` is what the old
build would take at the largest benchmarked depth.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def chain_triples(depth: int) -> list[tuple[str, str, str]]:
    """The closed chain of `depth` (see the module), labelled at both ends."""
    iri = [f"http://e/c{i:03d}" for i in range(depth + 1)]
    triples = [(iri[i], SUBCLASS, iri[j]) for i in range(depth) for j in range(i + 1, depth + 1)]
    return triples + [(iri[0], LABEL, '"bottom thing"@en'), (iri[-1], LABEL, '"top thing"@en')]


def write_chain(path: Path, depth: int) -> int:
    triples = chain_triples(depth)
    path.write_text("".join(f"<{s}> <{p}> {o if o.startswith(chr(34)) else f'<{o}>'} .\n"
                            for s, p, o in triples), encoding="utf-8")
    return len(triples)


def naive_nearest(parents, dropped) -> dict[str, tuple[str, ...]]:
    """The nearest kept ancestors by walking every path up from each dropped term (what
    `ontology.prune` did before `ontology.hierarchy`): exponential in the depth."""
    def bypass(iri: str, seen: frozenset[str]) -> list[str]:
        if iri not in dropped:
            return [iri]
        if iri in seen:
            return []
        out: list[str] = []
        for parent in parents.get(iri, []):
            out.extend(p for p in bypass(parent, seen | {iri}) if p not in out)
        return out

    return {t: tuple(bypass(t, frozenset())) for t in parents if t in dropped}


def _commands(depth: int, tmp: str) -> tuple[int, list[tuple[str, list[str]]]]:
    path = Path(tmp) / f"chain{depth}.nt"
    store = str(Path(tmp) / f"store{depth}")
    return write_chain(path, depth), [("load", ["kg", "load", "--store", store, str(path)]),
                                      ("reason", ["reason", "--store", store]),
                                      ("stats", ["kg", "stats", "--store", store])]


def _worker_cli(depth: int, tmp: str) -> dict:
    """load, reason and stats timed, after the same on a depth-2 chain (so the modules
    each command imports on first use are not in the times)."""
    from kgprobe.cli import main

    for _, args in _commands(2, tmp)[1]:
        assert main(args) == 0
    n, commands = _commands(depth, tmp)
    row: dict = {"depth": depth, "triples": n}
    for name, args in commands:
        start = time.perf_counter()
        code = main(args)
        row[f"{name}_s"] = round(time.perf_counter() - start, 3)
        assert code == 0, (name, code)
    return row


def _worker_anchor(depth: int) -> dict:
    """The model build at `depth`, current then with the walk of every path (one process,
    warmed up on a depth-2 chain so lazy imports are not timed); both give bottom ⊑ top."""
    from kgprobe.ontology import prune
    from kgprobe.ontology.from_triples import build_ontology

    build_ontology("warm-up", chain_triples(2))
    triples = chain_triples(depth)
    bottom, top = "http://e/c000", f"http://e/c{depth:03d}"
    row: dict = {"depth": depth}
    for name in ("current_s", "walk_every_path_s"):
        if name == "walk_every_path_s":
            prune.nearest_kept = naive_nearest
        start = time.perf_counter()
        onto = build_ontology("chain", triples)
        row[name] = round(time.perf_counter() - start, 4)
        assert onto.classes[bottom].parents == [top], (name, onto.classes[bottom].parents)
    return row


def worker(kind: str, depth: int) -> dict:
    """One measurement in a fresh process (`kind`: cli or anchor)."""
    args = [sys.executable, __file__, "--worker", kind, str(depth)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp, check=False)
    if out.returncode:
        raise SystemExit(f"bench/chains.py: the {kind} run at depth {depth} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else float("nan")


def anchor(depths: list[int], max_depth: int) -> dict:
    runs = [worker("anchor", d) for d in depths]
    old = [max(r["walk_every_path_s"], 1e-6) for r in runs]
    per_level = math.exp(slope(depths, [math.log(t) for t in old]))
    return {"name": "model build, walk of every path (kgprobe before)", "runs": runs,
            "growth_per_level": round(per_level, 2),
            "speedup": round(old[-1] / max(runs[-1]["current_s"], 1e-6), 1),
            "extrapolated_s_at_max_depth":
                float(f"{old[-1] * per_level ** (max_depth - depths[-1]):.3g}")}


def _depths(text: str) -> list[int]:
    try:
        depths = sorted({int(d) for d in text.split(",") if d.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated depths, e.g. 20,40")
    if not depths or depths[0] < 2 or depths[-1] > 999:
        raise argparse.ArgumentTypeError(f"{text!r}: depths run from 2 to 999")
    return depths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depths", type=_depths, default=[20, 40, 80, 160],
                    help="chain depths for load, reason and stats (default: 20,40,80,160)")
    ap.add_argument("--anchor-depths", type=_depths, default=[12, 14, 16, 18],
                    help="depths for the old walk of every path, the anchor (default: "
                         "12,14,16,18; it doubles per level)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, depth = args.worker[0], int(args.worker[1])
        if kind == "cli":
            with tempfile.TemporaryDirectory() as tmp:
                row = _worker_cli(depth, tmp)
        else:
            row = _worker_anchor(depth)
        print(json.dumps(row))
        return
    rows = [worker("cli", d) for d in args.depths]
    for row in rows:
        row["total_s"] = round(row["load_s"] + row["reason_s"] + row["stats_s"], 3)
    exponent = slope([math.log(r["depth"]) for r in rows], [math.log(r["total_s"]) for r in rows])
    print(json.dumps({"chains": rows, "fitted_exponent": round(exponent, 2),
                      "anchor": anchor(args.anchor_depths, args.depths[-1])}))


if __name__ == "__main__":
    main()
