"""The premise-ablation study's plan (`contract.Plan`): one run's units of requests.

Before any model loads the plan builds what every prompt comes from: the default protocol's
items, candidates and templates from the config's ontology (`build.build_data`), or the
paper protocol's items (`paper.paper_study`); a bad ``--candidates`` is refused here, so the
folder stays as it was. ``--dry-run`` writes its prompts (`dry.py`). The run's model (loaded
by the contract, `Study.load`) then classifies the premises and trains the soft prompts
(`prepare`), and its units are the cells (`study.grid_units`, `paper.paper_units`, or with
``--answers generate`` `generate.generate_units`) under that model or a control: ranking
controls are handed as scorers trained on the run's training answers (`answers`), open-answer
controls as loaded models. The report writes results.csv (averages and intervals beside the
cells), so neither the model's units nor the controls' write one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kgprobe.studies.contract import Plan

from .config import AblationConfig


class PremiseAblationPlan(Plan):
    """One premise-ablation run: the default protocol's grid (with its chained and
    counterfactual cells, manual and soft templates), the paper protocol's cells, or the
    default grid answered by the model itself (``--answers generate``)."""

    results = False  # the report writes results.csv: cells, template and rule averages
    control_results = False

    def __init__(self, config: AblationConfig) -> None:
        super().__init__(config)
        self.controls = config.controls
        self.paper = config.protocol == "paper"
        self.generate = config.answers == "generate"
        self.scorer_controls = not self.generate  # open answers: controls as loaded models
        self.source = None
        if self.paper:
            from .columns import UNIT_COLUMNS
            from .paper import paper_study

            self.paper_study = paper_study(config)
            self.columns = [*UNIT_COLUMNS, "study_protocol"]
        else:
            from .build import build_data

            self.source = config.load_source()
            self.data = build_data(config, self.source)  # a bad --candidates fails here
            if self.generate:
                from .generate import COLUMNS

                self.columns = COLUMNS
            else:
                self.columns = config.unit_columns()
        self.premises: dict = {}
        self.softs: dict = {}
        self._answers: list = []

    # -- before a model loads ------------------------------------------------------------

    def requests(self) -> list:
        """Every evaluated item under each manual template and way of writing its premises
        (`dry.WrittenRequest`, the default protocol's): what ``kgprobe export lm-eval``
        converts (its reasoning tasks: both premises written)."""
        if self.paper:
            from kgprobe.errors import StudyError

            raise StudyError("--protocol paper: its items are exported by the paper protocol's "
                             "own export (lm_eval.paper_export)")
        from .dry import written_requests

        return written_requests(self.data)

    def prompts(self) -> list:
        from .dry import default_records, paper_records

        if self.paper:
            return paper_records(self.config, self.paper_study)
        return default_records(self.config, self.data)

    def dry_run_record(self, out: Path) -> None:
        """config.json records what the dry run's prompts came from (its ontology first of
        all), unless the folder holds a run's settings (`settings.record_dry_run`)."""
        from kgprobe.studies.settings import record_dry_run

        record_dry_run(out, self.study, self.config.pinned())

    def check(self, model: Any) -> None:
        if self.generate:  # a model that writes no answer says so, before the folder is pinned
            model.generate([], max_new_tokens=self.config.max_new_tokens)

    # -- the run ---------------------------------------------------------------------------

    def prepare(self, model: Any, out: Path) -> Any:
        """The run's model part (scorer, pseudowords), its premises classified and its soft
        prompts trained (each cached in the run folder); → the model's scorer, or with
        ``--answers generate`` the loaded model."""
        if self.paper:
            return self._prepare_paper(model, out)
        from .build import AblationSetup, ablation_model
        from .study import classify_premises

        self.setup = AblationSetup(self.data, ablation_model(self.config, model, self.source))
        self.premises = classify_premises(self.setup, out, progress=self.progress)
        if self.generate:
            return model
        if "soft" in self.config.templates:
            from .soft import train_soft_prompts

            self.softs = train_soft_prompts(self.setup, out, progress=self.progress)
        return self.setup.model.scorer

    def _prepare_paper(self, model: Any, out: Path) -> Any:
        from .paper import classify_paper_premises, train_soft, with_model

        study = self.paper_study = with_model(self.paper_study, model)
        if "soft" in self.config.templates:  # first: a model with no gradients says so at once
            train_soft(study, out, progress=self.progress)
        self.premises = classify_paper_premises(study, out, progress=self.progress)
        return study.scorer

    def units(self, scored: Any) -> list:
        """The run's units scored by `scored`: the model's scorer or a ranking control's
        (the same requests), or under ``--answers generate`` a loaded model (the run's or
        an open-answer control's), handed the run's training answers."""
        if self.paper:
            from .paper import paper_units

            return paper_units(replace(self.paper_study, scorer=scored), self.premises,
                               progress=self.progress)
        setup = self.setup
        if self.generate:
            from .build import training_answers
            from .generate import generate_units
            from .study import cell_requests

            trained = scored.trained_on(training_answers(setup.model.memorizing))
            return generate_units(setup, trained, self.source, lambda *cell: cell_requests(
                setup, *cell[:3], "manual", self.premises, None, cell[3]))
        from .study import grid_units

        return grid_units(replace(setup, model=replace(setup.model, scorer=scored)),
                          self.premises, self.softs, self.progress)

    def answers(self):
        """The training answers a ranking control's scorer is handed, as the model's: the
        memorizing sets' (the paper protocol's reference sets, built once)."""
        from .build import training_answers

        if not self.paper:
            return training_answers(self.setup.model.memorizing)
        if not self._answers:  # the reference sets take seconds: built once, for every control
            from kgprobe.reasoning.memorizing_sets import reference_sets

            self._answers.extend(training_answers(reference_sets()))
        return self._answers
