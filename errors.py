"""User-facing errors.

Every error a user can cause (bad input files, unknown models, invalid queries) is a
`KgprobeError`: the CLI catches it once, prints `str(err)` as one line and exits 2.
Anything else is a bug and keeps its traceback.
"""


class KgprobeError(Exception):
    """Base class: its message is one line naming the input and the fix."""


class OntologyError(KgprobeError):
    """An ontology source cannot be read (missing file, malformed RDF or JSON)."""


class StoreError(KgprobeError):
    """The triple store cannot be opened, queried or written."""


class QueryError(StoreError):
    """A SPARQL query is invalid."""


class TemplateError(KgprobeError):
    """A prompt template is malformed (for example it has no mask slot)."""


class ModelError(KgprobeError):
    """A model cannot be loaded or does not support the requested method."""


class StudyError(KgprobeError):
    """A study's settings or run folder are unusable (bad option values, another run's folder)."""


class OutputError(KgprobeError):
    """An output file cannot be created where the user asked (no such folder, a file in the
    way, a read-only or full disk)."""


class OptionError(KgprobeError):
    """A command-line value out of its option's range (a negative seed, a zero batch size),
    refused as argparse reads it (`cli/bounds.py`)."""


class InferenceLimitError(KgprobeError):
    """Reasoning would derive more triples than `--max-inferred` allows (`reasoning/
    materialize.py`): refused while deriving, before the store is touched, because a closure
    can grow with the square of its input (a chain of n classes derives n²/2 triples) and a
    transaction that large exhausts memory and leaves a log every later reader replays.

    `derived`: how many the closure derives (at least that many unless `exact`); `limit`:
    the bound it passed."""

    def __init__(self, derived: int, limit: int, message: str | None = None, *,
                 exact: bool = False):
        self.derived, self.limit, self.exact = derived, limit, exact
        super().__init__(message or f"the closure derives {'' if exact else 'at least '}"
                         f"{derived:,} triples, more than the limit of {limit:,}")
