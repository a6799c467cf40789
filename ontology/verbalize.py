"""Turning ontology statements into sentences: OpenPrompt-syntax templates and patterns.

The template *syntax* lives here, at the bottom layer, because the probe generator renders
premises and hypotheses with it; the model-facing side of templates (soft vectors, scoring)
is in `prompts/`.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from kgprobe.errors import TemplateError
from kgprobe.ontology.data_files import bundled_data_file, read_toml
from kgprobe.ontology.labels import with_article
from kgprobe.ontology.languages import ENGLISH, Grammar, load_grammar, templates_file

MASK = "[MASK]"
SOFT = "[SOFT]"
_PART = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Part:
    """One piece of a template: literal text, a placeholder, the mask, a soft token or a meta field."""

    kind: str  # "text" | "placeholder" | "mask" | "soft" | "meta"
    value: str | None = None  # placeholder/meta name, soft init word, or the text


@dataclass(frozen=True)
class Template:
    source: str
    parts: tuple[Part, ...]

    @property
    def n_soft(self) -> int:
        return sum(p.kind == "soft" for p in self.parts)

    def render(self, text_a: str = "", text_b: str = "", meta: dict[str, str] | None = None,
               mask: str = MASK, soft: str | Sequence[str] = SOFT) -> str:
        """The template as text: the mask as `mask`, soft tokens as `soft` (one string for
        all, or the i-th name for the i-th soft token, so each can carry its own vector)."""
        out = []
        n_soft = 0
        for part in self.parts:
            if part.kind == "text":
                out.append(part.value)
            elif part.kind == "mask":
                out.append(mask)
            elif part.kind == "soft":
                out.append(soft if isinstance(soft, str) else f" {soft[n_soft]} ")
                n_soft += 1
            elif part.kind == "placeholder":
                out.append({"text_a": text_a, "text_b": text_b}[part.value])
            else:
                if meta is None or part.value not in meta:
                    raise TemplateError(f"template '{self.source}': no value for meta field "
                                        f"'{part.value}'")
                out.append(meta[part.value])
        return re.sub(r"\s+", " ", "".join(out)).strip()

    def fill(self, answer: str, text_a: str = "", text_b: str = "",
             meta: dict[str, str] | None = None, soft: str | Sequence[str] = SOFT) -> str:
        """The statement with the mask filled by `answer`, articles fixed ("is an animal")."""
        text = self.render(text_a, text_b, meta, mask="\0", soft=soft)
        text = re.sub(r"\b(a|an) \0", lambda m: with_article(answer), text)
        return capitalize(text.replace("\0", answer))


def parse_template(text: str) -> Template:
    """Parse OpenPrompt's template syntax; exactly one `{"mask"}` is required."""
    parts: list[Part] = []
    pos = 0
    for m in _PART.finditer(text):
        if m.start() > pos:
            parts.append(Part("text", text[pos:m.start()]))
        try:
            spec = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            raise TemplateError(f"template '{text}': cannot read {m.group(0)}; write parts as "
                                '{"mask"}, {"placeholder":"text_a"}, {"soft"} or {"meta":"name"}') from None
        found = _parts(spec)
        if found is None:
            raise TemplateError(f"template '{text}': unsupported part {m.group(0)}")
        parts += found
        pos = m.end()
    if pos < len(text):
        parts.append(Part("text", text[pos:]))
    n_masks = sum(p.kind == "mask" for p in parts)
    if n_masks != 1:
        raise TemplateError(f"template '{text}': has {n_masks} mask slots, needs exactly one; "
                            'add {"mask"} where the answer goes')
    return Template(text, tuple(parts))


def _parts(spec: object) -> list[Part] | None:
    """The parts one ``{…}`` of a template stands for (a soft part may be duplicated), or
    None for one OpenPrompt has but kgprobe does not read."""
    if isinstance(spec, set) and spec in ({"mask"}, {"soft"}):
        return [Part(next(iter(spec)))]
    if not isinstance(spec, dict) or not spec:
        return None
    key = next(iter(spec))
    if key == "placeholder" and spec[key] in ("text_a", "text_b"):
        return [Part("placeholder", spec[key])]
    if key == "mask":
        return [Part("mask")]
    if key == "soft":
        return [Part("soft", spec[key] or None) for _ in range(int(spec.get("duplicate", 1)))]
    if key in ("meta", "text"):
        return [Part(key, str(spec[key]))]
    return None


@dataclass
class RelationTemplates:
    name: str
    candidates: str  # "class" | "property" | "property_pattern"
    manual: list[Template]
    soft: list[Template] = field(default_factory=list)
    hypothesis: int = 0  # which manual template states a reasoning hypothesis

    @property
    def premise(self) -> Template:
        return self.manual[0]


@dataclass
class TemplateSet:
    relations: dict[str, RelationTemplates]
    conjunction: str = "Therefore ,"
    path: str = ""
    lang: str = ENGLISH  # the language its templates are written in (`--lang`)
    grammar: Grammar | None = None  # None: English, whose grammar is this module's code

    def default_pattern(self, label: str) -> str:
        """A property without a pattern, verbalized in the templates' language."""
        return self.grammar.default_pattern(label) if self.grammar else default_pattern(label)

    def property_meta(self, pattern: str, domain: str | None,
                      range_: str | None) -> dict[str, str]:
        """The domain/range templates' meta fields in the templates' language."""
        if self.grammar:
            return self.grammar.property_meta(pattern, domain, range_)
        return property_meta(pattern, domain, range_)

    def __getitem__(self, relation: str) -> RelationTemplates:
        if relation not in self.relations:
            raise TemplateError(f"{self.path}: no templates for relation '{relation}'; add a "
                                f"[relations.{relation}] table")
        return self.relations[relation]


def default_templates_path() -> Path:
    return bundled_data_file("templates.toml")


def load_templates(path: str | Path | None = None, lang: str | None = None) -> TemplateSet:
    """Read a template TOML file (by default the bundled one of `lang`, English if None; a
    file's own `lang = "es"` says which language it is written in)."""
    path = Path(path) if path is not None else templates_file(lang or ENGLISH)
    data = read_toml(path, TemplateError, "template file", default_templates_path().name)
    relations = {}
    for name, spec in data.get("relations", {}).items():
        manual = [parse_template(t) for t in spec.get("manual", [])]
        if not manual:
            raise TemplateError(f"{path}: relation '{name}' needs at least one manual template")
        hyp = int(spec.get("hypothesis", 0))
        if not 0 <= hyp < len(manual):
            raise TemplateError(f"{path}: relation '{name}': hypothesis={hyp} names no manual "
                                "template")
        relations[name] = RelationTemplates(
            name, spec.get("candidates", "class"), manual,
            [parse_template(t) for t in spec.get("soft", [])], hyp)
    written_in = str(data.get("lang", lang or ENGLISH))
    return TemplateSet(relations, data.get("conjunction", "Therefore ,"), str(path),
                       written_in, load_grammar(written_in, data, str(path)))


# ------------------------------------------------------------------------ property patterns


def reasoning_text(premises: Sequence[str], conjunction: str, hypothesis: str) -> str:
    """A reasoning prompt: the written premises in order, the conjunction (a `TemplateSet`'s,
    or the paper protocol's), the hypothesis, one space apart. Every study, export and
    generator writes its reasoning prompts here, so a prompt scored in one place reads the
    same wherever else it is written."""
    return " ".join([*premises, conjunction, hypothesis])


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def default_pattern(label: str) -> str:
    """A grammatical pattern for a property that has none (`kgp:pattern` gives one), from the
    shape of its label (`wording.property_pattern`): a verb phrase goes between subject and
    object ("affects", "resulted in"), a participle or a word ending in a preposition
    follows "is" ("located in", "part of"), a noun phrase follows "has" ("telephone
    number"); a label of no clear shape gets a conservative pattern ('[X] stands in the
    relation "interval meets" to [Y] .') rather than a wrong sentence.
    """
    from kgprobe.ontology.wording import property_pattern

    return property_pattern(label)


def pattern_clause(pattern: str, x: str, y: str) -> str:
    """The pattern as a clause with its slots filled and the final period dropped."""
    return pattern.replace("[X]", x).replace("[Y]", y).rstrip(" .")


def pattern_sentence(pattern: str, x: str, y: str) -> str:
    return capitalize(pattern_clause(pattern, x, y) + " .")


def property_meta(pattern: str, domain: str | None, range_: str | None) -> dict[str, str]:
    """The meta fields domain/range templates use to say 'one who has this property':
    ``as_subject`` ("one played for a sports team") and ``as_object`` ("a person played
    for that"). Unknown domain or range read as "something"."""
    dom = with_article(domain) if domain else "something"
    rng = with_article(range_) if range_ else "something"
    # a pattern that names the range already ("is part of constellation [Y]") says it once
    # ("one is part of a constellation")
    named = range_ and re.compile(rf" {re.escape(range_)} \[Y\]", re.I)
    subject_pattern = named.sub(" [Y]", pattern) if named else pattern
    return {"as_subject": pattern_clause(subject_pattern, "one", rng),
            "as_object": pattern_clause(pattern, dom, "that")}


def pattern_middle(pattern: str) -> str:
    """What a pattern says between its subject and object: the rdfs7 candidate."""
    body = pattern.rstrip(" .")
    if "[X]" in body and "[Y]" in body and body.index("[X]") < body.index("[Y]"):
        return body[body.index("[X]") + 3:body.index("[Y]")].strip()
    return body.replace("[X]", "").replace("[Y]", "").strip()


_PUNCTUATION = re.compile(r"[-()/]")
_SPACES = re.compile(r"\s+")


@functools.lru_cache(maxsize=1 << 16)
def normalize_label(label: str) -> str:
    """Candidate form of a label, as the paper normalizes them: hyphens, parentheses and
    slashes become spaces, whitespace is collapsed. Cached: a study normalizes the same few
    thousand labels millions of times (every derivation's statements name them again)."""
    return _SPACES.sub(" ", _PUNCTUATION.sub(" ", label)).strip()
