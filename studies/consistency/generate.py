"""``study consistency --answers generate``: a statement is believed when the model writes its gold.

Each statement's memorization probe (`probes.prompt_of`) becomes a generation prompt
(`studies.open_answers.generation_prompt`: the statement up to its slot), the model continues
it greedily (`LanguageModel.generate`; each distinct prompt once, as the ranking run scores
each distinct prompt once) and the answer is graded against the statement's gold by the RDFS
closure (`reasoning.grading`: exact / entailed / wrong / unmapped).

**Believed = exact.** A statement ("a dog is a mammal") is believed when the answer names its
gold. An *entailed* answer (a true superclass: "a dog is an animal") commits the model to a
weaker statement, not to this one, so it does not count; nor does a true answer more specific
than the gold, which the grader reads as wrong (it grades upward from the gold only). With
that, a statement's rank is 1 (believed) or one past its candidates (not), and the derivation
table (`beliefs.consistency_table`, ``--believe-at 1``), its matched controls and its
intervals follow exactly as in a ranking run; ``--believe-at`` other than 1 would read nothing
new and is refused.

**Controls.** ``frequency``, ``copy`` and ``random`` answer with their generative analogues
(`models.baselines.baseline_answers`) through the same units. The content-free prior has no
generative analogue here (a prompt cut at its slot, its subject removed, asks nothing), so the
reference is ``frequency`` by default and ``--reference prior`` is refused in one line.
"""

from __future__ import annotations

from kgprobe.errors import StudyError

#: statements.csv of a generation run: each relation × template's grade rates.
UNIT_COLUMNS = ["relation", "template", "n", "accuracy", "exact", "entailed", "wrong",
                "unmapped", "R@1", "MRR", "max_new_tokens", "protocol"]
ANSWERS = ("rank", "generate")


def check(answers: str, max_new_tokens: int, believe_at: int, reference: str | None) -> str:
    """The reference a run subtracts (`reference` None: the default for `answers`), after
    refusing in one line what generation cannot run."""
    if answers not in ANSWERS:
        raise StudyError(f"--answers {answers}: use one of {', '.join(ANSWERS)}")
    if answers == "rank":
        return reference or "prior"
    if not 1 <= int(max_new_tokens) <= 256:
        raise StudyError(f"--max-new-tokens {max_new_tokens}: give 1 to 256")
    if believe_at != 1:
        raise StudyError(f"--believe-at {believe_at}: with --answers generate a statement is "
                         "believed when its answer is the gold; drop --believe-at")
    if reference == "prior":
        raise StudyError("--reference prior: the content-free prior has no open answer; use "
                         "--reference frequency, copy or random with --answers generate")
    return reference or "frequency"


def taxonomies(setup, relations) -> dict:
    """relation → the `reasoning.grading.Taxonomy` its statements are graded by: the classes,
    or the properties (named also by the pattern middle their prompts write), of the ontology
    asked, with the synonyms its triples give; every candidate a term."""
    from kgprobe.ontology.verbalize import load_templates, pattern_middle
    from kgprobe.reasoning.grading import synonyms_from_triples, taxonomy_from_ontology
    from kgprobe.reasoning.items import Verbalizer

    config, onto = setup.config, setup.ontology
    templates = load_templates(lang=config.source.language())
    synonyms = synonyms_from_triples(setup.triples or ())
    verb = Verbalizer(onto, templates, pseudowords=False)
    named = {**synonyms, **{iri: [*synonyms.get(iri, ()), pattern_middle(verb.pattern(iri))]
                            for iri in onto.properties}}
    out = {}
    for rel in relations:
        kind = "class" if templates[rel].candidates == "class" else "property"
        pool = {c for (r, _), probes in setup.probes.items() if r == rel
                for p in probes for c in p.candidates}
        out[rel] = taxonomy_from_ontology(onto, relation_kind=kind, extra=sorted(pool),
                                          synonyms=synonyms if kind == "class" else named)
    return out


def generate_unit(setup, probes: list, model, taxonomy, *, desc: str,
                  progress: bool) -> tuple[dict, list[dict]]:
    """Every statement of one relation × template answered and graded; each distinct prompt
    asked once. A prediction has the ranking run's fields (``rank`` 1 when exact, else one
    past the candidates) and the raw answer, its term and grade."""
    from tqdm import tqdm

    from kgprobe.reasoning.grading import grade
    from kgprobe.studies.open_answers import RATES, generation_prompt

    from .probes import distinct_requests

    config = setup.config
    asked = distinct_requests(probes)
    texts = [generation_prompt(prompt) for prompt, _ in asked]
    answers: list[str] = []
    with tqdm(total=len(texts), desc=desc, unit="prompt", disable=not progress, leave=False) as bar:
        for start in range(0, len(texts), 32):
            answers += model.generate(texts[start:start + 32], max_new_tokens=config.max_new_tokens,
                                      candidates=[c for _, c in asked[start:start + 32]],
                                      batch_size=config.settings.batch_size)
            bar.update(min(32, len(texts) - start))
    by_request = {key: (text, answer) for key, text, answer in zip(asked, texts, answers)}
    preds = []
    for p in probes:
        text, answer = by_request[(p.prompt, p.candidates)]
        g = grade(answer, [p.statement.answer], taxonomy)
        rank = 1 if g.grade == "exact" else len(p.candidates) + 1
        s = p.statement
        preds.append({"statement": s.key, "relation": s.relation, "subject": s.subject,
                      "other": s.other, "answer": s.answer, "prompt": text, "cloze": p.prompt,
                      "n_candidates": len(p.candidates), "rank": rank, "rr": 1.0 / rank,
                      "top": [[answer, 0.0, g.grade == "exact"]], "generated": answer,
                      **{k: v for k, v in g.to_json().items()}})
    n = len(preds)
    metrics = {"n": n, **{name: sum(q["grade"] == name for q in preds) / n if n else 0.0
                          for name in RATES},
               "max_new_tokens": config.max_new_tokens, "protocol": setup.protocol.name}
    metrics["accuracy"] = metrics["exact"] + metrics["entailed"]
    # the ranking run's columns, from the ranks above: R@1 is the exact rate
    metrics.update({"R@1": metrics["exact"], "MRR": sum(q["rr"] for q in preds) / n if n else 0.0})
    return metrics, preds


def generate_units(setup, loaded, progress: bool, training_answers) -> list:
    """The run's units under ``--answers generate``: one per relation × template, as the
    ranking run's (`study.units_of`), the model handed each relation's training answers."""
    from kgprobe.studies.runner import Unit

    graders: dict = {}
    units = []
    for (relation, t), probes in setup.probes.items():
        def run(probes=probes, relation=relation, t=t):
            if not graders:  # built once, when a unit is to run
                graders.update(taxonomies(setup, {r for r, _ in setup.probes}))
            model = loaded.trained_on(training_answers(setup, relation))
            return generate_unit(setup, probes, model, graders[relation],
                                 desc=f"{relation} template {t}", progress=progress)

        units.append(Unit({"relation": relation, "template": t, "answering": "generate"}, run,
                          len(probes)))
    return units
