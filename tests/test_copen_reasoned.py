"""COPEN generation on a reasoned store (issue 26): the same items as on the unreasoned one, in
time that grows with the store, not with its square; stale inferences refused as elsewhere."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from kgprobe.cli import main
from kgprobe.kg.store import KnowledgeGraph
from kgprobe.ontology.loaders import Source, bundled_source
from kgprobe.reasoning.copen_items import TASK_DIRS
from kgprobe.reasoning.copen_kg import entity_types
from kgprobe.reasoning.copen_taxonomy import Taxonomy
from kgprobe.reasoning.materialize import materialize
from kgprobe.studies.copen.study import CopenConfig, load_sets


def _sibling(name: str):
    """A test module beside this one (pytest runs with --import-mode=importlib: no sys.path)."""
    spec = importlib.util.spec_from_file_location(f"_reasoned_{name}",
                                                  Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_copen = _sibling("test_copen")
tiny_ontology, MCRAE = _copen.tiny_ontology, _copen.MCRAE


def _store(path: Path, source: Source, *, reason: bool) -> Path:
    with KnowledgeGraph(path) as kg:
        kg.add_sources([source])
        if reason:
            materialize(kg)
    return path


def _tiny_source() -> Source:
    onto = tiny_ontology()
    return Source("tiny", "tiny", onto, list(onto.triples()))


def _generated(tmp_path: Path, store: Path, name: str) -> dict[str, str]:
    """Every generated file (task/split.json → text) of a --from-kg run on `store`."""
    cfg = CopenConfig(model=None, method="zero-shot", from_kg=True, store=str(store),
                      norms=str(MCRAE))
    out = tmp_path / name
    load_sets(cfg, out)
    return {f"{TASK_DIRS[t]}/{s}": (out / "data" / TASK_DIRS[t] / f"{s}.json").read_text()
            for t in ("csj", "cpj", "cic") for s in ("train", "dev", "test")}


def test_reasoned_tiny_store_gives_the_same_csj_cpj_cic_items(tmp_path):
    plain = _store(tmp_path / "plain", _tiny_source(), reason=False)
    reasoned = _store(tmp_path / "reasoned", _tiny_source(), reason=True)
    with KnowledgeGraph(reasoned, create=False, read_only=True) as kg:
        assert kg.inferred_state() == "fresh" and kg.count() > 0
    a, b = _generated(tmp_path, plain, "a"), _generated(tmp_path, reasoned, "b")
    assert all(json.loads(a[k]) for k in a if k.endswith("test"))  # something to compare
    assert a == b


def test_taxonomy_of_a_closure_is_the_direct_hierarchy(tmp_path):
    """The generators themselves read a closure (every ancestor a superclass, every superclass
    of a type a type) as its direct hierarchy: the same chains and the same members."""
    reasoned = _store(tmp_path / "reasoned", _tiny_source(), reason=True)
    with KnowledgeGraph(reasoned, create=False, read_only=True) as kg:
        closed = kg.ontology()
    onto = tiny_ontology()
    t_closed, t_plain = Taxonomy.of(closed), Taxonomy.of(onto)
    dog = _copen.iri("Dog")
    assert len(closed.classes[dog].parents) > 1  # the closure lists Mammal and Animal
    for c in onto.classes:
        assert t_closed.parents[c] == t_plain.parents[c]
        assert t_closed.chains(c) == t_plain.chains(c)
    for i, inst in onto.instances.items():
        closed_types = t_closed.direct_types(closed.instances[i].types)
        if inst.types:
            assert closed_types == t_plain.direct_types(inst.types)
        else:  # typed only by a fact's domain or range (rdfs2/rdfs3), which the closure
            # states and the asserted graphs do not: why the study reads the asserted graphs
            entailed = entity_types(onto).get(i, {})
            assert set(closed_types) == set(t_plain.direct_types(entailed))


@pytest.fixture(scope="module")
def bundled_reasoned(tmp_path_factory):
    path = _store(tmp_path_factory.mktemp("bundled") / "store", bundled_source(), reason=True)
    with KnowledgeGraph(path, create=False, read_only=True) as kg:
        return kg.ontology()  # asserted ∪ inferred: what the generators got before the fix


def test_csj_on_the_bundled_reasoned_store_is_not_quadratic(bundled_reasoned, monkeypatch):
    """Each query used to compare its label with every other member of its concept, and with
    the rdf:type closure a top-level concept has every instance as a member: millions of
    comparisons (minutes) before the first item. Counted, not timed: the comparisons stay
    within a few per item."""
    import kgprobe.reasoning.copen_kg as copen_kg

    calls = {"n": 0}
    budget = 20 * len(bundled_reasoned.instances)
    real = copen_kg.lexical_overlap

    def counted(a: str, b: str) -> bool:
        calls["n"] += 1
        if calls["n"] > budget:
            raise AssertionError(f"over {budget} label comparisons: quadratic in the members")
        return real(a, b)

    monkeypatch.setattr(copen_kg, "lexical_overlap", counted)
    items, _ = copen_kg.generate_csj(bundled_reasoned, seed=0, per_concept=2)
    assert items and calls["n"] <= 5 * len(items) + len(bundled_reasoned.instances)


def test_study_refuses_a_stale_store_and_reasons_with_reason(tmp_path, capsys):
    store = _store(tmp_path / "store", _tiny_source(), reason=True)
    extra = tmp_path / "extra.nt"
    extra.write_text(f"<{_copen.EX}zed> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                     f"<{_copen.EX}Dog> .\n")
    assert main(["kg", "load", str(extra), "--store", str(store)]) == 0
    capsys.readouterr()
    args = ["study", "copen", "--from-kg", "--store", str(store), "--task", "csj", "--method",
            "zero-shot", "--dry-run", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "stale" in err[-1] and "--reason" in err[-1] and "Traceback" not in "".join(err)
    assert not (tmp_path / "out" / "prompts.jsonl").exists()
    assert main(args + ["--reason", "--wait"]) == 0
    assert "inferences were stale" in capsys.readouterr().out
    with KnowledgeGraph(store, create=False, read_only=True) as kg:
        assert kg.inferred_state() == "fresh"
    assert (tmp_path / "out" / "prompts.jsonl").exists()


@pytest.mark.parametrize("extra, fix", [(["--data", "x", "--reason"], "--from-kg"),
                                        (["--from-kg", "--wait"], "--reason")])
def test_reason_and_wait_misuse_is_one_line(tmp_path, capsys, extra, fix):
    code = main(["study", "copen", "--task", "csj", "--method", "zero-shot", "--dry-run",
                 "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and fix in err
