"""`--preset paper`, `--candidates`, `--device`, `--dtype`, `--no-cache` on the study commands."""

from __future__ import annotations

from kgprobe.cli import build_parser
from kgprobe.studies.premise_ablation.config import apply_preset


def test_preset_paper_is_the_paper_scale_study():
    args = build_parser().parse_args(["study", "premise-ablation", "--model", "m", "--out", "o",
                                      "--preset", "paper"])
    apply_preset(args)
    # manual and soft side by side, as the paper's Table 4 reports every model
    assert (args.limit, args.pairs, args.templates, args.candidates) == (0, 10, "manual,soft",
                                                                         "all")
    assert args.soft_recipe == "paper"
    assert (args.device, args.dtype, args.no_cache) == ("auto", "float32", False)


def test_a_preset_fills_only_the_options_left_at_their_defaults():
    args = build_parser().parse_args(["study", "premise-ablation", "--model", "m", "--out", "o",
                                      "--limit", "3", "--candidates", "20", "--preset", "paper"])
    apply_preset(args)
    assert (args.limit, args.pairs, args.templates, args.candidates) == (3, 10, "manual,soft",
                                                                         "20")
    args = build_parser().parse_args(["study", "premise-ablation", "--out", "o", "--preset",
                                      "demo"])
    apply_preset(args)
    assert (args.model, args.limit, args.candidates, args.soft_epochs) == ("smollm2-135m", 6,
                                                                            "20", 5)


def test_pairs_default_to_five_outside_the_demo_preset():
    """Five pairs put the pseudoword draw in the interval (items × pairs); the demo keeps one
    so `make demo` keeps its time, and the paper protocol samples the paper's 10."""
    from kgprobe.studies.premise_ablation.config import config_from_args

    def pairs(*argv: str) -> int:
        args = build_parser().parse_args(["study", "premise-ablation", "--model", "m",
                                          "--out", "o", *argv])
        return config_from_args(args).pairs

    assert pairs() == 5
    assert pairs("--preset", "demo") == 1
    assert pairs("--protocol", "paper") == 10
    assert pairs("--pairs", "2") == 2


def test_memorization_takes_the_same_scale_options():
    args = build_parser().parse_args(["study", "memorization", "--model", "m", "--out", "o",
                                      "--device", "cpu", "--dtype", "bfloat16", "--no-cache"])
    assert (args.device, args.dtype, args.no_cache) == ("cpu", "bfloat16", True)


def test_soft_recipe_paper_trains_a_hundred_epochs_and_is_pinned_only_where_used():
    from kgprobe.studies.premise_ablation.config import config_from_args

    def config(*argv: str):
        args = build_parser().parse_args(["study", "premise-ablation", "--model", "m",
                                          "--out", "o", *argv])
        return config_from_args(args)

    soft = config("--templates", "manual,soft", "--soft-recipe", "paper")
    assert (soft.soft_recipe, soft.soft_epochs) == ("paper", 100)
    assert soft.pinned()["soft_recipe"] == "paper"
    assert config("--templates", "soft", "--soft-recipe", "paper",
                  "--soft-epochs", "3").soft_epochs == 3
    # --preset paper asks for the recipe; a manual run trains nothing and pins what it did
    manual = config("--preset", "paper", "--templates", "manual")
    assert manual.soft_recipe == "default" and "soft_recipe" not in manual.pinned()
    assert config("--preset", "paper").soft_recipe == "paper"
    default = config("--templates", "soft")
    assert (default.soft_recipe, default.soft_epochs) == ("default", 30)
    # the paper protocol trains its soft templates by the paper's recipe, 100 epochs
    paper = config("--protocol", "paper", "--templates", "manual,soft")
    assert (paper.soft_recipe, paper.soft_epochs) == ("paper", 100)
    assert config("--protocol", "paper").templates == ("manual",)  # the official prompts alone


def test_the_demo_preset_asks_naming_distractors_where_chains_can_be_asked():
    """With filtered ranking a copier that reads wordings is at the ceiling where every premise
    is written and nothing else is; the demo's design writes naming distractors beside them
    (depth 1 and 2, 0 and 2 distractors), so every demo run has the cell a reasoner can win."""
    from kgprobe.studies.premise_ablation.config import config_from_args

    def config(*argv: str):
        args = build_parser().parse_args(["study", "premise-ablation", "--model", "m",
                                          "--out", "o", "--ontology", "bundled", *argv])
        return config_from_args(args)

    demo = config("--preset", "demo")
    assert demo.deep and (demo.depth, demo.distractors) == ((1, 2), (0, 2))
    assert demo.distractor_kind == "naming"
    assert config("--preset", "demo", "--distractors", "0,4").distractors == (0, 4)  # given
    # chains are asked with manual templates under the default protocol only: soft templates
    # (or the paper protocol) keep the demo's other settings, without chains, not an error
    assert not config("--preset", "demo", "--templates", "manual,soft").deep
    assert not config("--preset", "demo", "--protocol", "paper").deep
    # the demo classifies a sample of premises besides its items' own; the paper protocol
    # splits its own test sets, so the preset leaves that out there
    assert demo.memorized_sample == 20 and demo.limit == 6
    assert config("--preset", "demo", "--protocol", "paper").memorized_sample is None
    assert not config().deep  # without the preset: the study alone, as before


def test_the_default_protocol_refuses_a_fraction():
    """Known is absolute (ranked first, beyond the frequency control): no share to set."""
    import pytest
    from kgprobe.errors import StudyError
    from kgprobe.studies.premise_ablation.config import config_from_args

    args = build_parser().parse_args(["study", "premise-ablation", "--model", "m", "--out", "o",
                                      "--ontology", "bundled", "--fraction", "0.3"])
    with pytest.raises(StudyError, match="--fraction"):
        config_from_args(args)
