"""The sentences of a probe folder, as the studies ask them: `prompts.tsv`.

`kgprobe generate` writes records and items, not sentences; the sentences a model is asked
appeared only in a study's dry run, one split and a few hundred records at a time, so a
defective prompt went unread. This module writes every record and item of every split as the
studies render it, with their own builders, never a copy of them:

- a memorizing record under its relation's first manual template
  (`studies.memorization.requests.record_prompt`, which the study's `plan` calls);
- a reasoning item with both premises written, the conjunction and its hypothesis
  (`ontology.verbalize.reasoning_text`, which the premise-ablation study's cells call: its cell
  P1 explicit, P2 explicit, under the hypothesis relation's own manual template).

It is no study (it asks no model and pins no run) but it calls memorization's prompt builder, so
it sits in the studies layer beside `dry_run.py`, as a module of that layer, not a sub-package.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import KgprobeError

#: The file `generate` writes beside the records.
PROMPTS_FILE = "prompts.tsv"
#: Its columns: the record's or item's id, split, relation or rule, the template the sentence
#: is written with (a memorizing template index as `study memorization --dry-run` names it;
#: `manual:V` as `study premise-ablation --dry-run` does), the sentence, the golds.
COLUMNS = ("id", "split", "kind", "template", "prompt", "golds")
#: Between two golds in one cell (a label holding it would read ambiguously; none does in the
#: ontologies tested, and `golds_of` splits on it).
GOLD_SEPARATOR = " | "


@dataclass(frozen=True)
class ProbePrompt:
    """One rendered sentence of a probe folder (one row of `prompts.tsv`)."""

    id: str
    split: str
    kind: str  # the memorizing relation (type, subClassOf, …) or the reasoning rule (rdfs9, …)
    template: str
    prompt: str
    golds: tuple[str, ...]

    def row(self) -> list[str]:
        return [self.id, self.split, self.kind, self.template, self.prompt,
                GOLD_SEPARATOR.join(self.golds)]


def golds_of(cell: str) -> tuple[str, ...]:
    """A `golds` cell back as its labels."""
    return tuple(g for g in cell.split(GOLD_SEPARATOR) if g)


def memorizing_prompts(folder: str | Path) -> list[ProbePrompt]:
    """Every record of a `generate memorizing` folder (all splits) under its relation's first
    manual template, read back from the folder as `study memorization --probes` reads it
    (`generated_sets`: the records, their property wordings, the set's language)."""
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.memorizing_sets import generated_sets
    from kgprobe.studies.memorization.requests import record_prompt

    sets = generated_sets(folder)
    if not sets:
        return []
    templates = load_templates(lang=next(iter(sets.values())).lang)  # as the study's plan
    out = []
    for relation, mset in sets.items():
        first = templates[relation].manual[0]
        out += [ProbePrompt(r.id, r.split, relation, "0", record_prompt(first, r, mset),
                            tuple(r.answers)) for r in mset.records]
    return out


def reasoning_prompts(items: dict[str, Sequence], templates) -> list[ProbePrompt]:
    """Every item of `items` (rule → `ReasoningItem`s, as `generate reasoning` holds them)
    with both premises written, the conjunction and its hypothesis, under `templates` (the
    TemplateSet the items were written with)."""
    from kgprobe.ontology.verbalize import reasoning_text
    from kgprobe.reasoning.items import RULE_RELATIONS

    out = []
    for rule, rule_items in items.items():
        variant = templates[RULE_RELATIONS[rule][2]].hypothesis
        out += [ProbePrompt(item.id, item.split, rule, f"manual:{variant}",
                            reasoning_text([p.text for p in item.premises], templates.conjunction,
                                           item.conclusion["text"]),
                            tuple(item.answers)) for item in rule_items]
    return out


def prompts_tsv(prompts: Iterable[ProbePrompt]) -> str:
    """Tab-separated text with a header (a cell holding a tab, a newline or a quote is quoted
    as spreadsheets and Python's csv module read it, so the text comes back exactly)."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(p.row() for p in prompts)
    return buf.getvalue()


def write_probe_prompts(folder: str | Path, prompts: Sequence[ProbePrompt]) -> Path:
    """`FOLDER/prompts.tsv`, written whole or not at all (`atomic.write_text`)."""
    from kgprobe.atomic import write_text

    path = Path(folder) / PROMPTS_FILE
    write_text(path, prompts_tsv(prompts))
    return path


def read_probe_prompts(folder: str | Path) -> list[ProbePrompt]:
    """The rows of `FOLDER/prompts.tsv`; a folder without one (or a file in its place) is
    one line naming the fix."""
    folder = Path(folder)
    path = folder / PROMPTS_FILE
    if not folder.is_dir():
        raise KgprobeError(f"{folder}: no probe folder; pass the --out of `kgprobe generate "
                           "memorizing` or `generate reasoning`")
    if not path.is_file():
        raise KgprobeError(f"{path}: not found; write the probes (and their sentences) with "
                           f"`kgprobe generate memorizing|reasoning --out {folder}`")
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise KgprobeError(f"{path}: not a prompts file (its header is not "
                           f"{' '.join(COLUMNS)}); write it again with `kgprobe generate`")
    return [ProbePrompt(*r[:5], golds_of(r[5])) for r in rows[1:] if len(r) == len(COLUMNS)]
