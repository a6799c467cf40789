"""The OntoProbe paper's §5 probe: 20-option multiple-choice questions, accuracy per set.

The paper asked ChatGPT; here any causal (instruct) model answers by the option letter it
finds most likely (`kgprobe.prompts.multiple_choice`), or, with ``answer="text"``, any model
ranks the options' texts in an ``Answer: [MASK]`` slot after the question's stem (the cloze
form small models need). Memorizing sets (TP…RG) ask for the
finest-grained gold; reasoning sets (``rdfs9-12`` …) state premise P2 and give P1 not at all
(``-02``), implicitly (``-12``) or explicitly (``-22``): the rows of the paper's Table 6.

Besides accuracy, each row reports the most often predicted letter and its share: a small
model that always answers "(a)" scores near chance (5%) for a reason worth seeing. The
calibrated accuracy takes that letter preference out: each letter's mean log-probability over
the set's questions is subtracted before the argmax (a prior correction in the spirit of Zhao
et al. 2021's contextual calibration; it uses no gold labels, and gold letters are spread
over the options).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from kgprobe.reasoning.memorizing import RELATIONS
from kgprobe.studies.multiple_choice.config import COLUMNS, NAME, MultipleChoiceConfig  # noqa: F401
from kgprobe.studies.runner import Unit

# the question sets live with the request stream; named here as well, where they always were
from .requests import (  # noqa: F401
    P1_SETTINGS,
    SETS,
    QuestionSet,
    QuestionUnit,
    bundled_dir,
    choose,
    find_sets,
    instruction_of,
    plan,
)



def letter_bias(predictions: Sequence[str]) -> tuple[str, float]:
    if not predictions:
        return "-", 0.0
    letter, count = Counter(predictions).most_common(1)[0]
    return letter, count / len(predictions)


def calibrated(scores: Sequence[dict[str, float]]) -> list[str]:
    """Per question, the letter with the highest log-probability minus that letter's mean
    over all questions (letters missing from a question are not candidates for it)."""
    totals: dict[str, list[float]] = {}
    for row in scores:
        for letter, value in row.items():
            totals.setdefault(letter, []).append(value)
    prior = {letter: sum(v) / len(v) for letter, v in totals.items()}
    return [max(row, key=lambda l: row[l] - prior[l]) for row in scores]


def training_answers(task: str):
    """The gold answers of the memorizing training records of the relation a question set
    asks (a memorizing set's relation; a reasoning set's conclusion), from the bundled sets:
    every model is handed them (`LanguageModel.trained_on`), the frequency baseline counts
    them, a pretrained model reads nothing. A relation with no memorizing set (rdfs7's fact)
    has none, and the frequency baseline answers by its seeded order alone."""
    from kgprobe.reasoning.items import RULE_RELATIONS
    from kgprobe.reasoning.memorizing import load_reference

    relation = RULE_RELATIONS[task][2] if task in RULE_RELATIONS else task
    if relation not in RELATIONS:
        return
    # the bundled set's records alone (`reference_sets` would also word every property
    # subject, seconds per call, which the answers do not need)
    for record in load_reference(relation):
        if record.split == "train":
            yield record.answers


def run_multiple_choice(model: str, out: str | Path, *, progress: bool = True,
                        **settings) -> list[dict]:
    """Run (or resume) the probe and return one row per question set (`settings`:
    `MultipleChoiceConfig`), through the study's lifecycle (`contract.Study.execute`): each
    control answers the very same questions and joins results.csv with the report."""
    from kgprobe.studies.options import ModelSettings

    from kgprobe.studies.registry import get_study

    config = MultipleChoiceConfig(model, settings=ModelSettings.taken_from(settings, batch_size=4),
                                  **settings)
    return get_study(NAME).run_rows(config, out, progress=progress)


def question_unit(config: MultipleChoiceConfig, loaded, planned: QuestionUnit) -> Unit:
    """One question set's unit, answered by `loaded` (the run's model or a control)."""
    from kgprobe.prompts.multiple_choice import score_multiple_choice, score_option_texts

    answer, instruction = config.answer, instruction_of(config)
    q, prompts, golds = planned.set, planned.prompts, planned.golds

    def run():
        trained = loaded.trained_on(training_answers(q.task))
        if answer == "text":
            from kgprobe.models.score_cache import cached_scorer

            scorer = cached_scorer(trained.scorer(), loaded, enabled=config.settings.cache)
            result = score_option_texts(scorer, prompts, golds)
        else:
            result = score_multiple_choice(
                trained, prompts, golds, batch_size=config.settings.batch_size,
                use_chat_template=_template(config.chat), instruction=instruction)
        letter, share = letter_bias(result.predictions)
        # Calibration removes a preference for letters; option texts have none to remove.
        fixed = calibrated(result.scores) if answer == "letter" else None
        preds = []
        for k, (p, g, pred, row) in enumerate(zip(prompts, result.golds, result.predictions,
                                                  result.scores)):
            rec = {"prompt": p, "gold": g, "predicted": pred,
                   "scores": {l: round(v, 4) for l, v in row.items()}}
            if fixed is not None:
                rec["calibrated"] = fixed[k]
            preds.append(rec)
        cal_acc: float | str = "-"
        if fixed is not None:
            cal_acc = sum(c == g for c, g in zip(fixed, result.golds)) / max(1, len(prompts))
        return {"n": len(prompts), "accuracy": result.accuracy, "calibrated_accuracy": cal_acc,
                "top_letter": letter, "top_letter_share": share}, preds

    return Unit({"set": q.set, "task": q.task, "p1": q.p1, "answer": answer}, run, len(prompts))


def format_table(rows: Sequence[dict]) -> str:
    def pct(v) -> str:
        return "-" if v == "-" else f"{100 * float(v):.1f}%"

    lines = [f"{'set':11s} {'task':14s} {'P1':10s} {'answer':6s} {'n':>5s} {'accuracy':>9s} "
             f"{'calibrated':>11s}  most chosen letter"]
    from kgprobe.studies.controls import shown_controls

    controls = shown_controls(rows, ("accuracy",))
    for r in rows:
        lines.append(f"{r['set']:11s} {r['task']:14s} {r['p1']:10s} {r['answer']:6s} {int(r['n']):5d} "
                     f"{pct(r['accuracy']):>9s} {pct(r['calibrated_accuracy']):>11s}"
                     f"  ({r['top_letter']}) {100 * float(r['top_letter_share']):.0f}%")
        for c in controls:  # indented under the set: the control on the same questions
            if r.get(f"accuracy_{c}", "") != "":
                lines.append(f"  {c:42s} {int(r['n']):5d} {pct(r[f'accuracy_{c}']):>9s}"
                             f"  [{pct(r[f'accuracy_{c}_lo'])}, {pct(r[f'accuracy_{c}_hi'])}]")
    lines.append("chance: 5.0% with 20 options")
    return "\n".join(lines)


def _template(chat: bool | str | None) -> bool | str | None:
    """`letter_logprobs`' setting: a FILE's path becomes its template text."""
    return Path(chat).read_text(encoding="utf-8") if isinstance(chat, str) else chat
