"""Options that decide how the typed model is read from triples (`kg load`, `generate …`).

They apply wherever the model is built: the store keeps every parsed triple, so generation
reads labels, schema.org includes and exclusions again with the options it is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.ontology.exclusions import load_exclusions
from kgprobe.ontology.from_triples import BuildOptions
from kgprobe.ontology.languages import prompt_language
from kgprobe.ontology.skos import MODES as SKOS_MODES
from kgprobe.studies.options import comma_list


def model_args(parser: argparse.ArgumentParser) -> None:
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


def model_options(args: argparse.Namespace) -> BuildOptions:
    langs = tuple(comma_list(args.lang, lower=True))
    if not langs:
        raise KgprobeError(f"--lang {args.lang!r}: give language tags such as en or en,es,*")
    prompt_language(langs)  # a language without templates stops here, naming those there are
    return BuildOptions(
        langs=langs, schema_includes=args.schema_includes, skos=args.skos,
        exclusions=load_exclusions(args.exclusions) if args.exclusions else None,
        keep_annotations=args.keep_annotations, keep_deprecated=args.keep_deprecated)
