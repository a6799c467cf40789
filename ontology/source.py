"""`Source`: what a loader hands the store, the typed model plus the exact triples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgprobe.ontology.formats import RdfInput
from kgprobe.ontology.model import Ontology, Triple

if TYPE_CHECKING:
    from kgprobe.ontology.from_triples import BuildOptions


@dataclass
class Source:
    """One loadable source: its model and the triples that represent it in the store.

    A lazily loaded file (`rdf` set) has neither until the store bulk-loads it: then
    `ontology` is built from what the store holds and `triples` stays None (a million
    Python tuples is what the bulk load avoids); `count` is its number of triples."""

    name: str
    path: str
    ontology: Ontology | None
    triples: list[Triple] | None
    rdf: RdfInput | None = None
    count: int | None = None
    #: how the store builds a lazily loaded file's model (`--lang`, `--keep-…`): the same
    #: options as an eagerly loaded one, so `kg load` counts what `generate` will
    options: BuildOptions | None = None

    @property
    def size(self) -> int:
        return len(self.triples) if self.triples is not None else (self.count or 0)
