"""Terms that are never answers, candidates or words of a probe: datatypes, top classes,
OWL/RDF vocabulary (the documented list `excluded_terms.toml`, replaceable by a file).

A datatype is not a class of things ("X is an integer" probes nothing an ontology says about
X), and a top class is the answer to every question ("thing" was a third of schema.org's and
DBpedia's reasoning answers), so items whose only answer is one of them measure nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgprobe.errors import OntologyError
from kgprobe.ontology.data_files import bundled_data_file, read_toml

#: Why a term is excluded, besides the list's own reasons: no label usable as words.
ID_LIKE = "id-like"


@dataclass(frozen=True)
class Exclusions:
    """reason → IRIs, namespace prefixes and classes whose instances are excluded."""

    iris: dict[str, frozenset[str]] = field(default_factory=dict)
    prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    types: dict[str, frozenset[str]] = field(default_factory=dict)
    path: str = ""

    def reason(self, iri: str, types: set[str] | frozenset[str] = frozenset()) -> str | None:
        """Why `iri` (with its rdf:types) is excluded, or None."""
        for reason, iris in self.iris.items():
            if iri in iris:
                return reason
        for reason, prefixes in self.prefixes.items():
            if iri.startswith(prefixes):
                return reason
        for reason, classes in self.types.items():
            if types & classes:
                return reason
        return None


def default_exclusions_path() -> Path:
    return bundled_data_file("excluded_terms.toml")


def load_exclusions(path: str | Path | None = None) -> Exclusions:
    """Read an exclusion list (the bundled one by default)."""
    path = Path(path) if path is not None else default_exclusions_path()
    data = read_toml(path, OntologyError, "exclusion list", default_exclusions_path().name)
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    return Exclusions(
        iris={r: frozenset(t.get("iris", ())) for r, t in tables.items()},
        prefixes={r: tuple(t.get("prefixes", ())) for r, t in tables.items()},
        types={r: frozenset(t.get("types", ())) for r, t in tables.items()},
        path=str(path))
