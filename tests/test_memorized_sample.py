"""``--memorized-sample N``: the known/not-known split estimated from a seeded sample of each
relation's premises, so a trial run does not classify the whole population first."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from kgprobe.errors import StudyError
from kgprobe.studies.options import ModelSettings
from kgprobe.studies.premise_ablation.config import add_arguments, config_from_args
from kgprobe.studies.premise_ablation.memorized_sample import sample_lines
from kgprobe.studies.premise_ablation.study import (
    AblationConfig,
    PremiseKey,
    build_setup,
    classify_premises,
    premise_probes,
)

sys.path.insert(0, str(Path(__file__).parent))
from zoo import write_zoo  # noqa: E402

#: a larger zoo: twelve more mammal classes with an instance each, so the subclass and type
#: strata hold more premises than a sample of 3
MORE = "".join(f"ex:Kind{i} rdfs:subClassOf ex:Mammal . ex:pet{i} a ex:Kind{i} .\n"
               for i in range(12))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The larger zoo's file: a run's ontology (``ontology``), read as the run reads it."""
    return write_zoo(tmp_path_factory.mktemp("zoo"), MORE)


def classify(model, source, out: Path, *, asked: list | None = None, **options):
    """classify_premises on a fresh setup; `asked` collects every prompt the scorer gets."""
    setup = build_setup(AblationConfig(str(model), settings=ModelSettings(batch_size=16),
                                       ontology=source, **options))
    if asked is not None:
        score = setup.model.scorer.score

        def counting(prompts, *args, **kwargs):
            asked.extend(prompts)
            return score(prompts, *args, **kwargs)

        setup.model.scorer.score = counting
    return setup, classify_premises(setup, out)


def test_a_sample_bounds_the_probes_and_fixes_the_split_by_seed(tmp_path, source, tiny_gpt2_dir):
    asked: list[str] = []
    setup, premises = classify(tiny_gpt2_dir, source, tmp_path / "a", asked=asked, limit=2,
                               memorized_sample=3)
    cached = json.loads((tmp_path / "a" / "memorized.json").read_text())
    strata = {(s["role"], s["relation"]): s for s in cached["sample"]["strata"]}
    needed = {PremiseKey.of(i, role, 0) for items in setup.data.items.values() for i in items
              for role in ("P1", "P2")}
    assert needed <= set(premises)  # every evaluated item's premise is classified
    whole = premise_probes(setup.data)
    # at most 3 a stratum plus the evaluated items' premises: fewer than the whole population
    assert len(asked) <= 3 * len(strata) + len(needed)
    assert len(asked) < len(whole), (len(asked), len(whole))
    assert all(s["sampled"] == min(3, s["sampled"]) and 0 <= s["lo"] <= s["hi"] <= 1
               for s in strata.values())
    # each stratum's summary counts its sampled premises and the known among them, each
    # decided by the absolute rule (ranked first, and not by the frequency control)
    sampled = Counter((r["role"], r["relation"]) for r in cached["premises"] if r["sampled"])
    known = Counter((r["role"], r["relation"]) for r in cached["premises"]
                    if r["sampled"] and r["known"])
    assert sampled and all(n == strata[k]["sampled"] for k, n in sampled.items())
    assert all(known[k] == strata[k]["known"] for k in sampled)
    assert all(r["known"] == (r["rank"] == 1 and r["null_rank"] > 1) for r in cached["premises"])
    # the dry run writes the probes the run asks, not the whole population's
    from kgprobe.studies.premise_ablation.dry import default_records

    config = replace(setup.config, ontology=str(write_zoo(tmp_path, MORE)))
    dry = [r.text for r in default_records(config) if r.extra["kind"] == "premise probe"]
    assert sorted(dry) == sorted(asked)
    # same seed: the same sample and split, byte for byte; another seed draws another sample
    classify(tiny_gpt2_dir, source, tmp_path / "b", limit=2, memorized_sample=3)
    assert (tmp_path / "a" / "memorized.json").read_bytes() == (tmp_path / "b" / "memorized.json").read_bytes()
    classify(tiny_gpt2_dir, source, tmp_path / "c", limit=2, memorized_sample=3, seed=1)
    other = json.loads((tmp_path / "c" / "memorized.json").read_text())
    assert {r["subject"] for r in other["premises"] if r.get("sampled")} != \
        {r["subject"] for r in cached["premises"] if r.get("sampled")}
    text = "\n".join(sample_lines(cached))
    assert "sample" in text and "--memorized-sample 3" in text and "95% interval" in text


def test_the_outcomes_do_not_depend_on_limit(tmp_path, source, tiny_gpt2_dir):
    _, few = classify(tiny_gpt2_dir, source, tmp_path / "few", limit=1, memorized_sample=3)
    _, many = classify(tiny_gpt2_dir, source, tmp_path / "many", limit=4, memorized_sample=3)
    a = json.loads((tmp_path / "few" / "memorized.json").read_text())["sample"]
    b = json.loads((tmp_path / "many" / "memorized.json").read_text())["sample"]
    assert a == b
    shared = set(few) & set(many)
    assert shared and set(many) - set(few)  # more items: more premises classified
    assert all(few[k].known == many[k].known and few[k].rr == many[k].rr for k in shared)


def test_without_the_option_the_split_is_exact_and_unpinned(tmp_path, source, tiny_gpt2_dir):
    config = AblationConfig(str(tiny_gpt2_dir), limit=2)
    assert "memorized_sample" not in config.pinned()
    assert AblationConfig(str(tiny_gpt2_dir), limit=2, memorized_sample=5).pinned()["memorized_sample"] == 5
    setup, premises = classify(tiny_gpt2_dir, source, tmp_path, limit=2)
    cached = json.loads((tmp_path / "memorized.json").read_text())
    assert "sample" not in cached and sample_lines(cached) == []
    assert len(premises) == sum(len(p.keys) for p in premise_probes(setup.data))


@pytest.mark.parametrize("extra", [["--memorized-sample", "1"],
                                   ["--memorized-sample", "5", "--protocol", "paper"]])
def test_a_bad_sample_size_is_refused(extra):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--model", "m", "--out", "x", *extra])
    with pytest.raises(StudyError, match="--memorized-sample"):
        config_from_args(args)
