"""Prompts in the user's language (`--lang L`): L's templates, L's labels, L's grammar.

English is the templates in `templates.toml` and the grammar in `verbalize.py`. Every other
language is one data file beside it, `templates.L.toml`, with the same relations and a
`[grammar]` table: the words a domain/range template needs ("one", "that", "something of
type Y") and how a property label becomes a pattern when it has none. A language is
available exactly when its file is there.

A prompt never mixes languages: in L other than English, a term's label must be tagged L
(`rdfs:label "…"@L`, `skos:prefLabel`, …); an untagged label or the IRI's local name — both
usually English — does not count, and a term without an L label is skipped and counted, as
an ID-like term is. English keeps its documented fallbacks (`--lang en,*`, untagged labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from kgprobe.errors import TemplateError
from kgprobe.ontology.data_files import bundled_data_file, read_toml
from kgprobe.ontology.labels import name_words
from kgprobe.ontology.model import KGP_PATTERN, Triple, is_literal, parse_literal

ENGLISH = "en"
_FILE = re.compile(r"templates\.([a-z]{2,3}(?:-[a-z0-9]+)?)\.toml$")


def available_languages() -> list[str]:
    """English and every language with a bundled `templates.L.toml`, sorted."""
    folder = bundled_data_file("templates.toml").parent
    found = {m.group(1) for p in folder.iterdir() if (m := _FILE.match(p.name))}
    return sorted(found | {ENGLISH})


def templates_file(lang: str) -> Path:
    """The bundled template file of `lang`; a language without one is a one-line error."""
    if lang == ENGLISH:
        return bundled_data_file("templates.toml")
    path = bundled_data_file(f"templates.{lang}.toml")
    if not path.exists():
        raise TemplateError(f"--lang {lang}: no templates in '{lang}'; available: "
                            f"{', '.join(available_languages())}")
    return path


def prompt_language(langs: tuple[str, ...], fallbacks_refused: bool = True) -> str:
    """The language prompts are written in: the first of `--lang` ('*' first: English).

    A regional tag prompts in its language (`es-MX,es`: Spanish, `es-MX` labels first). The
    language must have templates, and (`fallbacks_refused`, the command line's check) a
    language other than English takes no fallback language: `es,en` would put English labels
    in Spanish prompts. The model builder itself ignores them (only `es` labels are kept)."""
    lang = (langs[0] if langs and langs[0] != "*" else ENGLISH).split("-")[0]  # es-MX: es
    templates_file(lang)
    if fallbacks_refused and lang != ENGLISH and any(l.split("-")[0] != lang for l in langs):
        raise TemplateError(f"--lang {','.join(langs)}: prompts in '{lang}' take '{lang}' "
                            f"labels only, never a fallback language; give --lang {lang}")
    return lang


@dataclass(frozen=True)
class Grammar:
    """What a language's templates need beyond the templates (`[grammar]` of its file)."""

    lang: str
    one: str  # the subject of a domain template's clause ("uno")
    that: str  # the object of a range template's clause ("eso")
    something: str  # an unknown domain or range ("algo")
    typed: str  # a known one, without an article whose gender is unknown ("algo de tipo {}")
    verbs: frozenset[str] = field(default_factory=frozenset)
    prepositions: frozenset[str] = field(default_factory=frozenset)
    verb_pattern: str = "[X] {} [Y] ."
    copula_pattern: str = "[X] {} [Y] ."
    noun_pattern: str = "[X] {} [Y] ."

    def default_pattern(self, label: str) -> str:
        """A property label as a pattern: a verb phrase between subject and object ("tiene
        autor"), a phrase ending in a preposition after the copula ("es parte de"), any other
        noun phrase in the language's article-free construction ("tiene como autor")."""
        words = label.split()
        if not words:
            return "[X] [Y] ."
        if words[0].lower() in self.verbs:
            return self.verb_pattern.format(label)
        if words[-1].lower() in self.prepositions:
            return self.copula_pattern.format(label)
        return self.noun_pattern.format(label)

    def property_meta(self, pattern: str, domain: str | None,
                      range_: str | None) -> dict[str, str]:
        """`verbalize.property_meta` in this language: "uno trabaja para algo de tipo
        organización", "algo de tipo persona trabaja para eso"."""
        dom = self.typed.format(domain) if domain else self.something
        rng = self.typed.format(range_) if range_ else self.something
        clause = lambda x, y: pattern.replace("[X]", x).replace("[Y]", y).rstrip(" .")  # noqa: E731
        return {"as_subject": clause(self.one, rng), "as_object": clause(dom, self.that)}


def load_grammar(lang: str, data: dict, path: str) -> Grammar | None:
    """The `[grammar]` table of a template file (None for English, whose grammar is code)."""
    if lang == ENGLISH:
        return None
    spec = data.get("grammar")
    if not isinstance(spec, dict):
        raise TemplateError(f"{path}: templates in '{lang}' need a [grammar] table; copy it "
                            "from templates.es.toml")
    try:
        return Grammar(
            lang, spec["one"], spec["that"], spec["something"], spec["typed"],
            frozenset(w.lower() for w in spec.get("verbs", ())),
            frozenset(w.lower() for w in spec.get("prepositions", ())),
            spec.get("verb_pattern", "[X] {} [Y] ."), spec.get("copula_pattern", "[X] {} [Y] ."),
            spec.get("noun_pattern", "[X] {} [Y] ."))
    except KeyError as err:
        raise TemplateError(f"{path}: [grammar] needs '{err.args[0]}'; copy it from "
                            "templates.es.toml") from None


# ------------------------------------------------------------------------------- labels


def _tagged(lang: str | None, wanted: str) -> bool:
    return lang is not None and (lang == wanted or lang.startswith(wanted + "-"))


def language_labels(labels: dict[str, str | None], raw: dict[str, dict[str, list]],
                    lang: str) -> tuple[dict[str, str | None], set[str]]:
    """`labels` (as `pick_label` chose them) with every label not tagged `lang` taken out.

    Returns the labels and the terms that lost theirs (an untagged label, a local name, a
    label in another language): they are skipped, as a term without words is. English is
    returned unchanged."""
    if lang == ENGLISH:
        return labels, set()
    out, missing = {}, set()
    for iri, label in labels.items():
        texts = {t.strip() for values in raw.get(iri, {}).values() for t, tag in values
                 if _tagged(tag, lang)}
        if label and (label in texts or label in {name_words(t) for t in texts}):
            out[iri] = label
        else:
            out[iri] = None
            missing.add(iri)
    return out, missing


class MissingLabels:
    """An exclusion list that also names the terms without a label in the prompt language,
    so they are skipped, reconnected around and counted like every other excluded term."""

    def __init__(self, base, missing: set[str], lang: str):
        self._base, self._missing, self._reason = base, missing, f"{lang}-unlabelled"

    def reason(self, iri: str, types=frozenset()) -> str | None:
        return self._reason if iri in self._missing else self._base.reason(iri, types)

    def __getattr__(self, name: str):
        return getattr(self._base, name)


def localize_patterns(onto, lang: str, triples: Iterable[Triple] = ()) -> None:
    """Every property's pattern in `lang` (other than English): its `kgp:pattern` tagged
    `lang` (`"[X] trabaja para [Y] ."@es`), else the language's default from its `@lang`
    label. An untagged `kgp:pattern` is read as English and not used."""
    if lang == ENGLISH:
        return
    path = templates_file(lang)
    grammar = load_grammar(lang, read_toml(path, TemplateError, "template file",
                                           "templates.toml"), str(path))
    own = {}
    for s, p, o in triples:
        if p == KGP_PATTERN and is_literal(o):
            text, tag = parse_literal(o)
            if _tagged(tag, lang):
                own[s] = text
    for prop in onto.properties.values():
        prop.pattern = own.get(prop.iri) or (
            grammar.default_pattern(prop.label) if prop.label else None)
