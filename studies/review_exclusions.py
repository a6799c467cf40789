"""The terms a review marks, as an exclusion list the next `generate` reads.

A reviewer who finds a term that should never be asked ("Verifiable", a code-list value) writes
it in the sheet's `exclude_term`. Terms leave the probes where everything else that is no
answer leaves them: the exclusion list (`ontology/exclusions.py`, `--exclusions FILE`), read
when the model is built, so the term leaves the records, the items, the candidates and the
hierarchy (reconnected around it) together, and `excluded.tsv` names it with its reason. Since
`--exclusions` replaces the bundled list, the file written here is the list the probes were
generated with, verbatim, and below a marker line a `[reviewed]` table that each `review read`
extends; every entry carries the label and the sheet's note as a comment.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.ontology.exclusions import REVIEWED

from .review import Verdict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: The file `review read` writes into the probe folder.
EXCLUSIONS_FILE = "exclusions.toml"
#: The line that separates the list generate used from the reviewed table below it.
MARKER = ("# ---- `kgprobe review read` keeps the table below (terms marked in review "
          "sheets); edit above this line ----")
_ENTRY = re.compile(r'^\s*("(?:[^"\\]|\\.)*")\s*,\s*(?:#\s?(.*))?$')


@dataclass(frozen=True)
class MarkedTerm:
    """A term a sheet marked: its IRI, the label it was found by, where it was marked."""

    iri: str
    label: str
    where: str
    note: str = ""

    def comment(self) -> str:
        text = f"{self.label} ({self.where})" + (f": {self.note}" if self.note else "")
        return " ".join(text.split())


def record_terms(record: dict) -> list[tuple[str, str]]:
    """(label, IRI) of every term a probe record or item names: a memorizing record's subject
    and answers; a reasoning item's premise subjects and answers (not the pseudoword slots),
    and with an empty label every IRI of its triples (a property, given by IRI)."""
    pairs = []
    if "subject_iri" in record:
        pairs.append((record.get("subject", ""), record.get("subject_iri") or ""))
        pairs += list(zip(record.get("answers", []), record.get("answer_iris", [])))
    for premise in record.get("premises", []):
        s, _, o = premise["triple"]
        if not premise.get("subject", "").startswith("["):
            pairs.append((premise.get("subject", ""), s))
        if not premise.get("answer", "").startswith("["):
            pairs.append((premise.get("answer", ""), o))
    triples = [p["triple"] for p in record.get("premises", [])]
    triples += [record["conclusion"]["triple"]] if "conclusion" in record else []
    pairs += [("", iri) for t in triples for iri in t]
    return [(label, iri) for label, iri in pairs if iri and not iri.startswith("_:")]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def resolve_terms(folder: str | Path, verdicts: Sequence[Verdict], sheet: str) -> list[MarkedTerm]:
    """The IRIs the sheet's `exclude_term` cells name: each term is an IRI of the row's record,
    or a label of it (case and spacing aside). A term the record does not name, or a label of
    two of its terms, is one line naming the sheet's line and the terms there are."""
    folder = Path(folder)
    records: dict[str, dict[str, dict]] = {}
    out = []
    for v in verdicts:
        if not v.exclude:
            continue
        if v.stratum not in records:
            path = folder / f"{v.stratum}.jsonl"
            if not path.is_file():
                raise KgprobeError(f"{path}: not found; the probe folder lost the records of "
                                   f"{v.stratum}, which its prompts.tsv names: generate it again")
            lines = path.read_text(encoding="utf-8").splitlines()
            records[v.stratum] = {r["id"]: r for r in map(json.loads, lines) if r}
        record = records[v.stratum].get(v.id)
        if record is None:
            raise KgprobeError(f"{sheet} line {v.line} (id {v.id}): no such record in "
                               f"{v.stratum}.jsonl; generate the folder again, then sample a sheet")
        pairs = record_terms(record)
        for term in v.exclude:
            iris = sorted({iri for label, iri in pairs if iri == term or
                           (label and _norm(label) == _norm(term))})
            where = f"{sheet} line {v.line} (id {v.id})"
            if not iris:
                names = ", ".join(sorted({label for label, _ in pairs if label})) or "none"
                raise KgprobeError(f"{where}: exclude_term {term!r} names no term of this "
                                   f"prompt; give one of its labels ({names}) or an IRI")
            if len(iris) > 1:
                raise KgprobeError(f"{where}: exclude_term {term!r} is the label of "
                                   f"{len(iris)} terms ({', '.join(iris)}); give the IRI")
            label = next((la for la, iri in pairs if iri == iris[0] and la), term)
            out.append(MarkedTerm(iris[0], label, f"{sheet} line {v.line}", v.note))
    return out


def base_list(folder: Path, used: str | None) -> str:
    """The text of the list the review's entries are added to: the folder's own
    `exclusions.toml` above its marker if there is one, else the list the probes were
    generated with (`used`, as summary.json records it; the bundled list when none)."""
    from kgprobe.ontology.exclusions import default_exclusions_path

    own = folder / EXCLUSIONS_FILE
    if own.is_file():
        return own.read_text(encoding="utf-8").split(MARKER)[0].rstrip("\n") + "\n"
    path = Path(used) if used else default_exclusions_path()
    if not path.is_file():
        raise KgprobeError(f"{path}: the exclusion list these probes were generated with is "
                           "gone; generate them again, then review")
    return path.read_text(encoding="utf-8").rstrip("\n") + "\n"


def reviewed_entries(folder: Path) -> dict[str, str]:
    """IRI → comment of the entries an earlier `review read` wrote below the marker."""
    own = folder / EXCLUSIONS_FILE
    if not own.is_file() or MARKER not in (text := own.read_text(encoding="utf-8")):
        return {}
    out = {}
    for line in text.split(MARKER, 1)[1].splitlines():
        m = _ENTRY.match(line)
        if m:
            out[json.loads(m.group(1))] = m.group(2) or ""
    return out


def write_review_exclusions(folder: str | Path, marked: Sequence[MarkedTerm],
                            used: str | None) -> tuple[Path, int]:
    """Add `marked` to `FOLDER/exclusions.toml` (made from `base_list` the first time);
    returns its path and how many IRIs are new. The file is checked as an exclusion list
    before it replaces the old one, and written whole (`atomic.write_text`)."""
    from kgprobe.atomic import write_text

    folder = Path(folder)
    entries = reviewed_entries(folder)
    new = 0
    for term in marked:
        if term.iri not in entries:
            entries[term.iri] = term.comment()
            new += 1
    lines = [f"  {json.dumps(iri, ensure_ascii=False)},"
             + (f"  # {comment}" if comment else "") for iri, comment in entries.items()]
    text = (base_list(folder, used) + "\n" + MARKER + "\n"
            f"[{REVIEWED}]\niris = [\n" + "\n".join(lines) + ("\n" if lines else "") + "]\n")
    path = folder / EXCLUSIONS_FILE
    try:  # a base list that cannot take the table: one line, nothing replaced
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise KgprobeError(f"{path}: adding the [{REVIEWED}] table makes no TOML ({err}); "
                           f"remove a [{REVIEWED}] table above the marker line") from None
    write_text(path, text)
    return path, new


def unread_review(folder: str | Path, used: str | None) -> int:
    """How many reviewed terms `FOLDER/exclusions.toml` holds that a `generate` into FOLDER
    with the list `used` (None: the bundled one) would not leave out: its own list is another."""
    own = Path(folder) / EXCLUSIONS_FILE
    if not own.is_file() or (used and Path(used).resolve() == own.resolve()):
        return 0
    return len(reviewed_entries(Path(folder)))
