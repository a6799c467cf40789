"""`kgprobe export lm-eval`: a task folder lm-evaluation-harness 0.4 loads with ``--include_path``.

One YAML and one JSONL file per task (a memorizing relation × manual template, or a reasoning
rule), a group YAML per study (``kgprobe_memorizing``, ``kgprobe_reasoning``) and ``utils.py``
(`harness_utils`: R@1, R@5, MRR as kgprobe ranks). The YAMLs point at the JSONL files by
absolute path (lm-eval hands ``data_files`` to `datasets.load_dataset` relative to its own
working directory), so a moved folder is exported again.

What the probes cannot carry into a text engine is written into every YAML's metadata (not
lm-eval's ``description``, which lm-eval would prepend to every prompt and so change the scores).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Sequence

from kgprobe.atomic import write_jsonl, write_text
from kgprobe.errors import KgprobeError
from kgprobe.prompts.lm_eval_tasks import ClozeDoc, reasoning_doc
from kgprobe.reasoning.distractors import Protocol, parse_protocol
from kgprobe.studies.ontology_source import OntologySource

STUDIES = ("memorizing", "reasoning")
METRICS = ("r@1", "r@5", "mrr")
PREFIX = "kgprobe"
NOTES = {
    "memorizing": "kgprobe memorizing probe ({task}, manual template {template}): the prompt's "
                  "text before [MASK] is the context, each candidate label a choice, scored as "
                  "kgprobe's causal scorer does: the summed log-likelihood of the label and, "
                  "where more than punctuation follows the slot, of the rest of the sentence "
                  "(the doc's continuations). R@k and MRR rank the choices with pessimistic ties.",
    "reasoning": "kgprobe reasoning probe ({task}): both premises written, then the conjunction "
                 "and the hypothesis. The pseudowords [X] and [Y] are the letters X and Y, as in "
                 "the OntoProbe paper's §5: a text API cannot take pseudoword embeddings, so this "
                 "is not the premise-ablation study's pseudoword setting. Choices are scored "
                 "as kgprobe's causal scorer scores them (the continuations: with the text after "
                 "the slot where it holds more than punctuation).",
}


@dataclass
class ExportSettings:
    """What decides the exported documents."""

    studies: tuple[str, ...] = STUDIES
    relations: tuple[str, ...] | None = None  # memorizing relations (None: all)
    templates: str = "all"  # manual template index, or all
    rules: tuple[str, ...] | None = None  # reasoning rules (None: all)
    #: every candidate, or the gold and K − 1 distractors (``all``, None or an integer K is
    #: parsed on construction, as ``--candidates`` is)
    candidates: Protocol = Protocol()
    split: str = "test"
    limit: int | None = None  # per task; None: the paper's limits / every reasoning item
    seed: int = 0
    probes: str | None = None  # a `kgprobe generate memorizing` folder instead of the paper's
    protocol: str = "default"  # "paper": the paper protocol's prompts (paper_export.py)
    ranking: str = "filtered"  # filtered | raw (reasoning.filtering), as the studies rank
    extra: dict = field(default_factory=dict)
    #: another ontology than the bundled one (`--store`, `--endpoint`, `--ontology`): the
    #: memorizing sets are generated from it (seeded split) and the reasoning items read from it
    source: OntologySource | None = None

    def __post_init__(self) -> None:
        self.candidates = parse_protocol(self.candidates)

    def record(self) -> dict:
        """The settings as kgprobe_export.json records them: a source by its `pinned` form
        (a store's fingerprint, a file's hash); none for the bundled ontology."""
        return {k: (v.pinned() if isinstance(v, OntologySource) else
                    v.k if isinstance(v, Protocol) else v)
                for k, v in self.__dict__.items() if k != "extra" and not (k == "source" and v is None)}


def task_name(study: str, task: str, template: str) -> str:
    suffix = f"_t{template}" if study == "memorizing" else ""
    return f"{PREFIX}_{study}_{task}{suffix}"


def memorization_study():
    """The memorization study, found through the registry (studies never import each other):
    its configuration class and its `requests`, the one request stream its run scores."""
    from kgprobe.studies.registry import get_study

    return get_study("memorization")


def memorization_config(settings: ExportSettings):
    """The memorization study's configuration these export settings stand for: the export
    converts exactly the requests a run (and its dry run) of it scores."""
    from kgprobe.reasoning.memorizing import RELATIONS

    return memorization_study().config(
        None, tasks=tuple(settings.relations or RELATIONS), templates=settings.templates,
        split=settings.split, limit=settings.limit, seed=settings.seed,
        probes=Path(settings.probes) if settings.probes else None,
        candidates=settings.candidates,
        protocol=settings.protocol, ranking=settings.ranking, ontology=settings.source)


def request_doc(doc_id: str, study: str, task: str, template: str, request, answers,
                subject: str, split: str, protocol: str, ranking: str) -> ClozeDoc | None:
    """A study's `ProbeRequest` as a document: its text split at the slot, its candidates
    as the choices, its (distinct) golds as the targets; None when no gold is a candidate."""
    from kgprobe.prompts.lm_eval_tasks import split_at_mask

    text, suffix = split_at_mask(request.prompt)
    gold = sorted(set(request.golds))
    if not gold:
        return None  # no answer among the candidates: nothing to rank
    return ClozeDoc(doc_id, study, task, template, text, suffix, list(request.candidates), gold,
                    list(answers), subject, split, protocol, ranking)


def _memorizing(settings: ExportSettings) -> dict[str, list[ClozeDoc]]:
    """task name → documents: the memorization study's requests (`memorization.requests`),
    one task per relation × manual template, under either protocol."""

    config = memorization_config(settings)
    protocol = config.candidates.name
    paper = config.protocol == "paper"
    out = {}
    for unit in memorization_study().plan_of(config).requests():
        t = unit.template
        docs = [request_doc(f"{unit.task}-paper-{rec.record:05d}-t{t}" if paper else f"{rec.id}-t{t}",
                            "memorizing", unit.task, str(t), req,
                            list(dict.fromkeys(answers)) if paper else answers,
                            "" if paper else rec.subject, unit.key["split"], protocol,
                            "raw" if paper else settings.ranking)
                for req, rec, answers in zip(unit.requests, unit.records, unit.answers)]
        out[task_name("memorizing", unit.task, str(t))] = [d for d in docs if d is not None]
    return out


def ablation_config(settings: ExportSettings):
    """The premise-ablation study's configuration these export settings stand for (its
    default protocol, manual templates): the export converts the requests its run asks."""
    from kgprobe.reasoning.rdfs import RULES
    from kgprobe.studies.registry import get_study

    return get_study("premise-ablation").config(
        None, rules=tuple(settings.rules or RULES), templates=("manual",), limit=settings.limit,
        seed=settings.seed, pairs=1,
        candidates=settings.candidates,
        ranking=settings.ranking, ontology=settings.source)


def _reasoning(settings: ExportSettings) -> dict[str, list[ClozeDoc]]:
    """task name → documents: each evaluated item of the premise-ablation study with both
    premises written under its own hypothesis (`reasoning_doc`), one task per rule."""
    from kgprobe.studies.registry import get_study

    config = ablation_config(settings)
    ranking = "raw" if config.ranking == "raw" else "filtered"
    out: dict[str, list[ClozeDoc]] = {task_name("reasoning", rule, "manual"): []
                                      for rule in config.rules}
    seen: set[str] = set()
    for w in get_study("premise-ablation").plan_of(config).requests():
        item = w.item  # its own hypothesis: the template its conclusion is written with
        if (w.p1 and w.p2 and item.id not in seen
                and item.hypotheses[w.variant] == item.conclusion["text"]):
            seen.add(item.id)
            doc = reasoning_doc(item, w.request, config.candidates.name, ranking)
            if doc is not None:
                out[task_name("reasoning", w.rule, "manual")].append(doc)
    return out


def _yaml_task(name: str, data: Path, note: str, settings: ExportSettings) -> str:
    q = json.dumps
    metrics = "".join(f"  - metric: {q(m)}\n    aggregation: mean\n    higher_is_better: true\n"
                      for m in METRICS)
    return (f"# Written by `kgprobe export lm-eval`. {note}\n"
            f"task: {q(name)}\n"
            "dataset_path: json\n"
            f"dataset_kwargs:\n  data_files:\n    test: {q(str(data))}\n"
            "test_split: test\n"
            "output_type: multiple_choice\n"
            "doc_to_text: text\ndoc_to_choice: continuations\ndoc_to_target: target\n"
            'target_delimiter: ""\n'
            "process_results: !function utils.process_results\n"
            f"metric_list:\n{metrics}"
            "metadata:\n  version: 1.0\n"
            f"  description: {q(note)}\n"
            f"  candidates: {q(settings.candidates.k or 'all')}\n"
            f"  seed: {settings.seed}\n"
            f"  ranking: {q(settings.ranking)}\n")


def _yaml_group(group: str, tasks: Sequence[str]) -> str:
    listed = "".join(f"  - {json.dumps(t)}\n" for t in tasks)
    metrics = "".join(f"  - metric: {json.dumps(m)}\n    aggregation: mean\n    "
                      "weight_by_size: true\n" for m in METRICS)
    return (f"# Written by `kgprobe export lm-eval`: every {group} task.\n"
            f"group: {json.dumps(group)}\ntask:\n{listed}"
            f"aggregate_metric_list:\n{metrics}metadata:\n  version: 1.0\n")


def export_lm_eval(out: str | Path, settings: ExportSettings) -> dict[str, int]:
    """Write the task folder; returns {task name: number of documents}."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    unknown = [s for s in settings.studies if s not in STUDIES]
    if unknown:
        raise KgprobeError(f"--studies {','.join(unknown)}: use memorizing, reasoning or both")
    counts: dict[str, int] = {}
    for study in settings.studies:
        if study == "memorizing":
            tasks = _memorizing(settings)
        elif settings.protocol == "paper":
            from .paper_export import paper_reasoning

            tasks = paper_reasoning(settings, task_name)
        else:
            tasks = _reasoning(settings)
        written = []
        for name, docs in tasks.items():
            if not docs:
                continue
            data = out / f"{name}.jsonl"
            write_jsonl(data, [d.to_json() for d in docs])
            note = NOTES[study].format(task=docs[0].task, template=docs[0].template)
            if settings.protocol == "paper":
                note += (" Protocol paper: the OntoProbe paper's prompts and items as its official "
                         "code writes them (docs/fidelity.md).")
            write_text(out / f"{name}.yaml", _yaml_task(name, data, note, settings))
            counts[name] = len(docs)
            written.append(name)
        if written:
            write_text(out / f"{PREFIX}_{study}.yaml", _yaml_group(f"{PREFIX}_{study}", written))
    utils = resources.files("kgprobe.studies.lm_eval") / "harness_utils.py"
    write_text(out / "utils.py", utils.read_text(encoding="utf-8"))
    write_text(out / "kgprobe_export.json", json.dumps(
        {"settings": settings.record(),
         "tasks": counts}, indent=1) + "\n")
    return counts
