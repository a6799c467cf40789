"""Each premise-ablation option's value, read from the command line and checked (one line and
exit 2 for a bad one), and the chained items' options checked together (`check_chains`): kept
apart from `config.py`, which assembles them into `AblationConfig` and checks it on construction.
"""

from __future__ import annotations

import argparse

from kgprobe.errors import StudyError
from kgprobe.studies.options import comma_list


def soft_recipe(args: argparse.Namespace, templates: tuple[str, ...],
                paper: bool = False) -> tuple[str, int]:
    """``--soft-recipe`` and the epochs: "paper" only where a soft template trains (a manual
    run pins what it always did), with Appendix A's 100 epochs unless ``--soft-epochs`` is
    given. Under ``--protocol paper`` the recipe defaults to Appendix A's (`AblationConfig.check_paper`
    refuses another)."""
    recipe = getattr(args, "soft_recipe", None) or ("paper" if paper else "default")
    if "soft" not in templates:
        return "default", args.soft_epochs
    if recipe == "paper" and args.soft_epochs == 30:  # the option's default
        return recipe, 100
    return recipe, args.soft_epochs


#: ``--distractor-kind``: distractors that name the prompt's candidates, or any irrelevant ones
DISTRACTOR_KINDS = ("naming", "unrelated")
#: ``--premise-order``: chained items' premises in chain order, or in a seeded shuffled order
PREMISE_ORDERS = ("ordered", "shuffled")


def check_chains(config) -> None:
    """Chained items' settings together (`AblationConfig.check`): a known premise order and
    distractor kind, and the manual templates of the default protocol, which write the chains."""
    if config.premise_order not in PREMISE_ORDERS:
        raise StudyError(f"--premise-order {config.premise_order}: use ordered or shuffled")
    if config.deep and (config.protocol == "paper" or tuple(config.templates) != ("manual",)):
        raise StudyError("--depth/--distractors/--premise-order: chained items are written with "
                         "the manual templates of the default protocol; pass --templates manual "
                         "(and no --protocol paper)")
    if config.distractor_kind not in DISTRACTOR_KINDS:
        raise StudyError(f"--distractor-kind {config.distractor_kind}: use "
                         f"{' or '.join(DISTRACTOR_KINDS)}")


def premises_option(args: argparse.Namespace, paper: bool) -> tuple[str, ...]:
    """``--premises true`` or ``true,counterfactual`` (read against the true grid)."""
    from kgprobe.reasoning.counterfactual import PREMISES

    raw = getattr(args, "premises", None) or "true"
    text = ",".join(raw) if isinstance(raw, (list, tuple)) else str(raw)
    values = tuple(comma_list(text, choices=PREMISES, option="--premises"))
    if "true" not in values:
        raise StudyError(f"--premises {text}: the counterfactual cells are read against the "
                         "true ones; use --premises true,counterfactual")
    if paper and "counterfactual" in values:
        raise StudyError("--premises counterfactual: the paper protocol asks the paper's items "
                         "only; drop --protocol paper")
    return tuple(p for p in PREMISES if p in values)


def memorized_sample(args: argparse.Namespace, paper: bool) -> int | None:
    """``--memorized-sample N``: at least 2 premises per relation (one cannot be split in
    halves); the paper protocol splits its own test sets."""
    size = getattr(args, "memorized_sample", None)
    if size is None:
        return None
    if paper:
        raise StudyError("--memorized-sample: the paper protocol splits its own test sets; drop it")
    if int(size) < 2:
        raise StudyError(f"--memorized-sample {size}: give at least 2 premises per relation, "
                         "e.g. --memorized-sample 20")
    return int(size)


#: the deepest chain and the most distractors a run may ask for
MAX_DEPTH, MAX_DISTRACTORS = 6, 20


def depth_options(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``--depth 1,2,3`` and ``--distractors 0,2``: sorted, distinct, in range."""
    out = []
    for option, low, high in (("depth", 1, MAX_DEPTH), ("distractors", 0, MAX_DISTRACTORS)):
        raw = getattr(args, option, None)  # kgprobe.run may pass a list: depth=[1, 2, 3]
        text = ",".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(low if raw is None else raw)
        values = comma_list(text)
        if not values or not all(v.isdigit() and low <= int(v) <= high for v in values):
            raise StudyError(f"--{option} {text}: use comma-separated whole numbers from {low} "
                             f"to {high}, e.g. --{option} {'1,2,3' if low else '0,2'}")
        out.append(tuple(sorted({int(v) for v in values})))
    return out[0], out[1]
