"""`kgprobe review sample|read`: a researcher reads a probe folder's sentences and counts defects.

`sample` draws a seeded sheet of a `generate` folder's prompts (`prompts.tsv`), stratified by
relation or rule; `read` checks the filled sheet, writes the defect rates with their intervals
into the folder's `summary.json` and adds the terms marked to exclude to the folder's
`exclusions.toml`, which the next `generate --exclusions` reads (`studies/review.py`,
`studies/review_exclusions.py`). Building the parser imports nothing heavy.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kgprobe.errors import KgprobeError

from .registry import command, warn


@command("review sample")
def cmd_review_sample(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_text
    from kgprobe.studies.probe_prompts import read_probe_prompts
    from kgprobe.studies.review import CODES, sample_prompts, sheet_tsv

    prompts = read_probe_prompts(args.probes)
    out = Path(args.out)
    if out.exists() and not args.force:
        raise KgprobeError(f"--out {out}: exists (a sheet being filled?); pass another --out, "
                           "or --force to replace it")
    rows = sample_prompts(prompts, args.size, args.seed)
    write_text(out, sheet_tsv(rows))
    kinds = len({r.kind for r in rows})
    print(f"wrote {out}: {len(rows)} of {len(prompts)} prompts from {kinds} relations or rules "
          f"(--seed {args.seed})")
    print("codes: " + ", ".join(f"{c} {why}" for c, why in CODES.items())
          + "; several in one cell (GC); empty: fine")
    print(f"then: kgprobe review read {out} --probes {args.probes}")
    return 0


@command("review read")
def cmd_review_read(args: argparse.Namespace) -> int:
    from kgprobe.atomic import write_json
    from kgprobe.studies.probe_prompts import read_probe_prompts
    from kgprobe.studies.review import CODES, defect_rates, rate_line, read_sheet
    from kgprobe.studies.review_exclusions import resolve_terms, write_review_exclusions

    probes = Path(args.probes)
    known = {p.id: p for p in read_probe_prompts(probes)}
    sheet = Path(args.sheet)
    verdicts = read_sheet(sheet, known)
    marked = resolve_terms(probes, verdicts, sheet.name)
    summary_path = probes / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        raise KgprobeError(f"{summary_path}: missing or not JSON; generate the probes again "
                           f"(`kgprobe generate … --out {probes}`)") from None
    rates = defect_rates(verdicts)
    review = {"sheet": str(sheet.resolve()), "prompts": len(verdicts), "rates": rates,
              "interval": "95 % Wilson score interval over the prompts read "
                          "(scipy.stats.binomtest)",
              "codes": CODES, "excluded": sorted({m.iri for m in marked})}
    if marked:
        path, new = write_review_exclusions(probes, marked, summary.get("exclusions"))
        review["exclusions_file"] = str(path)
        print(f"{path}: {new} new term{'s' * (new != 1)} to leave out ({len(marked)} marked); "
              f"regenerate with --exclusions {path}")
    summary["review"] = review
    write_json(summary_path, summary)
    print(rate_line("any defect", rates["any"]))
    for code in CODES:
        if rates[code]["defects"]:
            print(f"{rate_line(code, rates[code])}  {CODES[code]}")
    if len(verdicts) < 30:
        warn(f"{len(verdicts)} prompts read: the interval is wide; sample 60 or more")
    print(f"wrote the rates into {summary_path} (review)")
    return 0


def add_parsers(sub) -> None:
    """`review sample PROBES --out SHEET`, `review read SHEET --probes PROBES`."""
    rev = sub.add_parser("review", help="read a sample of a probe folder's sentences and count "
                         "their defects (a TSV sheet)")
    rev_sub = rev.add_subparsers(dest="review_command", required=True)
    p = rev_sub.add_parser("sample", help="write a seeded sheet of prompts, stratified by "
                           "relation or rule")
    p.add_argument("probes", type=Path, metavar="PROBES",
                   help="a `kgprobe generate memorizing|reasoning` folder (its prompts.tsv)")
    p.add_argument("--size", type=int, default=60, help="prompts to read (default 60), shared "
                   "among relations or rules by size, at least one each")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--out", type=Path, required=True, help="the sheet to write (.tsv)")
    p.add_argument("--force", action="store_true", help="replace an existing sheet")
    p = rev_sub.add_parser("read", help="check a filled sheet, write its defect rates into the "
                           "probe folder's summary.json and its marked terms into exclusions.toml")
    p.add_argument("sheet", type=Path, metavar="SHEET", help="the filled sheet (.tsv)")
    p.add_argument("--probes", type=Path, required=True,
                   help="the probe folder the sheet was sampled from")
