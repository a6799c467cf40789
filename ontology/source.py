"""`Source`: what a loader hands the store, the typed model plus the exact triples."""

from __future__ import annotations

from dataclasses import dataclass

from kgprobe.ontology.model import Ontology, Triple


@dataclass
class Source:
    """One loadable source: its model and the triples that represent it in the store."""

    name: str
    path: str
    ontology: Ontology
    triples: list[Triple]
