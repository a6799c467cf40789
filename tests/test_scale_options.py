"""`--preset paper`, `--candidates`, `--device`, `--dtype`, `--no-cache` on the study commands."""

from __future__ import annotations

from kgprobe.cli import build_parser
from kgprobe.studies.premise_ablation.cli import apply_preset


def test_preset_paper_is_the_paper_scale_study():
    args = build_parser().parse_args(["study", "premise-ablation", "--model", "m", "--out", "o",
                                      "--limit", "3", "--candidates", "20", "--preset", "paper"])
    apply_preset(args)
    assert (args.limit, args.pairs, args.templates, args.candidates) == (0, 10, "manual", "all")
    assert (args.device, args.dtype, args.no_cache) == ("auto", "float32", False)


def test_memorization_takes_the_same_scale_options():
    args = build_parser().parse_args(["study", "memorization", "--model", "m", "--out", "o",
                                      "--device", "cpu", "--dtype", "bfloat16", "--no-cache"])
    assert (args.device, args.dtype, args.no_cache) == ("cpu", "bfloat16", True)
