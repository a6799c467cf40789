"""The typed model read from a triple source: shared by the store and a SPARQL endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from kgprobe.errors import StoreError
from kgprobe.kg.meta import INFERRED_GRAPH
from kgprobe.ontology.model import Ontology, Triple

if TYPE_CHECKING:
    from kgprobe.ontology.from_triples import BuildOptions


class StaleInferencesError(StoreError):
    """The inferred graph was computed from other versions of the sources."""


class ModelReader:
    """Builds `Ontology` from `triples()`; the store and an endpoint differ only in how they
    read triples and check freshness, never in which model they give."""

    default_name = "store"
    #: what `require_fresh` tells the user to do about stale inferences
    stale_fix = "run `kgprobe reason`"  # commands with --reason add it (cli/generate.py)

    def triples(self, graph: str | None = None) -> Iterator[Triple]:
        raise NotImplementedError

    def inferred_state(self) -> str:
        raise NotImplementedError

    def require_fresh(self) -> None:
        """Refuse to read inferences computed from other versions of the sources."""
        if self.inferred_state() == "stale":
            raise StaleInferencesError(
                f"{self.path or self.default_name}: the inferred graph is stale (sources were "
                f"loaded, replaced or removed since); {self.stale_fix}")

    def ontology(self, name: str | None = None, graphs: list[str] | None = None,
                 options: BuildOptions | None = None) -> Ontology:
        """The typed model of the union graph (asserted ∪ inferred), or of some graphs.

        Refuses stale inferences: a model built from them gives wrong gold answers.
        """
        from kgprobe.ontology.from_triples import build_ontology

        name = name or self.default_name
        if graphs is None or INFERRED_GRAPH in graphs:
            self.require_fresh()
        if graphs is None:
            return build_ontology(name, self.triples(), options)
        return build_ontology(name, (t for g in graphs for t in self.triples(g)), options)
