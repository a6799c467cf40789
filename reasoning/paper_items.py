"""`--protocol paper`: the OntoProbe paper's memorizing prompts and reasoning items, written
as its official code writes them (wording in `paper_protocol.toml`).

kgprobe's default protocol derives items from the RDFS closure and words them with its own
templates. Reproducing the paper's numbers needs the paper's items instead: one reasoning item
per test record of the premise's memorizing file (the direct superclass or superproperty as
P1, every answer on the record's chain gold), the official code's capitalisation and
punctuation, and its DM/RG clauses. docs/fidelity.md lists what this reproduces, quirks
included, and how closely (agreement with the official code's prompts, per task and rule).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.ontology.verbalize import MASK, normalize_label, reasoning_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RELATIONS = ("type", "subClassOf", "subPropertyOf", "domain", "range")
RULES = ("rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11")
_VOWELS = "aeiouAEIOU"


@functools.cache
def wording() -> dict:
    """The paper protocol's data file (templates, clauses, rules)."""
    path = Path(str(resources.files("kgprobe.reasoning") / "paper_protocol.toml"))
    return tomllib.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PaperRecord:
    """One line of the paper's memorizing file: its subject, pattern and answer chain."""

    index: int  # line number in the file
    relation: str
    subject: str
    pattern: str  # the subject property's pattern ("" for classes and instances)
    answers: tuple[str, ...]  # as written in the file, specific → general
    answer_patterns: tuple[str, ...] = ()  # SPO: the superproperties' patterns

    @property
    def split(self) -> str:
        w = wording()
        return ("train" if self.index < w["train"] else
                "dev" if self.index < w["train"] + w["dev"] else "test")


@dataclass(frozen=True)
class PaperPrompt:
    """One cloze prompt: its text (with [MASK], pseudoword slots [X0]/[Y0]) and gold labels."""

    text: str
    golds: tuple[str, ...]
    candidates: str  # candidate kind: class | property | property_pattern
    record: int  # the record's line in its memorizing file


@dataclass
class PaperItem:
    """A reasoning item built from one memorizing test record, as the official code does."""

    id: str
    rule: str
    record: PaperRecord
    p1: str
    p2: str
    hypothesis: str
    end: str
    golds: tuple[str, ...]
    candidates: str
    probes: dict[str, PaperPrompt] = field(default_factory=dict)  # P1/P2 → memorizing probe
    soft: dict[str, str] = field(default_factory=dict)  # the soft form's parts ({soft} kept)

    def text(self, p1: bool = True, p2: bool = True) -> str:
        """The prompt with P1 and/or P2 written (the paper's explicit setting) or left out."""
        written = [text for text, on in ((self.p1, p1), (self.p2, p2)) if on]
        return collapse(reasoning_text(written, wording()["conjunction"],
                                       f"{self.hypothesis} {MASK} {self.end}"))

    def soft_text(self, p1: bool = True, p2: bool = True) -> str:
        """The prompt in the official code's soft form (§3.2.1's soft conjunctions): each
        written premise followed by a conjunction token ([conj~0] after P1 when P2 follows,
        [conj~1] before the hypothesis; [conj~1] alone when neither is written), the soft
        template's tokens at [p1~i], [p2~i], [h~i]."""
        written = [fill_soft(self.soft[k], k) for k, on in (("p1", p1), ("p2", p2)) if on]
        if len(written) == 2:
            written.insert(1, CONJ[0])
        parts = [*written, CONJ[1], fill_soft(self.soft["hypothesis"], "h"), MASK, self.soft["end"]]
        return collapse(" ".join(parts))


#: soft tokens per soft template (the official code's three {"soft"}), and the conjunctions
SOFT_TOKENS = 3
CONJ = ("[conj~0]", "[conj~1]")


def soft_slots(position: str) -> list[str]:
    """The slot names of one soft template's tokens: a reasoning position (p1, p2, h) or a
    memorizing relation."""
    return [f"[{position}~{i}]" for i in range(SOFT_TOKENS)]


def fill_soft(text: str, position: str) -> str:
    return text.replace("{soft}", " ".join(soft_slots(position)))


def soft_relations(rule_name: str) -> dict[str, str]:
    """position (p1, p2, h) → the memorizing relation whose soft template starts its tokens
    (only the positions that have soft tokens)."""
    names = wording()["rules"][rule_name]["soft"]["relations"]
    return {pos: rel for pos, rel in zip(("p1", "p2", "h"), names) if rel}


def soft_init_words(relation: str) -> tuple[str, ...]:
    return tuple(wording()["memorizing"][relation]["soft_init"])


def soft_memorizing_prompt(record: PaperRecord) -> PaperPrompt:
    """The record's prompt under its relation's soft template (data.py's fs mode), the
    tokens at [RELATION~i]."""
    spec = wording()["memorizing"][record.relation]
    subject = _punct(record.subject) if spec.get("subject") == "normalized" else record.subject
    text = spec["soft"].format(Subject=subject.capitalize(), subject=record.subject,
                               soft=" ".join(soft_slots(record.relation)))
    return PaperPrompt(collapse(text), _golds(record.answers), spec["candidates"], record.index)


def collapse(text: str) -> str:
    return " ".join(text.split())


def _punct(text: str) -> str:
    return re.sub(r"[-()/]", " ", text)


def memorizing_file(relation: str) -> Path:
    return Path(str(resources.files("kgprobe.ontology") / "data" / "memorizing" / f"{relation}.jsonl"))


@functools.cache
def load_records(relation: str) -> tuple[PaperRecord, ...]:
    """Every record of the paper's memorizing file for `relation`, in file order."""
    if relation not in RELATIONS:
        raise KgprobeError(f"unknown memorizing relation '{relation}'; use one of "
                           f"{', '.join(RELATIONS)}")
    out = []
    for n, line in enumerate(memorizing_file(relation).read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        rec = json.loads(line)
        subject, pattern = rec["uuu"], ""
        if isinstance(subject, dict):
            (subject, pattern), = subject.items()
        answers, patterns = rec["xxx"], ()
        if isinstance(answers, dict):
            answers, patterns = list(answers), tuple(answers.values())
        out.append(PaperRecord(n, relation, subject, pattern, tuple(answers), patterns))
    return tuple(out)


def test_records(relation: str, *, sliced: bool = True) -> list[PaperRecord]:
    """The test slice the official code scores (zs-f mode): records 20– (20–519 for TP and
    SCO; every test record with `sliced` off, as its "-type"/"-prop" premise runs score)."""
    spec = wording()["memorizing"][relation]
    test = [r for r in load_records(relation) if r.split == "test"]
    return test[:spec["limit"]] if sliced and "limit" in spec else test


def first_answers(relation: str) -> dict[str, str]:
    """property label → its first domain (or range) class, as the DM/RG clauses read them."""
    return {r.subject: r.answers[0] for r in load_records(relation) if r.answers}


def domain_clause(pattern: str, range_of: str | None) -> str:
    """"if one has composer ." / "if one is an employer of an organisation ." (DM's clause)."""
    c = wording()["clauses"]
    if pattern.strip("[X]").split(" ")[0] == "'s":
        # str.strip removes characters, not a prefix: the official code's cut, kept.
        rest = pattern.strip("[X]'s")
        clause = f"{c['domain_possessive']}{rest.split('contain ' if 'contain' in pattern else 'is ')[0]}."
    else:
        clause = f"{c['domain_verb']} {pattern.strip('[X] ')}"
    if range_of is None:
        return clause.replace("[Y]", c["unknown"])
    if range_of[0] in _VOWELS:
        return clause.replace(range_of, "").replace("[Y]", "an " + range_of)
    return clause.replace("[Y]", "a " + range_of)


def range_clause(pattern: str, domain_of: str | None) -> str:
    """"if a person is an employer of that ." (RG's clause)."""
    c = wording()["clauses"]
    last = pattern.strip(" [Y] .").split(" ")[-1]
    if last == "is":
        clause = f"{c['range_copula']} " + pattern.replace("is [Y] ", "")
    elif last == "contain":
        clause = f"{c['range_copula']} " + pattern.replace("contain [Y] ", "")
    else:
        clause = f"{c['range_other']} " + pattern.replace("[Y]", c["that"])
    if domain_of is None:
        return clause.replace("[X]", c["unknown"])
    return clause.replace("[X]", ("an " if domain_of[0] in _VOWELS else "a ") + domain_of)


def _clause(record: PaperRecord) -> str:
    if record.relation == "domain":
        return domain_clause(record.pattern, first_answers("range").get(record.subject))
    return range_clause(record.pattern, first_answers("domain").get(record.subject))


def _golds(labels) -> tuple[str, ...]:
    return tuple(normalize_label(a) for a in labels)


def memorizing_prompt(record: PaperRecord, template: int = 0) -> PaperPrompt:
    """The record's memorizing prompt under manual template `template` (data.py, zs-f)."""
    spec = wording()["memorizing"][record.relation]
    tmpl = spec["templates"][template]
    if record.relation in ("domain", "range"):
        text = f"{tmpl} {MASK} {_clause(record)}"
    else:
        subject = _punct(record.subject) if spec.get("subject") == "normalized" else record.subject
        text = f"{subject.capitalize()}{tmpl} {MASK} ."
    return PaperPrompt(collapse(text), _golds(record.answers), spec["candidates"], record.index)


def memorizing_prompts(relation: str, template: int = 0, *, sliced: bool = True) -> list[PaperPrompt]:
    """The test records' prompts (`sliced` off: every test record, as the official frequency
    baseline reads them)."""
    return [memorizing_prompt(r, template) for r in test_records(relation, sliced=sliced)]


def n_templates(relation: str) -> int:
    return len(wording()["memorizing"][relation]["templates"])


def pattern_middle(pattern: str) -> str:
    """A pattern's words between its slots as the official code cuts them (rdfs7 candidates)."""
    return normalize_label(pattern.strip("[X]").strip(" [Y] ."))


def _an(word: str) -> str:
    return "an" if word[:1] in _VOWELS else "a"


def _p2_probe(rule: dict, record: PaperRecord) -> PaperPrompt:
    name = rule["p2_probe"]
    if name in wording()["memorizing"]:  # the P1 relation's own probe (rdfs5's "-sub")
        return memorizing_prompt(record, n_templates(record.relation) - 1)
    spec = wording()["p2_probes"][name]
    golds = ((pattern_middle(record.pattern),) if spec["golds"] == "subject_pattern"
             else (normalize_label(record.subject),))
    return PaperPrompt(spec["text"], golds, spec["candidates"], record.index)


def paper_item(rule_name: str, record: PaperRecord, n: int) -> PaperItem:
    rule = wording()["rules"][rule_name]
    answer = record.answers[0]
    fields = {
        "a": "an" if answer in _VOWELS else "a",  # the official code's test for rdfs2/3 (quirk)
        "an": _an(answer), "an_subject": _an(record.subject), "answer": answer,
        "subject": record.subject, "Subject": record.subject.capitalize(),
        "pattern": record.pattern.replace("[X]", "[X0]").replace("[Y]", "[Y0]"),
        "clause": _clause(record) if record.relation in ("domain", "range") else "",
    }
    golds = (tuple(pattern_middle(p) for p in record.answer_patterns)
             if rule["golds"] == "answer_patterns" else _golds(record.answers))
    # P1's probe is the memorization study's prompt of the same record under the template
    # the rule's scripts name (the last, "is a particular", for TP/SCO).
    probes = {"P1": memorizing_prompt(record, n_templates(record.relation) - 1),
              "P2": _p2_probe(rule, record)}
    soft = {k: collapse(v.format(**fields, soft="{soft}")) for k, v in rule["soft"].items()
            if k != "relations"}
    return PaperItem(f"{rule_name}-paper-{n:05d}", rule_name, record,
                     collapse(rule["p1"].format(**fields)), collapse(rule["p2"].format(**fields)),
                     rule["hypothesis"], rule["end"], golds, rule["candidates"], probes, soft)


def p2_population(rule_name: str) -> list[PaperPrompt]:
    """Every P2 probe the official code splits P2 over: its P2 run scores the relation's whole
    test set (701 subClassOf records for rdfs9/11, where the items are the first 500)."""
    rule = wording()["rules"][rule_name]
    return [_p2_probe(rule, r) for r in test_records(rule["records"], sliced=False)]


def paper_items(rules=RULES) -> dict[str, list[PaperItem]]:
    """rule → its items, one per test record the rule's P1 relation is probed on."""
    out = {}
    for rule_name in rules:
        if rule_name not in wording()["rules"]:
            raise KgprobeError(f"unknown rule '{rule_name}'; use one of {', '.join(RULES)}")
        relation = wording()["rules"][rule_name]["records"]
        out[rule_name] = [paper_item(rule_name, r, n) for n, r in enumerate(test_records(relation))]
    return out


@functools.cache
def paper_candidates() -> dict[str, tuple[str, ...]]:
    """The official code's candidate sets (data.py's load_candidates): every class label and
    superclass name; every property label and superproperty name; every property pattern and
    superproperty pattern cut to its middle words. Normalized, deduplicated, in file order
    (the official code then sorts them by token count, which only breaks ties)."""
    data = Path(str(resources.files("kgprobe.ontology") / "data"))
    classes = json.loads((data / "class.json").read_text(encoding="utf-8"))
    props = json.loads((data / "property.json").read_text(encoding="utf-8"))

    def unique(labels) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for c in labels if c))

    cls = unique(normalize_label(x) for d in classes
                 for x in [d["rdfs:label"], *(d.get("rdfs:subClassOf") or [])])
    prop = unique(normalize_label(x) for d in props
                  for x in [d["rdfs:label"], *(d.get("rdfs:subPropertyOf") or {})])
    pats = unique(" ".join(x.strip("[XY] .").split()) for d in props
                  for x in [d["pattern"], *(d.get("rdfs:subPropertyOf") or {}).values()])
    return {"class": cls, "property": prop, "property_pattern": pats}


def candidates_for(kind: str, golds=()) -> list[str]:
    """A kind's candidates, with any gold the official sets miss appended (so it is ranked)."""
    base = list(paper_candidates()[kind])
    known = set(base)
    return base + [g for g in dict.fromkeys(golds) if g not in known]
