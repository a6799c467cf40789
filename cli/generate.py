"""`kgprobe generate memorizing|reasoning`: probe sets from the knowledge graph.

The typed model is built from the store's triples (or an endpoint's, a file's, the bundled
ontology's: the option group every command that reads an ontology shares,
`studies.ontology_source`) with the model options (`--lang`, `--schema-includes`,
`--exclusions`), and what it leaves out is printed as warnings and written to `summary.json`.
Beside the records, `prompts.tsv` holds every split's sentences as the studies ask them
(`studies/probe_prompts.py`), so a reader judges the probes before a model is run
(`kgprobe review`).
"""

from __future__ import annotations

import argparse
import contextlib
from collections import Counter
from pathlib import Path

from kgprobe.errors import KgprobeError
from kgprobe.ontology.model import RDFS_SUBCLASSOF, Ontology
from kgprobe.reasoning.rule_names import RULES
from kgprobe.studies.ontology_source import OntologySource, add_ontology_options, model_options
from kgprobe.studies.options import comma_list

from .kg import print_reason
from .kg_options import memory_arg, open_reader, open_store, writer_args
from .registry import command, warn


def parse_split(text: str) -> tuple[float, float]:
    """``10,10`` (train and dev records) or ``0.1,0.1`` (fractions of each relation)."""
    parts = comma_list(text)
    try:
        train, dev = (float(x) for x in parts)
    except ValueError:
        raise KgprobeError(f"--split-sizes {text}: give TRAIN,DEV as counts (10,10) or fractions "
                           "(0.1,0.1)") from None
    fractions = any(0 < x < 1 for x in (train, dev))
    counts_too = max(train, dev) >= 1
    if min(train, dev) < 0 or (fractions and (counts_too or train + dev >= 1)):
        raise KgprobeError(f"--split-sizes {text}: give two counts ≥ 0, or two fractions that leave a "
                           "test split (sum below 1)")
    return tuple(int(x) if x.is_integer() else x for x in (train, dev))


def _model(args: argparse.Namespace) -> tuple[Ontology, set, set]:
    """The typed model both `generate` commands write from, and its (asserted, HermiT's)
    triples: a store's or endpoint's built from the asserted triples (and HermiT's
    conclusions, `reason --owl`) exactly as `kg load` builds each source's, so the three print
    the same counts of what they skipped. The RDFS inferred graph adds nothing a probe needs
    (answers come from the direct edges, ordered specific → general), but read into the model
    it made more "instances" (things typed by a domain) and "restrictions" (subclass chains
    through a blank node) than were loaded. A file (`--ontology`) is read as `kg load` reads
    it, with nothing inferred by HermiT."""
    from kgprobe.reasoning.materialize import reasoning_base

    source = OntologySource.from_args(args, default="store")
    if source.origin in ("store", "endpoint"):
        from kgprobe.ontology.from_triples import build_ontology
        from kgprobe.reasoning.materialize import stored_skos_mode

        with fresh_reader(args) as kg:
            asserted, owl = reasoning_base(kg)  # owl: HermiT's conclusions (`reason --owl`)
            # an endpoint records no reasoning of ours: nothing to compare the SKOS reading with
            where = str(getattr(kg, "path", None) or source.location)
            stored = stored_skos_mode(kg) if hasattr(kg, "reasoned_with") else None
        onto = build_ontology("store", sorted(asserted | owl), source.options())
        _check_skos(onto, where, source.skos, asserted, stored)
        return onto, asserted, owl
    if args.reason:
        raise KgprobeError("--reason writes the store; drop it with --ontology")
    loaded = source.load()
    _check_skos(loaded.ontology, str(source.location), source.skos)
    return loaded.ontology, set(loaded.triples), set()


def _wording(onto: Ontology, langs) -> dict:
    """The English wording's tagger and property shapes (ontology/wording.py), for summary.json."""
    from kgprobe.ontology.languages import ENGLISH, prompt_language
    from kgprobe.ontology.wording import wording_summary

    return {"wording": wording_summary(onto)} if prompt_language(langs) == ENGLISH else {}


def _check_skos(onto: Ontology, where: str, mode: str, asserted: set | None = None,
                stored: str | None = None) -> None:
    """A topical thesaurus under ``--skos auto`` is refused (its `broader` is no "is a");
    a store reasoned with another SKOS reading than this one is named in a warning, since
    `kg query` would then see other subclass triples than the probes are written from."""
    if onto.skos is not None and onto.skos.topical:
        raise KgprobeError(f"{where}: {onto.skos.refusal()}")
    if stored is None or stored == mode or asserted is None:
        return
    from kgprobe.reasoning.materialize import skos_edges

    if skos_edges(asserted, stored) != set(onto.skos_triples):
        warn(f"{where}: the inferred graph was reasoned with --skos {stored}, these probes read "
             f"--skos {mode}: run `kgprobe reason --skos {mode}` so `kg query` sees what they "
             "are written from")


def _skipped_summary(onto: Ontology, skipped: Counter) -> dict:
    """What generation left out: terms per reason and kind, records or items per reason."""
    for line in onto.warnings:
        warn(line)
    left_out = {k: n for k, n in sorted(skipped.items()) if n}
    if left_out:
        warn("left out: " + ", ".join(f"{n} {k}" for k, n in left_out.items()))
    return {"terms": onto.excluded_counts, "records": left_out}


def _write_summary(out: Path, onto: Ontology, summary: dict) -> None:
    """`summary.json`, with how a thesaurus was read (only when there is one, so other
    sources' summaries stay as they were), and `excluded.tsv` beside it when terms were
    left out: each by IRI, kind, label and reason."""
    from kgprobe.atomic import write_json, write_text
    from kgprobe.ontology.exclusions import excluded_rows, excluded_tsv

    if onto.skos is not None:
        summary["skos"] = onto.skos.summary()
    rows = excluded_rows(onto.excluded, onto.excluded_terms)
    if rows:
        write_text(out / "excluded.tsv", excluded_tsv(rows))
    write_json(out / "summary.json", summary)


@contextlib.contextmanager
def fresh_reader(args: argparse.Namespace):
    """The store (or endpoint) to generate from, its inferences fresh: with --reason, stale
    ones are computed again first (the store opened for writing, --wait applies); without it,
    stale inferences are refused, naming both fixes."""
    if args.reason and getattr(args, "endpoint", None):
        raise KgprobeError("--reason writes the store; with --endpoint, run `kgprobe reason` "
                           "on the store behind the endpoint instead")
    with (open_store(args, write=True) if args.reason else open_reader(args)) as kg:
        if args.reason and kg.inferred_state() == "stale":
            print_reason(kg, skos=getattr(args, "skos", "auto"))
        if not getattr(args, "endpoint", None):
            kg.stale_fix = "run `kgprobe reason` (or pass --reason)"
            if not kg.asserted_graphs():  # every source removed: nothing to generate from
                raise KgprobeError(f"{kg.path}: the store holds no sources; load one first "
                                   "(`kgprobe kg load FILE`, or --default)")
        kg.require_fresh()
        yield kg


def _exclusions_used(options) -> str:
    """The exclusion list the model was built with (summary.json's `exclusions`): `review
    read` adds the reviewed terms to a copy of it."""
    from kgprobe.ontology.exclusions import default_exclusions_path

    return str(Path(options.exclusions.path).resolve()) if options.exclusions is not None \
        else str(default_exclusions_path())


def _warn_unread_review(out: Path, used: str) -> None:
    """A review's exclusions lie in OUT but this run reads another list: say so, with the fix."""
    from kgprobe.studies.review_exclusions import EXCLUSIONS_FILE, unread_review

    n = unread_review(out, used)
    if n:
        warn(f"{out / EXCLUSIONS_FILE} lists {n} reviewed term{'s' * (n != 1)} this run does "
             f"not leave out; pass --exclusions {out / EXCLUSIONS_FILE}")


def _write_prompts(out: Path, prompts: list) -> None:
    """`prompts.tsv`: every split's sentences, as the studies ask them."""
    from kgprobe.studies.probe_prompts import write_probe_prompts

    path = write_probe_prompts(out, prompts)
    print(f"wrote {len(prompts)} sentences to {path}")


def generation_args(p: argparse.ArgumentParser) -> None:
    """What `generate memorizing` and `generate reasoning` read from, the same way."""
    p.add_argument("--reason", action="store_true", help="re-run `kgprobe reason` first if the "
                   "inferences are stale (as it last ran: its --rules and --owl)")
    writer_args(p)
    memory_arg(p)
    add_ontology_options(p, default="store", store=False)


@command("generate memorizing")
def cmd_generate_memorizing(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_json, write_jsonl
    from kgprobe.reasoning.memorizing import (
        candidate_sets,
        empty_splits,
        generate_memorizing,
        scaled_splits,
    )

    train, dev = parse_split(args.split)
    options = model_options(args)
    onto = _model(args)[0]
    skipped: Counter = Counter()
    records = generate_memorizing(onto, seed=args.seed, train=train, dev=dev,
                                  instances_per_class=args.instances_per_class, skipped=skipped)
    out = Path(args.out)
    summary = {}
    for relation, recs in records.items():
        write_jsonl(out / f"{relation}.jsonl", (r.to_json() for r in recs))
        summary[relation] = {split: sum(r.split == split for r in recs)
                             for split in ("train", "dev", "test")}
        print(f"{relation:14s} {len(recs):>6} records  {summary[relation]}")
    for relation, splits in empty_splits(records).items():
        warn(f"{relation}: no {' and no '.join(splits)} records ({len(records[relation])} in "
             "all); change --split-sizes")
    write_json(out / "candidates.json", candidate_sets(onto))
    facts = {"tasks": summary, "seed": args.seed, "split": [train, dev]}
    scaled = scaled_splits(records, train, dev)
    if scaled:  # only then, so a set split as asked keeps its summary
        facts["split_scaled"] = {
            "rule": "train = min(TRAIN, n // 4), dev = min(DEV, n // 4) where n < 2 * (TRAIN + "
                    "DEV): the test split keeps at least half of the records",
            "sizes": scaled}
        warn("small relations, train/dev scaled down so the test split keeps half: " + ", ".join(
            f"{r} {t},{d} of {len(records[r])}" for r, (t, d) in scaled.items()))
    used = _exclusions_used(options)
    _write_summary(out, onto, {
        **facts, "instances_per_class": args.instances_per_class, "lang": list(options.langs),
        "exclusions": used, "skipped": _skipped_summary(onto, skipped),
        **_wording(onto, options.langs)})
    from kgprobe.studies.probe_prompts import memorizing_prompts

    _write_prompts(out, memorizing_prompts(out))  # read back as `study memorization --probes`
    _warn_unread_review(out, used)
    print(f"wrote {out}")
    return 0


@command("generate reasoning")
def cmd_generate_reasoning(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_json, write_jsonl
    from kgprobe.ontology.verbalize import load_templates
    from kgprobe.reasoning.items import item_closure, reasoning_items, rule_summary
    from kgprobe.reasoning.memorizing import candidate_sets

    from kgprobe.ontology.languages import prompt_language

    options = model_options(args)
    templates = load_templates(args.templates, lang=prompt_language(options.langs))
    onto, asserted, owl = _model(args)
    triples = sorted(asserted | owl)
    skipped: Counter = Counter()
    closure = item_closure(onto, triples)
    if onto.skos is not None:  # what `reason` stores too: `kg query` counts the same
        onto.skos.derived_subclass = sum(t[1] == RDFS_SUBCLASSOF for t in closure.rdf_inferred)
    items = reasoning_items(onto, closure, templates,
                            rules=comma_list(args.rules), pseudowords=not args.no_pseudowords,
                            skipped=skipped, asserted=asserted | set(onto.skos_triples))
    out = Path(args.out)
    for rule, rule_items in items.items():
        write_jsonl(out / f"{rule}.jsonl", (i.to_json() for i in rule_items))
    summary = rule_summary(items, skipped)
    for rule, entry in summary.items():
        print(f"{rule:7s} {entry['items']:>6} items from {entry['derivations']:>7} derivations"
              f"{'  (' + entry['note'] + ')' if 'note' in entry else ''}")
    write_json(out / "candidates.json", candidate_sets(onto))
    used = _exclusions_used(options)
    _write_summary(out, onto, {"rules": summary, "pseudowords": not args.no_pseudowords,
                               "templates": templates.path, "lang": list(options.langs),
                               "exclusions": used, "skipped": _skipped_summary(onto, skipped),
                               **_wording(onto, options.langs)})
    from kgprobe.studies.probe_prompts import reasoning_prompts

    _write_prompts(out, reasoning_prompts(items, templates))
    _warn_unread_review(out, used)
    print(f"wrote {out}")
    return 0


def add_parsers(sub) -> None:
    """`generate memorizing|reasoning`."""
    gen = sub.add_parser("generate", help="write probe sets from the knowledge graph")
    gen_sub = gen.add_subparsers(dest="generate_command", required=True)
    p = gen_sub.add_parser("memorizing", help="TP/SCO/SPO/DM/RG records, one JSONL per relation")
    p.add_argument("--out", required=True, type=Path, help="the folder to write the sets into")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev/test split and "
                   "of --instances-per-class")
    p.add_argument("--split-sizes", dest="split", default="10,10", help="TRAIN,DEV records per relation, as counts "
                   "(default 10,10, the paper's) or fractions (0.1,0.1); the rest is test")
    p.add_argument("--instances-per-class", type=int, default=None, metavar="N",
                   help="at most N seeded instances per most specific class in TP (the paper "
                        "samples 20; default: all)")
    generation_args(p)
    p = gen_sub.add_parser("reasoning", help="premise/hypothesis items, one JSONL per rule")
    p.add_argument("--out", required=True, type=Path, help="the folder to write the items into")
    p.add_argument("--rules", default=",".join(RULES), help="comma-separated rules to write "
                   "items for")
    p.add_argument("--no-pseudowords", action="store_true",
                   help="write real labels instead of the [X]/[Y] slots (confound analysis)")
    p.add_argument("--templates", type=Path, default=None,
                   help="a template TOML file (default: the paper's templates)")
    generation_args(p)
