"""The tacit-assumption study's plan (`contract.Plan`): the prompts one run asks.

The run's units need the model: its single-token words make the vocabularies, and the
targets among them (`study.build_retrieval_units`, `study.build_elicitation_units`); the
norms and the retrieval conditions are read before it loads, so a wrong ``--norms`` or
``--conditions`` is refused first. ``--dry-run`` lists the same units' prompts (`requests`) without a model: it
takes the word list as it is (``--vocab``'s LAMA list or the norms' concepts), so it may list
a few prompts whose target the model's vocabulary would drop, and ``n_candidates`` is the
list's size before that filter. Without ``--template`` the retrieval prompts are the paper's
statements, the masked-LM default (a causal model's run asks them as questions instead: pass
``--template question`` to see those). The lifecycle (load, pin, units) is the contract's;
the report is written from the rows as scored (`report`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kgprobe.ontology.norms import load_norms
from kgprobe.studies.contract import Plan
from kgprobe.studies.dry_run import PromptRecord

from .config import StaConfig
from .requests import elicitation_units, retrieval_units

STUDY = "sta"


class StaPlan(Plan):
    """Retrieval's units (condition × number of properties) and elicitation's (relation ×
    context) of one run; ``summary.json`` says what the model's vocabulary kept and dropped,
    how long the model took to load and the units to run."""

    def __init__(self, config: StaConfig) -> None:
        from .study import COLUMNS, parse_conditions

        super().__init__(config)
        self.columns = COLUMNS
        self.conditions = parse_conditions(config.conditions)
        self.norms = load_norms(config.norms, config.format)
        self.out = Path()
        self.summary: dict = {}
        self.started = 0.0

    def prompts(self) -> list[PromptRecord]:
        return prompt_records(self.config, self.norms, self.conditions)

    def pinned(self, model: Any) -> dict:
        return self.config.fingerprint(model)

    def prepare(self, model: Any, out: Path) -> Any:
        self.out = out
        self.summary = {"settings": self.config.fingerprint(model),
                        "model_load_seconds": round(self.load_seconds, 1)}
        return model

    def units(self, scored: Any) -> list:
        """The units, built from the model's vocabularies; ``summary.json`` written with
        what they kept before the first is scored."""
        from kgprobe.atomic import write_json

        from .study import build_elicitation_units, build_retrieval_units, lazy_words

        config, units = self.config, []
        lama = lazy_words(config.lama_file)
        if "retrieval" in config.tasks:
            units += build_retrieval_units(config, scored, self.norms, lama, self.conditions,
                                           self.summary)
        if "elicitation" in config.tasks:
            units += build_elicitation_units(config, scored, self.norms, lama, self.summary)
        write_json(self.out / "summary.json", self.summary)
        self.started = time.perf_counter()
        return units

    def report(self, out: Path, rows: list[dict]) -> Path:
        """report.md and the figures from the rows as scored (results.csv rounds them), with
        the run's time in ``summary.json``."""
        from kgprobe.atomic import write_json

        from .report import write_report

        self.summary["run_seconds"] = round(time.perf_counter() - self.started, 1)
        write_json(out / "summary.json", self.summary)
        return write_report(out, rows, self.summary)


def prompt_records(config: StaConfig, norms, conditions: list) -> list[PromptRecord]:
    """Every prompt a run would score, unit by unit, in the run's order: the run's own units
    (`requests`)."""
    from kgprobe.models.distributions import word_vocabulary

    from .study import lazy_words, retrieval_targets, sample

    lama = lazy_words(config.lama_file)
    records: list[PromptRecord] = []
    if "retrieval" in config.tasks:
        template = config.retrieval_template(True)
        vocab_name = config.retrieval_vocab(True)
        vocabulary = word_vocabulary(lama() if vocab_name == "lama" else norms.words())
        targets, _ = retrieval_targets(norms, set(vocabulary.words), determiner=config.determiner,
                                       limit=config.limit, seed=config.seed)
        for cond, n, prompts in retrieval_units(config, targets, conditions, template):
            records += [PromptRecord(
                STUDY, p.prompt, (p.target,), len(vocabulary.words), task="retrieval",
                template=template,
                extra={"condition": cond.name, "n_properties": n, "concept": p.concept,
                       "sequence": p.sequence, "vocabulary": vocab_name}) for p in prompts]
    if "elicitation" in config.tasks:
        words = word_vocabulary(lama()).words
        concepts = sample(list(norms.concepts.values()), config.elicitation_concepts(),
                          config.seed, "concepts")
        for relation, context, prompts in elicitation_units(concepts):
            records += [PromptRecord(
                STUDY, p.prompt, tuple(p.gold), len(words), task="elicitation",
                template=context,
                extra={"relation": relation, "context": context, "concept": p.concept,
                       "production_frequency": p.gold, "vocabulary": "lama"}) for p in prompts]
    return records
