"""Semantic feature production norms: loaders and property phrasing.

Two layouts are read, each from a path the user gives (the norms are not redistributable,
so nothing is bundled):

* **McRae et al. (2005)**: ``CONCS_FEATS_concstats_brm.txt`` (tab-separated, header row):
  ``Concept``, ``Feature`` (``has_fur``, ``a_mammal``, ``beh_-_eats``), ``Prod_Freq`` (how
  many of 30 participants listed it), ``BR_Label`` (Cree & McRae's category:
  ``visual-colour``, ``function``, ``encyclopaedic``, ``taxonomic`` …) and ``Phon_1st`` (the
  concept's first phoneme, which tells the a/an question without guessing).
* **CSLB (Devereux et al., 2014)**: ``norms.dat`` (tab-separated, header row) with the columns
  ``concept``, ``feature``, ``pf`` (production frequency) and ``feature type``
  (``visual perceptual``, ``other perceptual``, ``functional``, ``encyclopaedic``,
  ``taxonomic``); other columns (feature alternatives, participant list) are ignored.
  Features are already written as verb phrases (``has fur``, ``does eat``).

Every feature becomes a verb phrase that reads grammatically after "A bear …" and inside a
conjunction (`conjoin`): ``has_fur`` → "has fur", ``a_mammal`` → "is a mammal",
``used_for_cutting`` → "is used for cutting", ``beh_-_eats_fish`` → "eats fish".
Categories are mapped onto the five coarse groups of the CSLB norms (`GROUPS`) so that the
two datasets and the paper's Figure 3a speak the same language.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from kgprobe.errors import KgprobeError
from kgprobe.ontology.labels import starts_with_vowel_sound

__all__ = [
    "NormsError",
    "Feature",
    "Concept",
    "Norms",
    "GROUPS",
    "FORMATS",
    "load_norms",
    "load_mcrae",
    "load_cslb",
    "phrase_mcrae",
    "phrase_cslb",
    "conjoin",
    "concept_word",
    "PARTICIPLES",
    "coarse_group",
    "load_word_list",
]

FORMATS = ("mcrae", "cslb")
MCRAE_FILE = "CONCS_FEATS_concstats_brm.txt"
CSLB_FILE = "norms.dat"

#: The CSLB feature types, which the paper's per-category analysis uses.
GROUPS = ("visual perceptual", "other perceptual", "functional", "encyclopaedic", "taxonomic")

#: McRae's ``BR_Label`` (brain-region taxonomy) → CSLB feature type.
_MCRAE_GROUPS = {
    "visual-form_and_surface": "visual perceptual",
    "visual-colour": "visual perceptual",
    "visual-motion": "visual perceptual",
    "tactile": "other perceptual",
    "sound": "other perceptual",
    "taste": "other perceptual",
    "smell": "other perceptual",
    "function": "functional",
    "encyclopaedic": "encyclopaedic",
    "taxonomic": "taxonomic",
}


class NormsError(KgprobeError):
    """The norms file cannot be read (missing, wrong layout, empty)."""


@dataclass(frozen=True)
class Feature:
    """One concept–feature pair of the norms."""

    concept: str  # the concept's key in the norms ("bat_(animal)")
    feature: str  # the feature as written in the norms ("has_fur")
    pf: int  # production frequency: participants (of 30) who listed it
    category: str  # the dataset's own category label ("visual-colour", "functional")
    group: str  # one of GROUPS, or "other" for an unknown label
    phrase: str  # verb phrase for prompts ("has fur")
    order: int = 0  # position in the file, the tie-break among equal PF


@dataclass
class Concept:
    """A concept with its features, most produced first (PF decreasing, then file order)."""

    key: str  # as in the norms ("bat_(animal)")
    word: str  # the word that fills a slot ("bat")
    vowel_sound: bool  # starts with a vowel sound (takes "an")
    features: list[Feature] = field(default_factory=list)


@dataclass
class Norms:
    """A loaded norms file. `concepts` keeps the file's order."""

    path: Path
    format: str
    concepts: dict[str, Concept]

    @property
    def features(self) -> list[Feature]:
        return [f for c in self.concepts.values() for f in c.features]

    def words(self) -> list[str]:
        """Distinct concept words, in file order (the restricted vocabulary option)."""
        return list(dict.fromkeys(c.word for c in self.concepts.values()))


def concept_word(key: str) -> str:
    """The slot filler of a norms concept: sense tags and underscores removed.

    ``bat_(animal)`` → "bat"; CSLB's ``bat_(baseball)`` likewise; ``teddy_bear`` → "teddy bear".
    """
    word = re.sub(r"_?\(.*?\)", "", key).strip("_ ")
    return " ".join(word.replace("_", " ").split())


def coarse_group(label: str) -> str:
    """A dataset's category label → one of `GROUPS` ("other" when unknown)."""
    key = label.strip().lower()
    if key in _MCRAE_GROUPS:
        return _MCRAE_GROUPS[key]
    norm = key.replace("_", " ").replace("-", " ")
    if norm in GROUPS:
        return norm
    if norm in ("function", "functional"):
        return "functional"
    return "other"


# --------------------------------------------------------------------------------------
# Phrasing
# --------------------------------------------------------------------------------------

#: First words of McRae features that are already a third-person verb.
_VERBS = {
    "is", "has", "lives", "grows", "requires", "tastes", "smells", "causes", "comes", "becomes",
    "carries", "juts", "likes", "uses", "sounds", "eats", "produces", "makes", "contains",
    "goes", "flies", "swims", "can", "does",
}
#: First words that are past participles: "used_for_cutting" → "is used for cutting".
PARTICIPLES = {
    "used", "made", "worn", "found", "eaten", "hunted", "herded", "owned", "killed", "dropped",
    "launched", "associated", "bought", "sold", "kept", "ridden", "played", "grown", "held",
    "driven", "built", "cooked", "served", "measured", "attached", "shot", "thrown", "pulled",
    "pushed", "stored", "sat", "slept", "baked", "fried", "boiled", "peeled", "cut", "picked",
}
#: Bare nouns and prepositions that need "is": "clothing" → "is clothing", "like_a_cat" → "is like a cat".
_COPULA = {"a", "an", "the", "like", "part", "clothing", "furniture"}
_SYMBOLS = {">": "more than", "<": "less than", "&": "and", "+": "plus"}
#: McRae behaviours whose subject is not the concept ("inbeh_-_water_flows_through_it").
_IRREGULAR = {
    "beh_-_bark_peals_off": "has bark that peels off",
    "inbeh_-_water_flows_through_it": "lets water flow through it",
    "inbeh_-_water_passes_through": "lets water pass through",
}


def _clean(text: str) -> str:
    text = text.replace("/", " or ")
    for sym, words in _SYMBOLS.items():
        text = text.replace(sym, f" {words} ")
    return " ".join(text.replace("_", " ").split())


def phrase_mcrae(feature: str) -> str:
    """A McRae feature name as a verb phrase that follows a singular subject.

    ``has_fur`` → "has fur"; ``is_big`` → "is big"; ``a_mammal`` → "is a mammal";
    ``made_of_metal`` → "is made of metal"; ``beh_-_eats_fish`` → "eats fish";
    ``different_colours`` → "comes in different colours"; ``eg_-_cheddar`` → "has kinds such
    as cheddar"; ``symbol_of_peace`` → "is a symbol of peace"; ``king_of_the_jungle`` → "is the
    king of the jungle"; slashes read "or" (``is_furry/fuzzy`` → "is furry or fuzzy").
    """
    raw = feature.strip()
    if raw in _IRREGULAR:
        return _IRREGULAR[raw]
    m = re.match(r"^(in)?beh_-_(.*)$", raw)
    if m:  # behaviours are verb phrases already: "beh_-_eats_fish", "inbeh_-_rolls"
        return _clean(m.group(2))
    m = re.match(r"^eg_(?:-_)?(.*)$", raw)
    if m:
        return "has kinds such as " + _clean(m.group(1))
    text = _clean(raw)
    words = text.split()
    if not words:
        raise NormsError(f"empty McRae feature {feature!r}; fix the norms file")
    first = words[0]
    low = first.lower()
    if low in _VERBS:
        return text
    if low in PARTICIPLES or low == "bought":
        return "is " + text
    if low == "different":
        return "comes in " + text
    if low == "symbol":
        return "is a " + text
    if low == "king":
        return "is the " + text
    if low in _COPULA:
        return "is " + text
    # Unknown first word: a third-person verb ("hibernates") stays, anything else takes "is".
    return text if low.endswith("s") and not low.endswith("ss") else "is " + text


def _third_person(verb: str) -> str:
    irregular = {"be": "is", "have": "has", "do": "does", "go": "goes", "can": "can"}
    if verb in irregular:
        return irregular[verb]
    if re.search(r"(s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def phrase_cslb(feature: str) -> str:
    """A CSLB feature ("has fur", "does eat", "is a mammal") as a verb phrase.

    CSLB writes features as verb phrases already; its "does X" (an action) becomes the
    simple present ("does eat grass" → "eats grass"), and underscores (some exports use them)
    become spaces.
    """
    text = _clean(feature)
    words = text.split()
    if not words:
        raise NormsError(f"empty CSLB feature {feature!r}; fix the norms file")
    if words[0].lower() == "does" and len(words) > 1:
        return " ".join([_third_person(words[1].lower())] + words[2:])
    if words[0].lower() in _VERBS or words[0].lower() in ("is", "has", "can"):
        return text
    if words[0].lower() in PARTICIPLES:
        return "is " + text
    return "is " + text if words[0].lower() in _COPULA else text


def conjoin(phrases: Sequence[str]) -> str:
    """Join verb phrases as one compound predicate (Oxford comma, as the paper's Figure 1).

    ["has fur"] → "has fur"; two → "has fur and is big"; three or more →
    "has fur, is big, and has claws".
    """
    items = [p.strip() for p in phrases if p.strip()]
    if not items:
        raise ValueError("conjoin needs at least one phrase")
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + ", and " + items[-1]


# --------------------------------------------------------------------------------------
# Loaders
# --------------------------------------------------------------------------------------


def _resolve(path: str | Path, filename: str, fmt: str) -> Path:
    path = Path(path).expanduser()
    if path.is_dir():
        other = {MCRAE_FILE: (CSLB_FILE, "cslb"), CSLB_FILE: (MCRAE_FILE, "mcrae")}[filename]
        if not (path / filename).is_file() and (path / other[0]).is_file():
            raise NormsError(f"{path}: holds {other[0]}, not the {fmt} file {filename}; pass --norms-format {other[1]}")
        path = path / filename
    if not path.is_file():
        raise NormsError(f"{path}: norms file not found; pass the {fmt} file ({filename}) or its folder "
                         "with --norms PATH")
    return path


def _read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise NormsError(f"{path}: the norms file is empty; pass a non-empty norms file")
    rows = list(csv.reader(lines, delimiter="\t"))
    return [h.strip() for h in rows[0]], rows[1:]


def _column(header: list[str], names: Iterable[str]) -> int | None:
    lowered = [h.lower().replace("_", " ").strip() for h in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def _sort_features(concepts: dict[str, Concept]) -> None:
    for concept in concepts.values():
        concept.features.sort(key=lambda f: (-f.pf, f.order))


def load_mcrae(path: str | Path) -> Norms:
    """McRae et al.'s ``CONCS_FEATS_concstats_brm.txt`` (or the folder that holds it)."""
    file = _resolve(path, MCRAE_FILE, "McRae")
    header, rows = _read_table(file)
    cols = {name: _column(header, [name.lower().replace("_", " ")])
            for name in ("Concept", "Feature", "Prod_Freq", "BR_Label", "Phon_1st")}
    missing = [n for n in ("Concept", "Feature", "Prod_Freq", "BR_Label") if cols[n] is None]
    if missing:
        hint = " (this looks like the CSLB layout: pass --norms-format cslb)" if _column(header, ["pf"]) is not None else ""
        raise NormsError(f"{file}: not the McRae layout, no column {', '.join(missing)}{hint}; "
                         f"pass {MCRAE_FILE} or use --norms-format cslb")
    concepts: dict[str, Concept] = {}
    for i, row in enumerate(rows):
        if len(row) <= max(c for c in cols.values() if c is not None):
            continue
        key = row[cols["Concept"]].strip()
        feat = row[cols["Feature"]].strip()
        if not key or not feat:
            continue
        try:
            pf = int(float(row[cols["Prod_Freq"]]))
        except ValueError:
            raise NormsError(f"{file}:{i + 2}: production frequency {row[cols['Prod_Freq']]!r} is not a number; "
                             "fix the norms file") from None
        phon = row[cols["Phon_1st"]].strip() if cols["Phon_1st"] is not None else None
        concept = concepts.get(key)
        if concept is None:
            word = concept_word(key)
            concept = concepts[key] = Concept(key, word, starts_with_vowel_sound(word, phon))
        label = row[cols["BR_Label"]].strip()
        concept.features.append(Feature(key, feat, pf, label, coarse_group(label), phrase_mcrae(feat), i))
    if not concepts:
        raise NormsError(f"{file}: no concept–feature rows; pass the full McRae file")
    _sort_features(concepts)
    return Norms(file, "mcrae", concepts)


def load_cslb(path: str | Path) -> Norms:
    """The CSLB norms (``norms.dat``, or the folder that holds it)."""
    file = _resolve(path, CSLB_FILE, "CSLB")
    header, rows = _read_table(file)
    c_concept = _column(header, ["concept"])
    c_feature = _column(header, ["feature"])
    c_pf = _column(header, ["pf", "production frequency", "prod freq"])
    c_type = _column(header, ["feature type", "featuretype", "type"])
    if None in (c_concept, c_feature, c_pf, c_type):
        hint = " (this looks like the McRae layout: pass --norms-format mcrae)" if _column(header, ["br label"]) is not None else ""
        raise NormsError(f"{file}: not the CSLB layout, it needs the columns concept, feature, pf and "
                         f"feature type{hint}; pass the CSLB norms.dat or use --norms-format mcrae")
    concepts: dict[str, Concept] = {}
    width = max(c_concept, c_feature, c_pf, c_type)
    for i, row in enumerate(rows):
        if len(row) <= width:
            continue
        key, feat = row[c_concept].strip(), row[c_feature].strip()
        if not key or not feat:
            continue
        try:
            pf = int(float(row[c_pf]))
        except ValueError:
            raise NormsError(f"{file}:{i + 2}: production frequency {row[c_pf]!r} is not a number; "
                             "fix the norms file") from None
        concept = concepts.get(key)
        if concept is None:
            word = concept_word(key)
            concept = concepts[key] = Concept(key, word, starts_with_vowel_sound(word))
        label = row[c_type].strip()
        concept.features.append(Feature(key, feat, pf, label, coarse_group(label), phrase_cslb(feat), i))
    if not concepts:
        raise NormsError(f"{file}: no concept–feature rows; pass the full CSLB norms file")
    _sort_features(concepts)
    return Norms(file, "cslb", concepts)


def load_norms(path: str | Path, fmt: str = "mcrae") -> Norms:
    if fmt == "mcrae":
        return load_mcrae(path)
    if fmt == "cslb":
        return load_cslb(path)
    raise NormsError(f"unknown norms format {fmt!r}; use one of {', '.join(FORMATS)}")


def load_word_list(path: str | Path) -> list[str]:
    """One word per line (LAMA's ``common_vocab_cased.txt``), order kept, blanks skipped."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise NormsError(f"{path}: vocabulary file not found; pass a one-word-per-line file with --vocab-file")
    words = [w.strip() for w in path.read_text(encoding="utf-8").splitlines()]
    return list(dict.fromkeys(w for w in words if w))
