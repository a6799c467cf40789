"""Deep and wide hierarchies load in polynomial time, and pruning gives the model it gave when
it walked every path (`naive_prune`, the reference).

Taking unlabelled classes out of a hierarchy reconnects each edge to its nearest kept
ancestors (`ontology.hierarchy.nearest_kept`). A closed chain of N unlabelled classes (each a
subclass of every later one) has 2^(N-1) paths from its bottom: walking them made `kg load`
of a 40-chain, and `kg stats` after `reason` on a labelled 50-chain (the inferred graph has no
labels), run for hours. The timed tests run their work in a forked child that is killed at
the limit, so on a regression they fail at the limit instead of hanging the suite.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kgprobe.ontology import hierarchy, prune
from kgprobe.ontology.from_triples import build_ontology
from kgprobe.ontology.hierarchy import nearest_kept
from kgprobe.ontology.loaders import parse_rdf
from kgprobe.ontology.model import OntClass, Ontology

sys.path.insert(0, str(Path(__file__).parent))
import naive_prune  # noqa: E402

DATA = Path(__file__).parent / "data"
SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
CHAIN_PRELUDE = ("@prefix e: <http://e/> . "
                 "@prefix r: <http://www.w3.org/2000/01/rdf-schema#> .\n")


def closed_chain(n: int) -> list[tuple[str, str, str]]:
    """C0 ⊑ C1 ⊑ … ⊑ Cn with every shortcut stated: the issue's adversarial file."""
    return [(f"http://e/C{i}", SUBCLASS, f"http://e/C{j}")
            for i in range(n) for j in range(i + 1, n + 1)]


def within(seconds: float, work, *args) -> float:
    """`work(*args)` in a forked child, killed past `seconds`; returns the child's time."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()

    def child():
        start = time.perf_counter()
        work(*args)
        queue.put(time.perf_counter() - start)

    proc = ctx.Process(target=child)
    proc.start()
    proc.join(seconds)
    if proc.is_alive():
        proc.kill()
        proc.join()
        pytest.fail(f"{getattr(work, '__name__', work)} ran past {seconds} s")
    assert proc.exitcode == 0, f"the child failed (exit {proc.exitcode})"
    return queue.get(timeout=5)


# ---------------------------------------------------------------- same answers as the walk


def random_hierarchy(rng: random.Random) -> tuple[dict[str, list[str]], set[str]]:
    """A small hierarchy with diamonds, cycles, self-loops, parents that are no key and
    terms dropped at random (most of them, so paths run through many dropped terms)."""
    n = rng.randint(2, 11)
    terms = [f"t{i}" for i in range(n)]
    acyclic = rng.random() < 0.5
    parents: dict[str, list[str]] = {}
    for i, t in enumerate(terms):
        pool = terms[i + 1:] if acyclic else terms
        ps = rng.sample(pool, min(len(pool), rng.randint(0, 4)))
        if rng.random() < 0.2:
            ps.append(f"outside{rng.randint(0, 2)}")  # a parent that is no key
        parents[t] = ps
    dropped = {t for t in terms if rng.random() < 0.7} | {"outside0"}
    return parents, dropped


def test_nearest_kept_matches_walking_every_path_on_random_hierarchies():
    """Every dropped term's answer, order included, equals the walk of every path (the old
    algorithm), on 3,000 random small hierarchies: DAGs, diamonds, cycles, self-loops."""
    rng = random.Random(34)
    cyclic = 0
    for _ in range(3000):
        parents, dropped = random_hierarchy(rng)
        got = nearest_kept(parents, dropped)
        assert set(got) >= dropped & set(parents)
        for term in dropped:
            assert list(got.get(term, ())) == naive_prune.bypass(term, parents, dropped), (
                parents, dropped, term)
        cyclic += any(len(c) > 1 for c in hierarchy._components(parents, dropped))
    assert cyclic > 300  # cycles through dropped terms were exercised


def test_a_huge_cycle_shares_one_order_and_keeps_every_ancestor(monkeypatch):
    """Past `CYCLE_WORK` the members of one cycle share the order of one walk: the same
    ancestors as the walk of every path, each member's own answer."""
    monkeypatch.setattr(hierarchy, "CYCLE_WORK", 10)
    parents = {f"c{i}": [f"c{(i + 1) % 8}", f"k{i}"] for i in range(8)}
    got = nearest_kept(parents, set(parents))
    assert len({got[t] for t in parents}) == 1
    for term in parents:
        assert sorted(got[term]) == sorted(naive_prune.bypass(term, parents, set(parents)))


def _random_ontology(rng: random.Random) -> tuple[Ontology, dict[str, str]]:
    parents, dropped = random_hierarchy(rng)
    onto = Ontology(name="r")
    for term, ps in parents.items():
        onto.classes[term] = OntClass(term, term, list(ps))
    reasons = {t: rng.choice(["id-like", "datatype"]) for t in sorted(dropped)}
    return onto, reasons


def test_datatypes_spread_like_the_repeated_passes():
    """Subclasses of datatypes are marked in the order the old passes marked them (the
    excluded table's order is the model's)."""
    rng = random.Random(7)
    for _ in range(2000):
        onto, reasons = _random_ontology(rng)
        rng.shuffle(keys := list(onto.classes))
        onto.classes = {k: onto.classes[k] for k in keys}
        old, new = dict(reasons), dict(reasons)
        naive_prune.spread_datatypes(onto, old)
        prune._spread_datatypes(onto, new)
        assert list(new.items()) == list(old.items())


def _model(onto: Ontology) -> tuple:
    return ({i: (c.label, c.parents) for i, c in onto.classes.items()},
            {i: (p.parents, p.domain, p.range) for i, p in onto.properties.items()},
            {i: (x.label, x.types) for i, x in onto.instances.items()},
            list(onto.excluded.items()), onto.excluded_counts, dict(onto.emptied),
            onto.warnings, onto.facts)


ONTOLOGIES = sorted((DATA / "ontologies").glob("*.ttl")) + sorted((DATA / "byo").glob("*.ttl"))


def test_pruned_models_are_unchanged_on_the_test_ontologies(monkeypatch):
    """Each test ontology (schema.org, BFO, FIBO, the BYO files, …) builds the same model,
    every list in the same order, as with the walk of every path."""
    assert len(ONTOLOGIES) > 20
    for path in ONTOLOGIES:
        triples = parse_rdf(path)
        with monkeypatch.context() as m:
            m.setattr(prune, "_reconnect", naive_prune.reconnect)
            m.setattr(prune, "_spread_datatypes", naive_prune.spread_datatypes)
            old = build_ontology(path.stem, triples)
        new = build_ontology(path.stem, triples)
        assert _model(new) == _model(old), path.name


# ----------------------------------------------------------------------------- time bounds


def _build(triples):
    build_ontology("x", triples)


def test_closed_chains_prune_in_polynomial_time():
    """Closed chains of unlabelled classes: 40 (2^39 paths) and 200 (20,100 edges) build
    their model in seconds; the old walk needed hours for 40."""
    assert within(10, _build, closed_chain(40)) < 5
    assert within(60, _build, closed_chain(200)) < 30


def _nearest(parents):
    got = nearest_kept(parents, set(parents))
    assert got[next(iter(parents))]  # something was found


def _ladder(n: int) -> dict[str, list[str]]:
    """n unlabelled classes in layers of two, each a subclass of both in the next layer:
    2^(n/2) paths from the bottom (stacked diamonds)."""
    layers = n // 2
    parents = {f"{x}{k}": [f"a{k + 1}", f"b{k + 1}"] for k in range(layers - 1) for x in "ab"}
    parents[f"a{layers - 1}"], parents[f"b{layers - 1}"] = ["top"], ["other top"]
    return parents


def test_100k_class_hierarchies_deep_wide_and_cyclic():
    """10^5 unlabelled classes as a chain, a ladder of diamonds, a star (one class with 10^5
    subclasses) and a 10^4-cycle with a kept parent per member: each in seconds."""
    n = 100_000
    chain = {f"c{i}": [f"c{i + 1}"] for i in range(n)} | {f"c{n}": ["top"]}
    star = {f"s{i}": ["hub"] for i in range(n)} | {"hub": ["top"]}
    cycle = {f"y{i}": [f"y{(i + 1) % 10_000}", f"k{i}"] for i in range(10_000)}
    for parents in (chain, _ladder(n), star, cycle):
        assert within(60, _nearest, parents) < 30


def _spread(n):
    onto = Ontology(name="d")
    for i in range(n):  # listed bottom first: the old passes marked one class per pass
        onto.classes[f"c{i:06d}"] = OntClass(f"c{i:06d}", "", [f"c{i + 1:06d}"])
    onto.classes[f"c{n:06d}"] = OntClass(f"c{n:06d}", "", ["xsd"])
    out = {"xsd": "datatype"}
    prune._spread_datatypes(onto, out)
    assert len(out) == n + 2


def test_a_deep_datatype_hierarchy_spreads_in_one_pass():
    """20,000 classes below a datatype, each listed before its parent: one search, not a
    pass per level (the old passes: 20,000 × 20,000 intersections)."""
    assert within(30, _spread, 20_000) < 10


def test_progress_is_shown_for_large_hierarchies_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(hierarchy, "PROGRESS_AT", 100)
    monkeypatch.setattr(sys, "stderr", Terminal())
    nearest_kept(_ladder(400), set(_ladder(400)))
    shown = sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", Terminal())
    nearest_kept(_ladder(40), set(_ladder(40)))
    assert "hierarchy" in shown and "components" in shown
    assert sys.stderr.getvalue() == ""


# ------------------------------------------------------------------------------ commands

CLI_TIMED = """
import json, sys, time
from kgprobe.cli import main
times = {}
for name, args in json.loads(sys.argv[1]):
    start = time.perf_counter()
    assert main(args) == 0, name
    times[name] = time.perf_counter() - start
print(json.dumps(times))
"""


def timed_cli(tmp_path: Path, steps: list[tuple[str, list[str]]], timeout: float) -> dict:
    """Each `kgprobe` command run in one child (imports paid once, outside the times)."""
    try:
        run = subprocess.run([sys.executable, "-c", CLI_TIMED, json.dumps(steps)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{[s[0] for s in steps]} ran past {timeout} s")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_kg_load_of_the_closed_40_chain_takes_seconds(tmp_path):
    """The issue's file: `kg load` of an unlabelled closed 40-chain (820 triples)."""
    lines = [f"e:C{i} r:subClassOf e:C{j} ." for i in range(40) for j in range(i + 1, 41)]
    (tmp_path / "cl.ttl").write_text(CHAIN_PRELUDE + "\n".join(lines) + "\n")
    times = timed_cli(tmp_path, [("load", ["kg", "load", "--store", "x", "cl.ttl"])], 60)
    assert times["load"] < 5


def test_kg_stats_after_reason_on_a_labelled_50_chain_takes_seconds(tmp_path):
    """A labelled chain of 51 classes, reasoned: the inferred graph's model (1,275 closure
    edges, no labels, every class taken out) is what `kg stats` builds."""
    lines = [f'e:C{i} r:label "class {chr(97 + i % 26)}{chr(97 + i // 26)}"@en .'
             for i in range(51)]
    lines += [f"e:C{i} r:subClassOf e:C{i + 1} ." for i in range(50)]
    (tmp_path / "lab.ttl").write_text(CHAIN_PRELUDE + "\n".join(lines) + "\n")
    times = timed_cli(tmp_path, [("load", ["kg", "load", "--store", "y", "lab.ttl"]),
                                 ("reason", ["reason", "--store", "y"]),
                                 ("stats", ["kg", "stats", "--store", "y"])], 90)
    assert times["stats"] < 10 and times["reason"] < 10


# ------------------------------------------------------------------------------- the bench


def test_bench_chains_runs_tiny_and_prints_one_json_line(tmp_path):
    """bench/chains.py at tiny depths: the three commands timed per depth, the fit, and the
    anchor (old and current build at each anchor depth, both giving bottom ⊑ top)."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "chains.py"
    help_ = subprocess.run([sys.executable, str(bench), "--help"], capture_output=True,
                           text=True, timeout=60)
    assert help_.returncode == 0 and "--depths" in help_.stdout
    run = subprocess.run([sys.executable, str(bench), "--depths", "4,8", "--anchor-depths",
                          "4,6"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    line = json.loads(run.stdout.strip().splitlines()[-1])
    assert [r["depth"] for r in line["chains"]] == [4, 8]
    for row in line["chains"]:
        assert row["load_s"] > 0 and row["reason_s"] > 0 and row["stats_s"] > 0
        assert row["triples"] == row["depth"] * (row["depth"] + 1) // 2 + 2  # + 2 labels
    assert isinstance(line["fitted_exponent"], float)
    assert [r["depth"] for r in line["anchor"]["runs"]] == [4, 6]
    assert all(r["walk_every_path_s"] > 0 and r["current_s"] > 0 for r in line["anchor"]["runs"])
