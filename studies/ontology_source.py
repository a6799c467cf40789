"""One ontology source for every command that reads an ontology.

`generate`, the studies that read an ontology (premise ablation, memorization, consistency,
COPEN's ``--from-kg``) and `export lm-eval` take the same option group
(`add_ontology_options`): where the ontology comes from (``--store DIR``, ``--endpoint URL``,
``--ontology FILE|bundled``, and ``--probes DIR`` where probe sets are read) and how its model
is read from triples (``--lang``, ``--skos``, ``--schema-includes``, ``--exclusions``,
``--keep-annotations``, ``--keep-deprecated``, ``--keep-roots``, ``--namespace``).
`OntologySource.from_args` checks them once
into one typed value; `OntologySource.load` turns it into the model and the triples the
command reads, built exactly as `generate` builds them, so a study on a store asks about the
ontology `generate` writes probes from.

It lives with the studies (not in `kgprobe.cli`) because each study registers its own options
and a study must never import the layer above it; reading a store's model takes the
reasoning layer's `reasoning_base` (HermiT's conclusions), so it cannot live in `kg/`.

Without a source option, `generate` reads the default store, and a study the bundled
ontology, unless the default store holds sources: then which one the researcher meant is
ambiguous, and the study stops with one line naming ``--store`` and ``--ontology bundled``.
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kgprobe.errors import KgprobeError
from kgprobe.kg.endpoint_options import endpoint_options
from kgprobe.ontology.skos import MODES as SKOS_MODES
from kgprobe.studies.options import comma_list

if TYPE_CHECKING:
    from kgprobe.ontology.from_triples import BuildOptions
    from kgprobe.ontology.source import Source

KINDS = ("store", "endpoint", "file", "probes", "bundled")
BUNDLED = "bundled"
#: The options naming a source, in the order the one-line errors list them.
SOURCE_OPTIONS = (("store", "--store"), ("endpoint", "--endpoint"), ("ontology", "--ontology"),
                  ("probes", "--probes"))


class SourceError(KgprobeError):
    """The source options name no source, several, or an ambiguous one."""


# ----------------------------------------------------------------------------- options


def model_args(parser) -> None:
    """How the typed model is read from triples: `kg load`, `generate` and the studies."""
    parser.add_argument("--lang", default="en",
                        help="the prompts' language and the label languages in order of "
                             "preference, '*' for any (e.g. en,es,*; default: en; untagged "
                             "labels count as the first). Prompts in another language than en "
                             "(es, fr, de) use its templates and its tagged labels only")
    parser.add_argument("--skos", choices=SKOS_MODES, default="auto",
                        help="SKOS thesauri: read skos:broader as rdfs:subClassOf (classes), "
                             "with leaf concepts as individuals (leaves), or not (off); default "
                             "auto: classes for a concept scheme without rdfs:subClassOf")
    parser.add_argument("--schema-includes", action=argparse.BooleanOptionalAction,
                        default=None, help="read schema:domainIncludes/rangeIncludes as "
                        "rdfs:domain/range (default: on when the data uses schema.org)")
    parser.add_argument("--exclusions", type=Path, default=None,
                        help="TOML list of terms that are never answers (default: the bundled "
                             "ontology/excluded_terms.toml)")
    parser.add_argument("--keep-annotations", action="store_true",
                        help="keep annotation properties (rdfs:label, dcterms:*, oboInOwl:*, "
                             "every owl:AnnotationProperty) as relations, subjects and answers")
    parser.add_argument("--keep-deprecated", action="store_true",
                        help="keep deprecated terms (owl:deprecated true, OBO is_obsolete, "
                             "labels beginning 'obsolete') as subjects, answers and distractors")
    parser.add_argument("--keep-roots", action="store_true",
                        help="keep upper-level roots (BFO's entity, continuant, occurrent …; "
                             "a root above 90%% of the classes) as answers")
    parser.add_argument("--namespace", action="append", default=None, metavar="IRI-PREFIX",
                        help="probe only terms whose IRI begins with this (repeatable): the "
                             "ontology's own terms, while reasoning still goes through its "
                             "imports")


def model_options(args: argparse.Namespace) -> BuildOptions:
    """The `BuildOptions` of `model_args`' values, checked (a language without templates, an
    unreadable exclusions file: one line)."""
    from kgprobe.ontology.exclusions import load_exclusions
    from kgprobe.ontology.from_triples import BuildOptions
    from kgprobe.ontology.languages import prompt_language

    langs = tuple(comma_list(args.lang, lower=True))
    if not langs:
        raise KgprobeError(f"--lang {args.lang!r}: give language tags such as en or en,es,*")
    prompt_language(langs)  # a language without templates stops here, naming those there are
    namespaces = tuple(getattr(args, "namespace", None) or ())
    for prefix in namespaces:
        if not prefix.strip() or " " in prefix or ":" not in prefix:
            raise KgprobeError(f"--namespace {prefix!r}: give the IRI prefix of the ontology's "
                               "own terms, e.g. http://purl.obolibrary.org/obo/GO_")
    return BuildOptions(
        langs=langs, schema_includes=args.schema_includes, skos=args.skos,
        exclusions=load_exclusions(args.exclusions) if args.exclusions else None,
        keep_annotations=args.keep_annotations, keep_deprecated=args.keep_deprecated,
        keep_roots=getattr(args, "keep_roots", False), namespaces=namespaces)


def add_ontology_options(parser: argparse.ArgumentParser, *, probes: bool = False,
                         default: str = BUNDLED, store: bool = True) -> None:
    """The source options and the model options, in one group of `parser`'s help.

    `probes`: the command also reads `generate memorizing` folders (``--probes``);
    `default`: what no source option means (``bundled`` for a study, ``store`` for
    `generate`); `store`: add ``--store`` here (False where the command adds its own)."""
    group = parser.add_argument_group(
        "ontology source", "where the ontology comes from (give one; default: "
        + ("the store" if default == "store" else "the bundled ontology, unless the default "
           "store holds sources") + ") and how its model is read")
    if store:
        group.add_argument("--store", type=Path, default=None,
                           help="read the ontology of this store (`kgprobe kg load`; default "
                                "store: $KGPROBE_STORE, else .kgprobe/store)")
    endpoint_options(group)
    group.add_argument("--ontology", default=None, metavar="FILE|bundled",
                       help="an RDF file or OntoProbe directory, or 'bundled' (the OntoProbe "
                            "ontology shipped with kgprobe)")
    if probes:
        group.add_argument("--probes", type=Path, default=None,
                           help="a directory from `kgprobe generate memorizing` (default: the "
                                "paper's sets)")
    model_args(group)


# ----------------------------------------------------------------------------- the source


@dataclass(frozen=True)
class OntologySource:
    """Where a command's ontology comes from, and how its model is read: the parsed options.

    `origin` is one of `KINDS`; `location` the store directory, endpoint URL, file or probe
    folder (None: the bundled ontology). The model options are kept as given, so the
    settings a run pins name them as the user wrote them."""

    origin: str = BUNDLED
    location: str | None = None
    lang: str = "en"
    skos: str = "auto"
    schema_includes: bool | None = None
    exclusions: str | None = None
    keep_annotations: bool = False
    keep_deprecated: bool = False
    keep_roots: bool = False
    namespace: tuple[str, ...] = ()
    #: --endpoint's tuning (`kg.endpoint_options`)
    timeout: float = 30.0
    retries: int = 3
    max_answer: str = "512M"
    page_size: int | None = None

    MODEL_DEFAULTS = {"lang": "en", "skos": "auto", "schema_includes": None, "exclusions": None,
                      "keep_annotations": False, "keep_deprecated": False, "keep_roots": False,
                      "namespace": ()}

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, default: str = BUNDLED,
                  ask: bool = True) -> "OntologySource":
        """The one source the options name, checked before anything is read; with none, the
        `default`: a study's ``bundled`` refuses when the default store holds sources, unless
        not `ask` (`--protocol paper` reads the bundled ontology whatever the store holds)."""
        named = [(key, flag) for key, flag in SOURCE_OPTIONS if getattr(args, key, None)]
        if len(named) > 1:
            raise SourceError(f"{' and '.join(f for _, f in named)} each name the ontology to "
                              "read; give one")
        model = {k: getattr(args, k, v) for k, v in cls.MODEL_DEFAULTS.items()}
        model["exclusions"] = str(model["exclusions"]) if model["exclusions"] else None
        model["namespace"] = tuple(model["namespace"] or ())
        tuning = {k: getattr(args, k) for k in ("timeout", "retries", "max_answer", "page_size")
                  if hasattr(args, k)}
        kind, location = cls._named(named[0][0], getattr(args, named[0][0])) if named else (default, None)
        if not named and default == BUNDLED and ask:
            refuse_ambiguous_default()
        source = cls(kind, location, **model, **tuning)
        source.options()  # a bad --lang or --exclusions stops here, before any data is read
        if source.origin in (BUNDLED, "probes") or source.is_ontoprobe_folder():
            changed = source.model_changed()
            if changed:
                flag = "--" + changed[0].replace("_", "-")
                what = ("a probe folder is read as `generate` wrote it" if source.origin == "probes"
                        else "an OntoProbe ontology is read as shipped")
                raise SourceError(f"{flag}: reads the model from RDF (--store, --endpoint or "
                                  f"--ontology FILE); {what}, so drop {flag}")
        return source

    @staticmethod
    def _named(key: str, value) -> tuple[str, str | None]:
        if key == "ontology":
            if str(value) == BUNDLED:
                return BUNDLED, None
            if not Path(value).exists():
                raise SourceError(f"--ontology {value}: no such file or directory; give an RDF "
                                  "file, an OntoProbe directory or 'bundled'")
            return "file", str(value)
        return ("store" if key == "store" else key), str(value)

    @classmethod
    def of(cls, value: "OntologySource | str | Path | None") -> "OntologySource":
        """A source from what Python callers pass as ``ontology``: None or ``"bundled"`` (the
        bundled ontology), a path (a file or OntoProbe folder), or a source."""
        if isinstance(value, OntologySource):
            return value
        if value is None or str(value) == BUNDLED:
            return cls()
        return cls("file", str(value))

    def model_changed(self) -> list[str]:
        """The model options given other values than their defaults."""
        return [k for k, v in self.MODEL_DEFAULTS.items() if getattr(self, k) != v]

    @property
    def bundled(self) -> bool:
        return self.origin == BUNDLED

    def is_ontoprobe_folder(self) -> bool:
        return self.origin == "file" and Path(str(self.location)).is_dir()

    def options(self) -> BuildOptions:
        return model_options(argparse.Namespace(**{k: getattr(self, k) for k in self.MODEL_DEFAULTS}))

    def language(self) -> str:
        """The language prompts are written in (`--lang`'s first)."""
        from kgprobe.ontology.languages import prompt_language

        return prompt_language(self.options().langs)

    def store_path(self) -> Path:
        from kgprobe.kg.store import default_store_path

        return Path(self.location) if self.location else default_store_path()

    def describe(self) -> str:
        """One line's worth: which ontology a run read."""
        if self.bundled:
            return "the bundled OntoProbe ontology"
        if self.origin == "store":
            return f"store {self.store_path()}"
        return {"endpoint": "endpoint", "file": "file", "probes": "probe sets"}[self.origin] + \
            f" {self.location}"

    def pinned(self) -> dict:
        """What a run folder pins about its source: the kind, where, and a content hash where
        there is one (a store's fingerprint of its sources, a file's sha256), so a rerun after
        the store or file changed is refused rather than mixing two ontologies in one table;
        the model options where they differ from the defaults."""
        out: dict = {"kind": self.origin}
        if self.origin == "store":
            out["path"] = str(self.store_path().expanduser().resolve())
            out["fingerprint"] = store_fingerprint(self.store_path())
        elif self.origin in ("file", "probes"):
            out["path"] = str(Path(str(self.location)).expanduser().resolve())
            out["sha256"] = path_hash(Path(str(self.location)))
        elif self.origin == "endpoint":
            out["url"] = self.location
        out.update({k: list(v) if isinstance(v := getattr(self, k), tuple) else v
                    for k in self.model_changed()})
        return out

    def load(self) -> "Source":
        """The model and the triples the command reads (`ontology.source.Source`): the bundled
        ontology, a file as `kg load` reads it, or a store's (endpoint's) asserted triples plus
        HermiT's conclusions built as `generate` builds them (stale inferences refused)."""
        from kgprobe.ontology.loaders import bundled_source, load_source

        if self.bundled:
            return bundled_source()
        if self.origin == "file":
            return load_source(str(self.location), options=self.options())
        if self.origin == "probes":
            raise SourceError(f"--probes {self.location}: a probe folder holds no ontology; "
                              "give --store, --endpoint or --ontology")
        with self.open_reader() as kg:
            return read_model(kg, self.options())

    def open_reader(self):
        """The store (read-only) or the endpoint this source names."""
        if self.origin == "endpoint":
            from kgprobe.kg.endpoint_options import open_endpoint

            return open_endpoint(argparse.Namespace(
                endpoint=self.location, store=None, timeout=self.timeout, retries=self.retries,
                max_answer=self.max_answer, page_size=self.page_size))
        from kgprobe.kg.store import KnowledgeGraph

        return KnowledgeGraph(self.store_path(), create=False, read_only=True)


def read_model(kg, options: BuildOptions, *, stale_fix: str = "run `kgprobe reason`") -> "Source":
    """A store's (or endpoint's) model as `generate` reads it: the asserted triples and
    HermiT's conclusions (`reason --owl`); the RDFS inferred graph is left out (a study
    computes its own closure from these, as `generate reasoning` does)."""
    from kgprobe.ontology.from_triples import build_ontology
    from kgprobe.ontology.source import Source
    from kgprobe.reasoning.materialize import reasoning_base

    if getattr(kg, "path", None) is not None:
        kg.stale_fix = stale_fix
        if not kg.asserted_graphs():
            raise SourceError(f"{kg.path}: the store holds no sources; load one first "
                              "(`kgprobe kg load FILE`, or --default)")
    kg.require_fresh()
    asserted, owl = reasoning_base(kg)
    triples = sorted(asserted | owl)
    path = str(kg.path) if getattr(kg, "path", None) is not None else kg.default_name
    return Source("store", path, build_ontology("store", triples, options), triples)


def default_store_sources() -> int:
    """How many sources the default store holds (0: none, or no store there)."""
    from kgprobe.kg import integrity
    from kgprobe.kg.store import KnowledgeGraph, default_store_path

    path = default_store_path()
    if integrity.is_new(path):
        return 0
    try:
        with KnowledgeGraph(path, create=False, read_only=True) as kg:
            return len(kg.asserted_graphs())
    except KgprobeError:
        return 1  # something is there: the researcher may well have meant it


def refuse_ambiguous_default() -> None:
    """No source option, and the default store holds sources: the researcher may mean either
    it or the bundled ontology, and a study on the wrong one costs hours, so ask."""
    from kgprobe.kg.store import default_store_path

    n = default_store_sources()
    if n:
        path = default_store_path()
        raise SourceError(f"the default store {path} holds {n} source(s), and no ontology was "
                          f"named; pass --store {path} to study it, or --ontology bundled for "
                          "the bundled OntoProbe ontology")


def store_fingerprint(path: Path) -> str:
    """The store's fingerprint of its sources' content hashes (`KnowledgeGraph.fingerprint`)."""
    from kgprobe.kg.store import KnowledgeGraph

    with KnowledgeGraph(path, create=False, read_only=True) as kg:
        return kg.fingerprint()


def path_hash(path: Path) -> str:
    """sha256 of a file, or of a folder's files (names and contents, sorted)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
