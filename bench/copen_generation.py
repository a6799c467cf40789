"""Benchmark: COPEN's CSJ and CiC generation from the bundled store, reasoned against unreasoned.

    python bench/copen_generation.py [--repeat 3] [--source ONTOLOGY]

Builds two stores of the bundled OntoProbe ontology in a temporary folder (one as `kg load
--default`, one as `kg load --default --reason`) and times, best of `--repeat`, what
`study copen --from-kg` does before any prompt: read the store's model (`kg_ontology`), build
the taxonomy, generate CSJ and CiC. Prints one JSON line: seconds on each store, their ratio
(reasoned / unreasoned, the anchor: the same work in the same run), item counts, whether
the items are the same, and `closure_model_s`: CSJ+CiC generated straight from the reasoned
store's union model (asserted ∪ inferred: what the study read when issue 26's run hung for
minutes; the generators now read it as its direct hierarchy). ``--source`` builds the stores
from another ontology (a file or folder `kgprobe kg load` reads): the test suite runs the
script on a tiny one (tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _store(path: Path, reason: bool, source: str | None = None) -> Path:
    from kgprobe.kg.store import KnowledgeGraph
    from kgprobe.ontology.loaders import bundled_source, load_source
    from kgprobe.reasoning.materialize import materialize

    with KnowledgeGraph(path) as kg:
        kg.add_sources([load_source(source) if source else bundled_source()])
        if reason:
            materialize(kg)
    return path


def _generate(onto) -> tuple[list, list]:
    from kgprobe.reasoning.copen_kg import generate_cic, generate_csj
    from kgprobe.reasoning.copen_taxonomy import Taxonomy

    tax = Taxonomy.of(onto)
    return generate_csj(onto, tax=tax)[0], generate_cic(onto, tax=tax)[0]


def _study_path(store: Path) -> tuple[float, tuple[list, list]]:
    from kgprobe.studies.copen.study import kg_ontology

    start = time.perf_counter()
    onto, _ = kg_ontology(str(store))
    items = _generate(onto)
    return time.perf_counter() - start, items


def _closure_path(store: Path) -> float:
    from kgprobe.kg.store import KnowledgeGraph

    start = time.perf_counter()
    with KnowledgeGraph(store, create=False, read_only=True) as kg:
        onto = kg.ontology()
    _generate(onto)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", help="ontology to build the stores from (default: the bundled one)")
    args = ap.parse_args()
    from kgprobe.reasoning.copen_items import to_json

    with tempfile.TemporaryDirectory(prefix="kgprobe-bench-copen-") as tmp:
        plain = _store(Path(tmp) / "plain", reason=False, source=args.source)
        reasoned = _store(Path(tmp) / "reasoned", reason=True, source=args.source)
        best: dict[str, float] = {}
        items = {}
        for _ in range(args.repeat):
            for name, store in (("unreasoned", plain), ("reasoned", reasoned)):
                seconds, items[name] = _study_path(store)
                best[name] = min(best.get(name, seconds), seconds)
        closure = min(_closure_path(reasoned) for _ in range(args.repeat))

    def dump(pair):
        return [json.dumps(to_json(i), sort_keys=True) for task in pair for i in task]

    print(json.dumps({
        "bench": "copen_generation", "store": args.source or "bundled OntoProbe ontology",
        "tasks": ["csj", "cic"], "repeat": args.repeat,
        "reasoned_s": round(best["reasoned"], 3), "unreasoned_s": round(best["unreasoned"], 3),
        "ratio_reasoned_over_unreasoned": round(best["reasoned"] / best["unreasoned"], 3),
        "closure_model_s": round(closure, 3),
        "items": {"csj": len(items["reasoned"][0]), "cic": len(items["reasoned"][1])},
        "same_items": dump(items["reasoned"]) == dump(items["unreasoned"])}))


if __name__ == "__main__":
    main()
