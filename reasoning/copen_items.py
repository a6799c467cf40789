"""COPEN records, the official data loaders and writers, item selection and lexical overlap.

The three tasks of COPEN (Peng et al., EMNLP 2022, §2.2–2.4) share one record shape per task
whether the items come from the authors' ``copen_data.zip`` or are generated here from the
knowledge graph (`copen_kg`) or from feature norms (`copen_norms`):

* `CSJItem` — conceptual similarity judgment: a query entity and candidate entities, one of
  which is an instance of the query's concept (the answer); each candidate has a `kind`
  (``answer``, ``hard``: a concept sharing a superordinate with the query's, ``easy``: not,
  or ``None`` where the data does not say).
* `CPJItem` — conceptual property judgment: a statement, the word span of its concept, a 0/1
  label and the concept chains it belongs to (chain-level evaluation).
* `CiCItem` — conceptualization in contexts: a sentence, the entity and its mention, the
  entity's concept chains and the candidate concepts, the gold candidate.

A hidden label (the official test sets write ``-1``) becomes ``label=None``: such items are
kept, predicted, counted as unlabeled and never scored.

Official layout (the COPEN data release): ``task1/`` (CSJ), ``task2/`` (CPJ), ``task3/``
(CiC), each with ``train.json``, ``dev.json``, ``test.json`` holding a JSON list. The loaders
take the directory, any directory above it, or the zip file itself. Generated sets are
written in the same layout (plus their provenance), so ``--data`` reads them back. The
concept-disjoint split of generated items is `copen_split`'s.
"""

from __future__ import annotations

import functools
import io
import json
import random
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from kgprobe.atomic import write_text
from kgprobe.errors import KgprobeError
from kgprobe.ontology.labels import local_name_label

TASKS = ("csj", "cpj", "cic")
SPLITS = ("train", "dev", "test")
#: The official folder of each task.
TASK_DIRS = {"csj": "task1", "cpj": "task2", "cic": "task3"}


# ----------------------------------------------------------------------------- records


@dataclass
class CSJItem:
    id: str
    split: str
    query: str
    candidates: list[str]
    label: int | None  # index of the answer in `candidates`; None when hidden
    candidate_ids: list[str] = field(default_factory=list)
    kinds: list[str | None] = field(default_factory=list)  # "answer" | "hard" | "easy" | None
    concept: str | None = None  # the query's concept
    candidate_concepts: list[str | None] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    group: str = ""  # items that must be selected together (see `select`)


@dataclass
class CPJItem:
    id: str
    split: str
    text: str
    span: tuple[int, int]  # word indices [start, end) of the concept in text.split()
    label: int | None  # 1 true, 0 false, None hidden
    chains: list[str] = field(default_factory=list)  # chain ids this statement is judged in
    concept: str | None = None
    provenance: dict = field(default_factory=dict)
    group: str = ""

    def pieces(self) -> tuple[str, str, str]:
        """(text before the concept, the concept, text after it), single-spaced."""
        words = self.text.split()
        s, e = self.span
        return " ".join(words[:s]), " ".join(words[s:e]), " ".join(words[e:])


@dataclass
class CiCItem:
    id: str
    split: str
    sentence: str
    entity: str  # the entity's name
    mention: str  # how the sentence refers to it
    chains: list[list[str]]  # concept chains, specific → general (candidate texts)
    candidates: list[str]  # every concept of the chains, once
    label: int | None  # index of the gold concept in `candidates`; None when hidden
    provenance: dict = field(default_factory=dict)
    group: str = ""


Item = CSJItem | CPJItem | CiCItem


def to_json(item: Item) -> dict:
    """A record in the official schema, with kgprobe's extra fields kept alongside."""
    if isinstance(item, CSJItem):
        cands = []
        for i, name in enumerate(item.candidates):
            cand = {"id": item.candidate_ids[i] if item.candidate_ids else str(i), "name": name}
            if item.kinds and item.kinds[i] is not None:
                cand["kind"] = item.kinds[i]
            if item.candidate_concepts and item.candidate_concepts[i] is not None:
                cand["concept"] = item.candidate_concepts[i]
            cands.append(cand)
        label = cands[item.label]["id"] if item.label is not None else -1
        query = {"name": item.query}
        if item.concept:
            query["concept"] = item.concept
        return {"id": item.id, "query": query, "candidates": cands, "label": label,
                "group": item.group, "provenance": item.provenance}
    if isinstance(item, CPJItem):
        rec = {"id": item.id, "text": item.text,
               "concept": {"name": item.concept, "pos": list(item.span)},
               "label": -1 if item.label is None else item.label,
               "chain_ids": item.chains, "group": item.group, "provenance": item.provenance}
        if item.chains:
            rec["chain_id"] = item.chains[0]
        return rec
    words = item.sentence.split()
    pos = _mention_words(words, item.mention)
    return {"id": item.id, "sentence": item.sentence,
            "entity": {"name": item.entity, "pos": list(pos)}, "mention": item.mention,
            "concept_chains": item.chains, "candidates": item.candidates,
            "label": item.candidates[item.label] if item.label is not None else -1,
            "group": item.group, "provenance": item.provenance}


def _mention_words(words: Sequence[str], mention: str) -> tuple[int, int]:
    """Word span [start, end) of the words that contain `mention` (COPEN counts words)."""
    target = mention.split()
    n = len(target)
    for i in range(len(words) - n + 1):
        window = words[i:i + n]
        if window[:-1] == target[:-1] and window[-1].startswith(target[-1]):
            return i, i + n
    return 0, 0


# ----------------------------------------------------------------------------- official loaders


def humanize_concept(name: str) -> str:
    """A concept as it reads in a prompt: ``Q5_SportsTeam`` → ``sports team``.

    COPEN names concepts in DBpedia style (CamelCase, sometimes with an id prefix before the
    last underscore); prompts need words."""
    text = str(name).split("_")[-1] if re.match(r"^Q\d+_", str(name)) else str(name)
    if " " in text.strip():
        return text.strip()
    return local_name_label(text) or text


def _is_hidden(label) -> bool:
    return label is None or (isinstance(label, (int, float)) and int(label) == -1) or label == "-1"


def parse_csj(rec: Mapping, split: str, index: int) -> CSJItem:
    """One CSJ record: ``{"query", "candidates": [{"id", "name"}], "label": id}``.

    The authors' processing code also reads ``{"query", "y": answer, "n": [distractors]}``;
    that shape is accepted too (answer first)."""
    try:
        query = rec["query"]["name"] if isinstance(rec["query"], Mapping) else str(rec["query"])
        if "candidates" in rec:
            cands = list(rec["candidates"])
            label_id = rec.get("label")
        else:
            cands = [rec["y"], *rec["n"]]
            label_id = rec["y"]["id"]
        ids = [str(c.get("id", i)) if isinstance(c, Mapping) else str(i) for i, c in enumerate(cands)]
        names = [c["name"] if isinstance(c, Mapping) else str(c) for c in cands]
    except (KeyError, TypeError) as err:
        raise KgprobeError(f"CSJ record {index} ({split}): missing field {err}; expected "
                           "{\"query\": {\"name\"}, \"candidates\": [{\"id\", \"name\"}], \"label\"}") from None
    label = None
    if not _is_hidden(label_id):
        if str(label_id) not in ids:
            raise KgprobeError(f"CSJ record {index} ({split}): label {label_id!r} is not a candidate id")
        label = ids.index(str(label_id))
    kinds = [c.get("kind") if isinstance(c, Mapping) else None for c in cands]
    if label is not None:
        kinds[label] = "answer"
    concepts = [c.get("concept") if isinstance(c, Mapping) else None for c in cands]
    qconcept = rec["query"].get("concept") if isinstance(rec["query"], Mapping) else None
    rid = str(rec.get("id", f"csj-{split}-{index}"))
    return CSJItem(rid, split, query, names, label, ids, kinds, qconcept, concepts,
                   rec.get("provenance", {}), rec.get("group", rid))


def parse_cpj(rec: Mapping, split: str, index: int) -> CPJItem:
    """One CPJ record: ``{"text", "concept": {"pos": [start, end]}, "label": 0|1}`` (+ chain id)."""
    try:
        text = str(rec["text"])
        concept = rec.get("concept") or {}
        pos = concept.get("pos") if isinstance(concept, Mapping) else None
        pos = pos if pos is not None else rec.get("pos")
        span = (int(pos[0]), int(pos[1])) if pos is not None else (0, 1)
        label = None if _is_hidden(rec.get("label")) else int(rec["label"])
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise KgprobeError(f"CPJ record {index} ({split}): bad field ({err}); expected "
                           "{\"text\", \"concept\": {\"pos\": [start, end]}, \"label\": 0|1}") from None
    n = len(text.split())
    if not 0 <= span[0] < span[1] <= n:
        raise KgprobeError(f"CPJ record {index} ({split}): concept pos {list(span)} is outside the "
                           f"{n} words of {text!r}")
    chains = rec.get("chain_ids")
    if chains is None:
        chains = [str(rec["chain_id"])] if rec.get("chain_id") is not None else []
    name = concept.get("name") if isinstance(concept, Mapping) else None
    rid = str(rec.get("id", f"cpj-{split}-{index}"))
    return CPJItem(rid, split, text, span, label, [str(c) for c in chains],
                   name or " ".join(text.split()[span[0]:span[1]]), rec.get("provenance", {}),
                   rec.get("group", chains[0] if chains else rid))


def parse_cic(rec: Mapping, split: str, index: int) -> CiCItem:
    """One CiC record: ``{"sentence", "entity": {"name", "pos"}, "concept_chains", "candidates",
    "label": concept | -1}``. The authors' raw files put the chains in ``label`` and the gold
    in ``my_label``; that shape is accepted too."""
    try:
        sentence = str(rec["sentence"])
        entity = rec["entity"]
        name = str(entity["name"])
        chains_raw = rec.get("concept_chains")
        gold = rec.get("label")
        if chains_raw is None and isinstance(gold, list):
            chains_raw, gold = gold, rec.get("my_label", -1)
        chains_raw = [list(c) for c in chains_raw]
        cands_raw = list(rec.get("candidates") or dict.fromkeys(c for ch in chains_raw for c in ch))
    except (KeyError, TypeError) as err:
        raise KgprobeError(f"CiC record {index} ({split}): missing field {err}; expected "
                           "{\"sentence\", \"entity\": {\"name\", \"pos\"}, \"concept_chains\", "
                           "\"candidates\", \"label\"}") from None
    words = sentence.split()
    mention = rec.get("mention")
    if not mention:
        pos = entity.get("pos")
        mention = " ".join(words[int(pos[0]):int(pos[1])]) if pos else name
    label = None
    if not _is_hidden(gold):
        if gold not in cands_raw:
            cands_raw.append(gold)
        label = cands_raw.index(gold)
    cands = [humanize_concept(c) for c in cands_raw]
    chains = [[humanize_concept(c) for c in ch] for ch in chains_raw]
    rid = str(rec.get("id", f"cic-{split}-{index}"))
    return CiCItem(rid, split, sentence, name, mention or name, chains, cands, label,
                   rec.get("provenance", {}), rec.get("group", name))


PARSERS = {"csj": parse_csj, "cpj": parse_cpj, "cic": parse_cic}


class _Files:
    """Read ``taskN/split.json`` from a directory tree or a zip archive (one level of nesting)."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = None
        if path.is_file():
            if not zipfile.is_zipfile(path):
                raise KgprobeError(f"{path}: not a directory or a zip file; pass the folder (or the "
                                   "copen_data.zip) that holds task1/ task2/ task3/")
            self.zip = zipfile.ZipFile(path)
            self.names = {n.rstrip("/") for n in self.zip.namelist()}
        elif not path.is_dir():
            raise KgprobeError(f"{path}: no such file or directory; pass the COPEN data folder or zip")

    def find(self, task: str, split: str) -> str | None:
        rel = f"{TASK_DIRS[task]}/{split}.json"
        if self.zip is not None:
            hits = sorted((n for n in self.names if n == rel or n.endswith("/" + rel)), key=len)
            return hits[0] if hits else None
        direct = self.path / rel
        if direct.is_file():
            return str(direct)
        hits = sorted(self.path.glob(f"*/{rel}"))
        return str(hits[0]) if hits else None

    def read(self, name: str) -> list:
        try:
            if self.zip is not None:
                text = io.TextIOWrapper(self.zip.open(name), encoding="utf-8").read()
            else:
                text = Path(name).read_text(encoding="utf-8")
            data = json.loads(text) if text.lstrip().startswith("[") else [
                json.loads(line) for line in text.splitlines() if line.strip()]
        except (OSError, ValueError) as err:
            raise KgprobeError(f"{self.path}:{name}: cannot read a JSON list ({err}); check the file") from None
        if not isinstance(data, list):
            raise KgprobeError(f"{self.path}:{name}: expected a JSON list of records")
        return data


def load_official(path: str | Path, task: str, splits: Sequence[str] = SPLITS) -> dict[str, list[Item]]:
    """The records of one task per split; a split without a file is absent from the result."""
    files = _Files(Path(path))
    parse = PARSERS[task]
    out: dict[str, list[Item]] = {}
    for split in splits:
        name = files.find(task, split)
        if name is None:
            continue
        out[split] = [parse(rec, split, i) for i, rec in enumerate(files.read(name))]
    if not out:
        raise KgprobeError(f"{path}: no {TASK_DIRS[task]}/{{train,dev,test}}.json for {task.upper()}; "
                           "pass the folder that holds task1/ task2/ task3/ (or copen_data.zip)")
    return out


def write_official(directory: str | Path, task: str, splits: Mapping[str, Sequence[Item]]) -> None:
    """Write one task's splits in the official layout (atomic per file)."""
    root = Path(directory) / TASK_DIRS[task]
    for split, items in splits.items():
        write_text(root / f"{split}.json",
                   json.dumps([to_json(i) for i in items], ensure_ascii=False, indent=1) + "\n")


# ----------------------------------------------------------------------------- selection


def select(items: Sequence[Item], limit: int | None, seed: int) -> list[Item]:
    """At most `limit` items, whole groups at a time, groups in a seeded order.

    Groups keep together what is evaluated together (a CPJ chain's statements, a positive and
    its swapped negative), so a limit never cuts a chain in half. The order is a seeded
    shuffle of the groups, so a small limit still samples across concepts."""
    if limit is None or limit >= len(items):
        return list(items)
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(it.group or it.id, []).append(it)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    out: list[Item] = []
    for k in keys:
        if len(out) >= limit:
            break
        if out and len(out) + len(groups[k]) > limit:
            continue
        out.extend(groups[k])
    return out


def by_split(items: Iterable[Item]) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {s: [] for s in SPLITS}
    for it in items:
        out[it.split].append(it)
    return out


# ----------------------------------------------------------------------------- lexical overlap

STOPWORDS = frozenset("a an the of and or in on at for to by with from de la le el du des von van "
                      "der den di da del 's s".split())


@functools.lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """Lower-cased word tokens minus function words: what the artifact filter compares
    (cached: generation compares the same labels many times)."""
    return frozenset(w for w in re.findall(r"[0-9a-z]+", text.lower()) if w not in STOPWORDS)


def lexical_overlap(a: str, b: str) -> bool:
    """True when `a` and `b` share a content word (the paper's artifact, Appendix C.3)."""
    wa, wb = content_words(a), content_words(b)
    if wa & wb:
        return True
    # plural/singular variants: "rivers" vs "river"
    return any(x.rstrip("s") == y.rstrip("s") and len(x) > 3 for x in wa for y in wb)

