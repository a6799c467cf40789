"""``study premise-ablation --answers generate``: the model completes each cell's prompt itself.

**What is asked.** The cells are the ranking run's: the same items, the same premise split
(every premise's memorizing probe is still *ranked*, `study.classify_premises`, so an item
lands in the same implicit / not-given cells whether the run ranks or generates, and the two
runs compare cell by cell), the same manual templates and pseudoword pairs. Each request of a
cell (`study.cell_requests`: the premises the cell writes, the conjunction, the hypothesis)
becomes a generation prompt (`studies.open_answers.generation_prompt`: the text up to the
slot; where the hypothesis goes on after it, as rdfs7's ``[X] [MASK] [Y] .``, the blanked
statement first), and the model continues it greedily (`LanguageModel.generate`).

**Pseudowords stay vectors.** A causal LM generates from input embeddings with each slot's
vector in place (`models.vector_generation`), exactly as its scorer places them; writing the
entities' real labels instead would let the model answer from what it knows about them, which
is what the study takes away. So no ``--no-pseudowords`` fallback: a served model, which takes
text only, is refused in one line (it cannot rank these prompts either). The baselines read
the text and answer as they rank (`models.baselines.baseline_answers`).

**Grading.** Each answer is mapped to the ontology's terms and graded against the item's gold
by the RDFS closure (`reasoning.grading`, the memorization study's grader): *exact* the gold,
*entailed* a true superclass (superproperty) of it, with its distance, *wrong* any other term
— the premise's own class included (rdfs9's ``[X] is a person`` answered *person* where
*agent* follows: true of ``[X]``, but the copy, not the inference) — and *unmapped*. Class
hypotheses map to classes, property hypotheses to properties (named by label, synonyms and
the pattern the prompts write them with).

**Scope.** Manual templates of the default protocol's true grid (soft templates are trained
to rank; chained and counterfactual cells and the paper protocol rank): other settings are
refused in one line before anything loads (`answers.check`, on the config's construction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kgprobe.studies.open_answers import METRICS


#: results.csv of a generation run: one row a cell and template, and the template average
#: (variant "mean"), each rate with its 95 % interval over items.
COLUMNS = ["rule", "p1", "p2", "template", "variant", "n", "n_items",
           *(f"{m}{s}" for m in METRICS for s in ("", "_lo", "_hi")), "mean_distance",
           "answering", "max_new_tokens", "protocol"]
CELL = ("rule", "p1", "p2", "template", "variant")
def taxonomies(data, source) -> dict:
    """candidates key → the `reasoning.grading.Taxonomy` an item's answer is graded by: the
    classes, or the properties (named also by the pattern middle rdfs7's prompts write), of
    the ontology the items came from, with the synonyms its triples give."""
    from kgprobe.ontology.verbalize import pattern_middle
    from kgprobe.reasoning.grading import synonyms_from_triples, taxonomy_from_ontology

    onto = data.verbalizer.onto
    synonyms = synonyms_from_triples((source.triples if source is not None else None) or ())
    patterned = {iri: [*synonyms.get(iri, ()), pattern_middle(data.verbalizer.pattern(iri))]
                 for iri in onto.properties}
    out = {}
    for key, pool in data.candidates.items():
        kind = "class" if key == "class" else "property"
        out[key] = taxonomy_from_ontology(onto, relation_kind=kind, extra=pool,
                                          synonyms=synonyms if kind == "class" else
                                          {**synonyms, **patterned})
    return out


def generate_cell(setup, model, graders: dict, requests: list, rule: str, p1: str, p2: str,
                  variant: int) -> tuple[dict, list[dict]]:
    """One cell's `requests` completed by `model` and graded: its row and every answer."""
    from kgprobe.reasoning.grading import grade, specificity
    from kgprobe.studies.open_answers import generation_prompt, grade_row

    config = setup.config
    if not requests:
        return {"n": 0, "n_items": 0}, []
    prompts = [generation_prompt(r.prompt) for r in requests]
    answers = model.generate(prompts, max_new_tokens=config.max_new_tokens,
                             candidates=[r.candidates for r in requests],
                             batch_size=config.settings.batch_size,
                             pseudowords=[dict(r.vectors or {}) for r in requests])
    items = {item.id: item for item in setup.data.items[rule]}
    grades = [grade(a, items[r.item].answers, graders[items[r.item].candidates_key])
              for a, r in zip(answers, requests)]
    row = {**grade_row(grades, seed=config.seed, key=(rule, p1, p2, variant),
                       items=[r.item for r in requests]),
           "n_items": len({r.item for r in requests})}
    preds = [{"item": r.item, "pair": r.setting["pair"], "prompt": prompt,
              "answers": items[r.item].answers, "answer": answer, **g.to_json(),
              "specificity": specificity(g), "protocol": setup.data.protocol.name,
              "max_new_tokens": config.max_new_tokens}
             for r, prompt, answer, g in zip(requests, prompts, answers, grades)]
    return row, preds


def generate_units(setup, model, source, requests_for: Callable) -> list:
    """Every cell of the true grid under every manual template, as resumable units;
    `requests_for(rule, p1, p2, variant)` gives a cell's requests (`study.cell_requests`,
    handed in: the study imports this module, not the other way round)."""
    from kgprobe.studies.runner import Unit

    from .cells import variants
    from .columns import SETTINGS

    config, graders = setup.config, {}
    units = []
    for rule in config.rules:
        for p1 in SETTINGS:
            for p2 in SETTINGS:
                for variant in variants(setup.data.templates, rule, "manual"):
                    def run(rule=rule, p1=p1, p2=p2, variant=variant):
                        if not graders:  # the taxonomies are built once, when a unit runs
                            graders.update(taxonomies(setup.data, source))
                        row, preds = generate_cell(setup, model, graders,
                                                   requests_for(rule, p1, p2, variant),
                                                   rule, p1, p2, variant)
                        return {**row, "max_new_tokens": config.max_new_tokens,
                                "protocol": setup.data.protocol.name}, preds

                    key = {"rule": rule, "p1": p1, "p2": p2, "template": "manual",
                           "variant": variant, "answering": "generate"}
                    units.append(Unit(key, run, len(setup.data.items[rule]) * config.pairs))
    return units


# ------------------------------------------------------------------ results and report


def generated(out: Path) -> bool:
    """Whether a run folder holds open answers (``answers: generate`` in its config.json)."""
    import json

    try:
        return json.loads((Path(out) / "config.json").read_text(encoding="utf-8")).get(
            "answers") == "generate"
    except (OSError, ValueError, AttributeError):
        return False


def cell_rows(preds: Sequence[dict], seed: int) -> list[dict]:
    """results.csv's rows from the predictions: each cell under each template, then the
    template average of each cell (variant "mean": every template's answers, an item's
    answers resampled together)."""
    from kgprobe.reasoning.grading import Grade
    from kgprobe.studies.open_answers import grade_row

    groups: dict[tuple, list[dict]] = {}
    for p in preds:
        cell = tuple(str(p.get(c)) for c in CELL)
        groups.setdefault(cell, []).append(p)
        groups.setdefault((*cell[:4], "mean"), []).append(p)
    rows = []
    for cell in sorted(groups, key=lambda c: (c[0], c[1], c[2], c[3], c[4] == "mean", c[4])):
        group = groups[cell]
        grades = [Grade(p["grade"], p.get("term"), p.get("label"), p.get("matched", ""),
                        p.get("distance")) for p in group]
        row = grade_row(grades, seed=seed, key=cell, items=[p["item"] for p in group])
        rows.append({**dict(zip(CELL, cell)), **row,
                     "n_items": len({p["item"] for p in group}), "answering": "generate",
                     "max_new_tokens": group[0].get("max_new_tokens", ""),
                     "protocol": group[0].get("protocol") or "all"})
    return rows


def write_generate_report(out: str | Path) -> Path:
    """results.csv and report.md of a generation run, from its predictions (and its
    controls'), so `kgprobe report RUN` rebuilds them."""
    import json

    from kgprobe.atomic import write_text
    from kgprobe.studies.controls import FOLDER
    from kgprobe.studies.open_answers import NOTE, pct
    from kgprobe.studies.runner import rows_to_csv
    from kgprobe.studies.stats import read_predictions

    out = Path(out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    seed = int(config.get("seed", 0))
    rows = cell_rows(read_predictions(out), seed)
    write_text(out / "results.csv", rows_to_csv(rows, COLUMNS))
    controls = {d.name: {tuple(str(r[c]) for c in CELL): r
                         for r in cell_rows(read_predictions(d), seed)}
                for d in sorted((out / FOLDER).glob("*")) if d.is_dir()}
    lines = ["# Premise-ablation study, open answers graded by the ontology", "",
             f"Model `{config.get('model')}`, rules {', '.join(config.get('rules', []))}, "
             f"{config.get('pairs')} pseudoword pair(s), seed {seed}, at most "
             f"{config.get('max_new_tokens')} new tokens. Rates in % with their 95 % interval "
             "over items; template averages (variant `mean`) below each cell's templates."
             + (f" Under each cell, the controls' accuracy on the same prompts "
                f"({', '.join(controls)})." if controls else ""), "",
             "| rule | P1 | P2 | variant | items | " + " | ".join(METRICS) + " |",
             "|" + "---|" * (5 + len(METRICS))]
    for row in rows:
        cell = tuple(str(row[c]) for c in CELL)
        lines.append(f"| {row['rule']} | {row['p1']} | {row['p2']} | {row['variant']} | "
                     f"{row['n_items']} | " + " | ".join(pct(row, m) for m in METRICS) + " |")
        for name, table in controls.items():
            if cell in table:
                lines.append(f"| | | | {name} | | {pct(table[cell], 'accuracy')} |"
                             + " |" * (len(METRICS) - 1))
    path = out / "report.md"
    write_text(path, "\n".join(lines) + NOTE.replace("records", "items") + "\n")
    return path


def observations(out: Path) -> list[dict]:
    """One observation per answer (`Study.observations`): its cell, its item and its grades
    as 0/1 metrics, so `kgprobe compare` pairs two generation runs item by item."""
    from kgprobe.studies.stats import read_predictions

    return [{**{c: p.get(c) for c in CELL}, "protocol": p.get("protocol") or "all",
             "item": str(p["item"]), "pair": p.get("pair"),
             "accuracy": float(p["grade"] in ("exact", "entailed")),
             **{g: float(p["grade"] == g) for g in ("exact", "entailed", "wrong", "unmapped")},
             "specificity": float(p.get("specificity", 0.0))}
            for p in read_predictions(Path(out)) if "grade" in p]
