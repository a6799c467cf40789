"""``study memorization --answers generate``: the model writes its own answer; the ontology grades it.

The request stream is the ranking run's (`requests.plan`): the same records, templates and
seeds. Each request's cloze becomes a *generation prompt* (`generation_prompt`): the statement
up to the slot, so the continuation is the answer; where the template goes on after the slot
with more than punctuation (the DM and RG templates: "One has to be a particular [MASK] if …"),
the whole statement with the slot blanked comes first, on its own line, so the condition is
read before the answer is written. The model continues greedily (`LanguageModel.generate`)
and each answer is graded by `reasoning.grading` against the record's answers:
exact / entailed (with its distance) / wrong / unmapped.

A unit is one (task, template), resumable as in the ranking run; its row holds each rate with
its 95 % interval over records (`studies.stats.mean_interval`, seeded by the run's seed and the
unit), and its predictions every raw answer, the term it mapped to and its grade.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kgprobe.ontology.verbalize import MASK
from kgprobe.studies.open_answers import (  # noqa: F401 (shared with premise ablation)
    BLANK,
    METRICS,
    NOTE,
    generation_prompt,
)
from kgprobe.studies.open_answers import number as _number
from kgprobe.studies.open_answers import pct as _pct

CELL_KEYS = ("task", "template", "masks", "pooling", "split", "n")
COLUMNS = [*CELL_KEYS, *(f"{m}{s}" for m in METRICS for s in ("", "_lo", "_hi")),
           "mean_distance", "answering", "max_new_tokens", "protocol", "study_protocol"]


def taxonomies(config, sets: dict) -> dict:
    """relation → the `reasoning.grading.Taxonomy` its answers are graded by: the ontology the
    sets came from (the bundled one, or ``--store``/``--endpoint``/``--ontology``), with the
    synonyms its triples give; a ``--probes`` folder holds no ontology, so its candidates alone
    (a record's own answer chain still makes its less specific answers entailed)."""
    from kgprobe.reasoning.grading import (
        Taxonomy,
        synonyms_from_triples,
        taxonomy_from_ontology,
    )
    from kgprobe.reasoning.memorizing import CANDIDATES

    if config.probes is not None:
        return {rel: Taxonomy({c: [c] for c in mset.candidates}) for rel, mset in sets.items()}
    if config.source.bundled:
        from kgprobe.ontology.loaders import bundled_source

        source = bundled_source(word=False)
    else:
        source = config.source.load()
    synonyms = synonyms_from_triples(source.triples or ())
    return {rel: taxonomy_from_ontology(source.ontology, relation_kind=CANDIDATES[rel],
                                        synonyms=synonyms, extra=mset.candidates)
            for rel, mset in sets.items()}


def unit_row(grades: Sequence, *, seed: int, key: Sequence) -> dict:
    """A unit's rates over its records, each with its 95 % bootstrap interval."""
    from kgprobe.studies.open_answers import grade_row

    return grade_row(grades, seed=seed, key=key)


def generate_units(config, loaded, planned: list, *, progress: bool) -> list:
    """The run's units: each (task, template) generated, graded and written as it finishes."""
    from kgprobe.studies.runner import Unit

    sets = {unit.task: unit.mset for unit in planned}
    graders: dict = {}
    units = []
    for unit in planned:
        def run(unit=unit):
            if not graders:  # the ontology is read once, and only when a unit is to run
                graders.update(taxonomies(config, sets))
            return run_unit(config, loaded, unit, graders[unit.task], progress=progress)

        key = {"task": unit.task, "template": unit.template, "masks": "-", "pooling": "-",
               "answering": "generate",
               **{k: v for k, v in unit.key.items() if k not in ("task", "template")}}
        units.append(Unit(key, run, len(unit.records)))
    return units


def wrap_for_generation(loaded, cloze: str) -> str:
    """What the model continues: the text up to the slot, after the chat template's
    conversation (the user's turn shows the whole statement, its slot as ___) when
    ``--chat-template`` wraps this model (`models.chat`, set on `loaded` by `use_chat`)."""
    wrap = getattr(getattr(loaded, "inner", loaded), "chat", None)
    if wrap is None:
        return generation_prompt(cloze)
    # The user's turn already shows the whole statement: the assistant starts it afresh.
    return wrap.header(loaded.tokenizer, cloze) + cloze.partition(MASK)[0].rstrip()


def run_unit(config, loaded, unit, taxonomy, *, progress: bool) -> tuple[dict, list[dict]]:
    """One unit's answers, generated in chunks (a live progress bar) and graded."""
    from tqdm import tqdm

    from kgprobe.reasoning.grading import grade, specificity

    train = (r.answers for r in unit.mset.records if r.split == "train")
    model = loaded.trained_on(train)
    prompts = [wrap_for_generation(loaded, req.prompt) for req in unit.requests]
    answers: list[str] = []
    step = 32
    with tqdm(total=len(prompts), desc=f"{unit.task} template {unit.template}", unit="prompt",
              disable=not progress, leave=False) as bar:
        for start in range(0, len(prompts), step):
            part = unit.requests[start:start + step]
            answers += model.generate(prompts[start:start + step],
                                      max_new_tokens=config.max_new_tokens,
                                      candidates=[req.candidates for req in part],
                                      batch_size=config.settings.batch_size)
            bar.update(len(part))
    grades = [grade(a, rec.answers, taxonomy) for a, rec in zip(answers, unit.records)]
    row = {**unit_row(grades, seed=config.seed, key=(unit.task, unit.template)),
           "max_new_tokens": config.max_new_tokens, "study_protocol": "default",
           "protocol": config.candidates.name}
    preds = [{"id": rec.id, "subject": rec.subject, "prompt": prompt, "answers": rec.answers,
              "answer": answer, **g.to_json(), "specificity": specificity(g)}
             for rec, prompt, answer, g in zip(unit.records, prompts, answers, grades)]
    return row, preds


def format_table(rows: Sequence[dict]) -> str:
    """The report's table: each rate with its interval, in percent."""
    head = ["task", "template", "n", *METRICS, "distance"]
    lines = ["  ".join(f"{h:>22}" if i > 2 else f"{h:14}" if i == 0 else f"{h:>8}"
                       for i, h in enumerate(head))]
    from kgprobe.studies.controls import control_view, shown_controls

    controls = shown_controls(rows, METRICS)
    for row in rows:
        lines.append(_line(row))
        for control in controls:  # indented under the cell: the controls' answers graded
            view = control_view(row, control, METRICS)
            if view is not None:
                lines.append(_line({**view, "task": f"  {control}", "template": "",
                                    "n": row.get("n", "")}))
    return "\n".join(lines)


def _line(row: dict) -> str:
    cells = [f"{row.get('task', ''):14}", f"{row.get('template', ''):>8}", f"{row.get('n', ''):>8}"]
    for m in METRICS:
        cells.append(f"{_pct(row, m):>22}")
    d = _number(row.get("mean_distance"))
    cells.append(f"{'-' if d != d else f'{d:.2f}':>22}")
    return "  ".join(cells)


def observations(out: Path, cells: Sequence[str]) -> list[dict]:
    """One observation per graded record (`Study.observations`): its cell, and its grades as
    0/1 metrics, so `kgprobe compare` pairs two generation runs record by record."""
    from kgprobe.studies.stats import read_predictions

    out_rows = []
    for p in read_predictions(Path(out)):
        if "grade" not in p:
            continue
        g = p["grade"]
        out_rows.append({**{c: p.get(c) for c in cells}, "protocol": p.get("protocol") or "all",
                         "item": str(p["id"]), "accuracy": float(g in ("exact", "entailed")),
                         **{name: float(g == name) for name in ("exact", "entailed", "wrong",
                                                                "unmapped")},
                         "specificity": float(p.get("specificity", 0.0))})
    return out_rows
