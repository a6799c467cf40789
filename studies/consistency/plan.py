"""The consistency study's plan (`contract.Plan`): one run's statements, scored by every model.

`study.build` samples the derivations and builds every statement's probe before a model
loads; the run scores them in units of one relation × template (ranked, or with ``--answers
generate`` written and graded), the dry run writes one line per distinct (prompt,
candidates) pair a unit asks, and the reference and the controls ask the very same units,
each in its own folder (`studies.controls.control_folder`). The derivations' tables need
every model's ranks at once, so they are built last (`finish`) from the unit files alone:
a resumed run, or one whose controls were scored earlier, reads the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgprobe.studies.contract import Plan
from kgprobe.studies.dry_run import PromptRecord

from .config import NAME, ConsistencyConfig


class ConsistencyPlan(Plan):
    """The statement units of one consistency run, and the models that score them: the run's
    model, then its reference and its controls, one folder per model."""

    #: a control's folder holds its units and predictions; its numbers reach the run's
    #: results.csv and controls.csv (`finish`), not a table of its own
    control_results = False

    def __init__(self, config: ConsistencyConfig) -> None:
        from .study import UNIT_COLUMNS, build

        super().__init__(config)
        self.setup = build(config)  # every derivation and probe, checked before a model loads
        self.generate = config.answers == "generate"
        self.columns = UNIT_COLUMNS
        if self.generate:
            from .generate import UNIT_COLUMNS as columns

            self.columns = columns
        self.controls = scored_controls(config) if config.model is not None else ()

    def prompts(self) -> list[PromptRecord]:
        return prompt_records(self.setup)

    def check(self, model: Any) -> None:
        if self.generate:  # a model that writes no answer says so before the folder is pinned
            model.generate([], max_new_tokens=self.config.max_new_tokens)

    def units(self, scored: Any) -> list:
        from .study import training_answers, units_of

        if self.generate:  # answered and graded: `generate.py`
            from .generate import generate_units

            return generate_units(self.setup, scored, self.progress, training_answers)
        return units_of(self.setup, scored, self.progress)

    def finish(self, out: Path, controls: dict[str, Path]) -> None:
        """statements.csv (the model's unit rows), then the derivations' tables from every
        model's ranks (`study.write_tables`): the reference first, each model once."""
        from kgprobe.atomic import write_text
        from kgprobe.studies.controls import control_model
        from kgprobe.studies.runner import rows_to_csv

        from .controls import reference_model
        from .study import write_tables

        config = self.config
        rows, ranks = self.read_ranks(out)
        write_text(out / "statements.csv", rows_to_csv(rows, self.columns))
        others = {control_model(c, config.model): self.read_ranks(controls[c])[1]
                  for c in self.controls}
        write_tables(self.setup, ranks, out, others,
                     reference_model(config.model, config.reference))

    def read_ranks(self, folder: Path) -> tuple[list[dict], dict[tuple[str, int], dict]]:
        """The unit rows scored into `folder`, and every statement's prediction there by
        (statement key, template)."""
        from kgprobe.studies.runner import read_unit, unit_path

        rows, ranks = [], {}
        for unit in self.units(None):  # the units' keys name their files; nothing is scored
            row, predictions = read_unit(unit_path(folder, unit))
            rows.append(row)
            ranks.update({(p["statement"], unit.key["template"]): p for p in predictions})
        return rows, ranks


def scored_controls(config: ConsistencyConfig) -> tuple[str, ...]:
    """The reference, then the controls, each model once (``--model frequency``: the reference
    ``prior`` is frequency itself, whose folder is the run's own, `controls.control_folder`)."""
    from kgprobe.studies.controls import control_model

    names: dict[str, str] = {}
    for control in (config.reference, *config.controls):
        names.setdefault(control_model(control, config.model), control)
    return tuple(names.values())


def prompt_records(setup) -> list[PromptRecord]:
    """Every distinct (prompt, candidates) pair the run's units ask, in their order, with the
    answers of the statements that share it (`probes.asked_golds`), as the dry run writes it;
    under ``--answers generate`` the text the model continues, its cloze beside it."""
    from kgprobe.studies.open_answers import generation_prompt

    from .probes import asked_golds

    config = setup.config
    generate = config.answers == "generate"
    records = []
    for (relation, t), probes in setup.probes.items():
        for (prompt, cands), golds in asked_golds(probes).items():
            extra = {"answers": "generate", "cloze": prompt,
                     "max_new_tokens": config.max_new_tokens} if generate else {}
            records.append(PromptRecord(NAME, generation_prompt(prompt) if generate else prompt,
                                        tuple(golds), len(cands), task=relation,
                                        template=str(t),
                                        extra={"protocol": setup.protocol.name, **extra}))
    return records
