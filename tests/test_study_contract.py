"""The study contract: a study registered from anywhere runs through `kgprobe study NAME` and
`kgprobe report`; `kgprobe.run` and `Results.from_path(...).get_metric("MRR")` work for every
study's run folder; the demo's folder resumes under `study premise-ablation --preset demo`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import kgprobe
from kgprobe.cli import main
from kgprobe.errors import KgprobeError, StudyError
from kgprobe.studies.contract import Study
from kgprobe.studies.registry import (
    RegistryError,
    get_study,
    register_study,
    study_names,
    unregister_study,
)
from kgprobe.studies.results import Results

sys.path.insert(0, str(Path(__file__).parent))
from test_copen import official_fixture  # noqa: E402



@dataclass
class ToyConfig:
    """A toy study's settings: how many items, how hard."""

    n: int
    hard: bool
    model: str | None = None  # the toy asks no model

    def pinned(self) -> dict:
        return {"n": self.n, "hard": self.hard}

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ToyConfig":
        if args.n < 1:
            raise StudyError(f"--n {args.n}: give at least 1 item")
        return cls(args.n, args.hard)


@pytest.fixture
def toy_study():
    """A study defined and registered inside the test: nothing else in the package names it.
    It says only what it asks (`plan`); the contract's lifecycle pins, runs and reports."""
    from kgprobe.studies.contract import Plan
    from kgprobe.studies.runner import Unit, read_results
    from kgprobe.atomic import write_text

    class ToyPlan(Plan):
        columns = ["cell", "n", "MRR"]
        progress = False

        def units(self, scored):
            config, offset = self.config, 2 if self.config.hard else 1

            def run():
                preds = [{"item": f"i{k}", "gold_ranks": [k + offset]} for k in range(config.n)]
                mrr = sum(1 / p["gold_ranks"][0] for p in preds) / config.n
                return {"n": config.n, "MRR": mrr}, preds
            return [Unit({"cell": "all"}, run, config.n)]

    @register_study
    class Toy(Study):
        name = "toy"
        help = "a toy study: item k's gold is ranked k + 1 (k + 2 when hard)"
        config = ToyConfig
        cell_columns = ("cell",)

        def add_arguments(self, parser):
            parser.add_argument("--n", type=int, default=3, help="items")
            parser.add_argument("--hard", action="store_true", help="rank every gold one lower")
            parser.add_argument("--out", type=Path, required=True, help="the run folder")

        def plan(self, config):
            return ToyPlan(config)

        def load(self, config):
            return None  # no model: the toy's units rank by construction

        def report(self, out):
            rows = read_results(Path(out) / "results.csv")
            write_text(Path(out) / "report.md", f"# Toy\n\nMRR {rows[0]['MRR']}\n")
            return Path(out) / "report.md"

        def observations(self, out):
            from kgprobe.studies.metrics import rank_observations
            from kgprobe.studies.stats import read_predictions

            return rank_observations(read_predictions(Path(out)), self.cell_columns, item="item")

    yield Toy
    unregister_study("toy")


def test_a_study_registered_in_a_test_runs_through_the_cli_and_report(toy_study, tmp_path, capsys):
    out = tmp_path / "toy"
    assert "toy" in study_names()
    assert main(["study", "toy", "--n", "4", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["study"] == "toy"
    expected = (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert "(toy)" in capsys.readouterr().out and (out / "report.md").exists()
    results = Results.from_path(out)
    assert results.study == "toy"
    assert results.get_metric("MRR").loc["all"] == pytest.approx(expected, abs=1e-4)
    # a metric results.csv lacks comes from the per-item observations
    assert results.get_metric("R@1").loc["all"] == pytest.approx(1 / 4)
    # the study's own checks run for the CLI and the API alike: one line, exit 2
    assert main(["study", "toy", "--n", "0", "--out", str(tmp_path / "bad")]) == 2
    assert "--n 0" in capsys.readouterr().err
    with pytest.raises(StudyError, match="--n 0"):
        kgprobe.run("toy", n=0, out=tmp_path / "bad")
    # the same folder under other settings is refused; another study's folder too
    assert main(["study", "toy", "--n", "4", "--hard", "--out", str(out)]) == 2
    assert "other settings" in capsys.readouterr().err


def test_a_name_taken_is_refused(toy_study):
    class Another(Study):
        name = "toy"
        help = "a second toy"

    with pytest.raises(RegistryError, match="already registered"):
        register_study(Another)
    register_study(toy_study)  # the same class again is no clash
    with pytest.raises(RegistryError, match="no such study"):
        get_study("toys")


def test_the_api_takes_the_cli_options_as_keywords(tmp_path):
    with pytest.raises(StudyError, match="not a setting"):
        kgprobe.run("memorization", model="frequency", out=tmp_path / "x", limits=3)
    # the command line's range checks too: one line naming the option, nothing written
    with pytest.raises(KgprobeError, match="--seed -1"):
        kgprobe.run("memorization", model="frequency", out=tmp_path / "y", seed=-1)
    assert not (tmp_path / "y").exists()
    config = kgprobe.config("memorization", model="frequency", task="domain", no_cache=True)
    assert config.tasks == ("domain",) and config.settings.cache is False


def test_a_folder_of_another_study_is_refused(tmp_path):
    out = tmp_path / "run"
    kgprobe.run("memorization", model="random", task="domain", limit=3, out=out)
    config = json.loads((out / "config.json").read_text())
    config["study"] = "multiple-choice"
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(StudyError, match="holds a multiple-choice run"):
        kgprobe.run("memorization", model="random", task="domain", limit=3, out=out)


def _memorization(tmp_path, dirs):
    return kgprobe.run("memorization", model="frequency", task="domain", limit=5,
                       out=tmp_path / "memorization")


def _premise_ablation(tmp_path, dirs):
    return kgprobe.run("premise-ablation", model=str(dirs["gpt2"]), rules="rdfs9",
                       templates="manual", limit=2, pairs=1, candidates=5, resamples=1000,
                       out=tmp_path / "premise-ablation", threads=1)


def _multiple_choice(tmp_path, dirs):
    from kgprobe.studies.multiple_choice.study import find_sets

    root = tmp_path / "mc" / "memorizing"
    root.mkdir(parents=True)
    bundled = find_sets()[0].path.parent.parent / "memorizing" / "type.jsonl"
    (root / "type.jsonl").write_text("\n".join(bundled.read_text().splitlines()[:3]) + "\n")
    return kgprobe.run("multiple-choice", model=str(dirs["llama"]), data=tmp_path / "mc",
                       out=tmp_path / "multiple-choice")


def _copen(tmp_path, dirs):
    data = official_fixture(tmp_path / "copen-data")
    return kgprobe.run("copen", model=str(dirs["gpt2"]), method="zero-shot", data=data,
                       task="csj,cic", limit=3, out=tmp_path / "copen")


def _sta(tmp_path, dirs):
    from test_sta import HEADER, ROWS, VOCAB

    norms = tmp_path / "mcrae"
    norms.mkdir()
    lines = [HEADER] + [f"{c}\t{f}\tx\t{label}\t{pf}\t{ph}" for c, f, label, pf, ph in ROWS]
    (norms / "CONCS_FEATS_concstats_brm.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return kgprobe.run("sta", model=str(dirs["bert"]), norms=norms, task="retrieval",
                       vocab_file=tmp_path / "vocab.txt", limit=3, random_sets=1, random_permutations=1,
                       conditions="top-dec", out=tmp_path / "sta")


def _consistency(tmp_path, dirs):
    return kgprobe.run("consistency", model=str(dirs["gpt2"]), rules="rdfs9,rdfs11", limit=3,
                       candidates=5, out=tmp_path / "consistency", threads=1)


RUNS = {"consistency": _consistency, "memorization": _memorization, "premise-ablation": _premise_ablation,
        "multiple-choice": _multiple_choice, "copen": _copen, "sta": _sta}


def test_every_registered_study_is_covered_here():
    assert set(study_names()) == set(RUNS)


@pytest.mark.parametrize("study", sorted(RUNS))
def test_get_metric_mrr_works_for_every_study(study, tmp_path, tiny_gpt2_dir, tiny_llama_dir,
                                              tiny_bert_dir):
    dirs = {"gpt2": tiny_gpt2_dir, "llama": tiny_llama_dir, "bert": tiny_bert_dir}
    results = RUNS[study](tmp_path, dirs)
    assert isinstance(results, Results) and results.study == study
    again = Results.from_path(results.path)
    mrr = again.get_metric("MRR").dropna()
    assert len(mrr) >= 1 and ((mrr > 0) & (mrr <= 1)).all(), mrr
    assert len(again.frame) >= 1 and again.config["study"] == study
    # the per-item observations average to the rows' own MRR where results.csv has one
    obs = again.observations()
    assert {"item", "MRR"} <= set(obs.columns)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, tiny_gpt2_dir):
    """One `kgprobe demo --limit 1` on the tiny model, run as `make demo` installs kgprobe:
    in a process where pandas cannot be imported. The demo is the longest single run of the
    suite, so the two tests below share it (each reads a copy): its folder, the score cache
    it filled, and how the process ended."""
    import os
    import subprocess

    root = tmp_path_factory.mktemp("demo-run")
    out, cache = root / "demo", root / "score-cache"
    code = ("import sys; sys.modules['pandas'] = None; from kgprobe.cli import main; "
            f"sys.exit(main(['demo', '--model', {str(tiny_gpt2_dir)!r}, '--limit', '1', "
            f"'--out', {str(out)!r}, '--threads', '1']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, KGPROBE_CACHE_DIR=str(cache)))
    return out, cache, done


def _copy_of(demo_run, tmp_path, monkeypatch):
    """The demo's folder and score cache copied into this test's own folder (the cache as
    this test's cache), so no test changes what another reads."""
    import shutil

    out, cache, done = demo_run
    assert done.returncode == 0, done.stderr[-2000:]
    mine = tmp_path / "demo"
    shutil.copytree(out, mine)
    if cache.exists():
        shutil.copytree(cache, tmp_path / "score-cache")
    monkeypatch.setenv("KGPROBE_CACHE_DIR", str(tmp_path / "score-cache"))
    return mine


def test_the_demo_preset_resumes_the_demo_folder_without_rescoring(demo_run, tmp_path,
                                                                   tiny_gpt2_dir, capsys,
                                                                   monkeypatch):
    out = _copy_of(demo_run, tmp_path, monkeypatch)
    units = {p.name: p.stat().st_mtime_ns for p in (out / "units").iterdir()}
    results = (out / "results.csv").read_bytes()
    # the preset fills what is not given: the demo on the tiny model, as `kgprobe demo` ran it
    assert main(["study", "premise-ablation", "--preset", "demo", "--model", str(tiny_gpt2_dir),
                 "--limit", "1", "--out", str(out), "--threads", "1"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "units").iterdir()} == units
    assert (out / "results.csv").read_bytes() == results
    # without the preset the settings differ (K, templates): refused, nothing mixed
    assert main(["study", "premise-ablation", "--model", str(tiny_gpt2_dir), "--limit", "1",
                 "--out", str(out), "--threads", "1"]) == 2
    assert "other settings" in capsys.readouterr().err


def test_the_demo_needs_no_pandas(demo_run):
    """`make demo` installs kgprobe alone: a command-line run returns its `Results` without
    reading a DataFrame, so a machine without pandas runs it to the end (pandas is imported
    by the code that asks for a frame)."""
    out, _, done = demo_run
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "results.csv").is_file() and "Traceback" not in done.stderr
    assert Results.from_path(out).frame.shape[0] > 0  # the frame, where pandas is there


#: Where each registered study reads its data, so a config can be built without a model run.
SETTINGS = {"consistency": {}, "memorization": {}, "premise-ablation": {"ontology": "bundled"},
            "multiple-choice": {}, "copen": {"method": "zero-shot", "data": "d"},
            "sta": {"norms": "n"}}


@pytest.mark.parametrize("study", sorted(RUNS))
def test_every_study_takes_the_same_model_options(study):
    from kgprobe.studies.options import ModelSettings

    parser = get_study(study).parser()
    required = ["--out", "o", *[x for k, v in SETTINGS[study].items()
                                for x in (f"--{k}", str(v))]]
    args = parser.parse_args(required)
    assert (args.device, args.dtype, args.threads, args.no_cache) == ("auto", "float32", None,
                                                                     False)
    assert args.batch_size is None or args.batch_size >= 1
    args = parser.parse_args([*required, "--device", "cpu", "--dtype", "bfloat16", "--threads",
                              "2", "--no-cache", "--batch-size", "3"])
    settings = ModelSettings.from_args(args)
    assert settings == ModelSettings("cpu", "bfloat16", 3, 2, False)
    config = get_study(study).config_from_args(
        parser.parse_args([*required, "--model", "m", "--device", "cpu", "--no-cache"]))
    held = config.settings  # the config's ModelSettings, held whole
    assert (held.device, held.cache) == ("cpu", False)


@pytest.mark.parametrize("study", sorted(RUNS))
def test_the_api_and_the_cli_build_equal_configs(study):

    definition = get_study(study)
    given = {**SETTINGS[study], "model": "m", "limit": 2, "device": "cpu", "no_cache": True}
    argv = ["--out", "."]
    for key, value in given.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    from_cli = definition.config_from_args(definition.parser().parse_args(argv))
    from_api = kgprobe.config(study, **given)
    assert from_api == from_cli
    assert from_api.model == "m" and from_api.settings.cache is False


def test_configs_hold_typed_values(tmp_path):
    from kgprobe.reasoning.distractors import Protocol

    config = kgprobe.config("consistency", model="m", candidates="20", ranking="raw")
    assert config.candidates == Protocol(20) and config.ranking == "raw"
    assert config.pinned()["candidates"] == "20"  # config.json spells it as before
    dry = kgprobe.config("premise-ablation", dry_run=True, ontology="bundled")
    assert dry.model is None and dry.pinned()["model"] == "-"
    # --limit 0 is "all" on every study
    assert kgprobe.config("consistency", model="m", limit=0).limit is None
    assert kgprobe.config("premise-ablation", model="m", limit=0, ontology="bundled").limit is None
    assert kgprobe.config("multiple-choice", model="m", limit=0).limit is None
    assert kgprobe.config("sta", model="m", norms="n", limit=0).limit is None
    assert kgprobe.config("copen", model="m", method="zero-shot", data="d", limit=0).limit is None
    assert kgprobe.config("memorization", model="m", limit=0).limit == 0  # None: the paper's
    with pytest.raises(KgprobeError, match="--limit -1"):
        kgprobe.config("memorization", model="m", limit=-1)


def test_no_study_or_command_reads_argparse_private_names():
    root = Path(kgprobe.__file__).parent
    offenders = [f"{path.relative_to(root)}:{n}"
                 for folder in ("studies", "cli") for path in sorted((root / folder).rglob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if "._actions" in line or "_StoreTrueAction" in line
                 or "_StoreFalseAction" in line]
    assert offenders == []
