"""report.md of a consistency run, rebuilt from its files (`kgprobe report RUN`): the table,
the reading it supports, the statements' belief rates and the most confident violations."""

from __future__ import annotations

import json
from pathlib import Path

from kgprobe.atomic import write_text
from kgprobe.studies.runner import read_results
from kgprobe.studies.stats import MIN_ITEMS, read_predictions

from .wild_bootstrap import MIN_CLUSTERS

TITLE = "Consistency study: are a model's beliefs about real entities closed under entailment?"
#: Violations shown as examples.
EXAMPLES = 8
ALPHA = 0.05


def read_rows(out: Path) -> list[dict]:
    return read_results(Path(out) / "results.csv")


def _num(row: dict, key: str) -> float:
    value = row.get(key, "")
    return float(value) if value not in ("", None) else float("nan")


def _pct(row: dict, key: str) -> str:
    """``63.0 [51.2, 74.4]`` (percent), or "—" where undefined."""
    value, lo, hi = _num(row, key), _num(row, f"{key}_lo"), _num(row, f"{key}_hi")
    if value != value:
        return "—"
    if lo != lo:  # one cluster on a side: no spread to resample (`clustered.cluster_interval`)
        return f"{100 * value:.1f} [no interval]"
    return f"{100 * value:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _controls(rows: list[dict]) -> list[str]:
    """The controls the run tested the model against (their ``vs_NAME`` columns)."""
    from kgprobe.studies.controls import CHOICES

    return [c for c in CHOICES if rows and f"vs_{c}" in rows[0]]


def _signed(row: dict, key: str) -> str:
    """``+12.3 [+4.0, +20.1]`` points, ``[not testable]`` where the interval is undefined."""
    value, lo, hi = _num(row, key), _num(row, f"{key}_lo"), _num(row, f"{key}_hi")
    if value != value:
        return "—"
    if lo != lo:
        return f"{100 * value:+.1f} [not testable]"
    return f"{100 * value:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def format_table(rows: list[dict]) -> str:
    """The results as a Markdown table (percentages with 95 % intervals)."""
    controls = _controls(rows)
    head = ("| rule | template | derivations (clusters) | both believed | consistency "
            "| minus base rate | subject-matched (strata, G) | "
            + "".join(f"minus {c}'s (G, p) | " for c in controls)
            + "p claim (Holm) | claimed | P(c \\| not both) | difference | p (Holm) "
            "| matched difference | p (Holm) | minus reference | violations | MRR | graded |")
    lines = [head, "|" + "---|" * (18 + len(controls))]
    for r in rows:
        versus = "".join(f"{_signed(r, f'vs_{c}')} ({r.get(f'G_vs_{c}', '')}, "
                         f"{_p(r, f'p_vs_{c}')}) | " for c in controls)
        lines.append(
            f"| {r['rule']} | {r['template']} | {r['n_derivations']} ({r.get('n_clusters', '')})"
            f" | {r['n_both']} | {_pct(r, 'consistency')} | "
            f"{_signed(r, 'consistency_minus_base_rate')} | "
            f"{_signed(r, 'subject_matched')} ({r.get('n_strata', '')}, {r.get('G', '')}) | "
            f"{versus}{_p(r, 'p_claim')} ({_p(r, 'p_claim_holm')}) | {_claimed(r)} | "
            f"{_pct(r, 'p_given_not_both')} | {_pct(r, 'difference')} | {_p(r, 'p_holm')} | "
            f"{_pct(r, 'matched_difference')} | {_p(r, 'p_matched_holm')} | "
            f"{_pct(r, 'consistency_minus_prior')} | "
            f"{r['violations']} | {_pct(r, 'MRR')} | {_pct(r, 'graded')} |")
    return "\n".join(lines)


def _claimed(r: dict) -> str:
    if str(r.get("claimed")) == "True":
        return "**yes**"
    if str(r.get("confirmatory")) != "True":
        return "exploratory"
    return "no" if str(r.get("testable")) == "True" else "not testable"


def _p(row: dict, key: str) -> str:
    p = _num(row, key)
    return "—" if p != p else f"{p:.3g}"


def reading(rows: list[dict]) -> str:
    """What the table supports, rule by rule: only what its intervals and Holm-adjusted p say."""
    lines = []
    for r in rows:
        name = f"{r['rule']} (template {r['template']})"
        if int(r["n_both"]) == 0:
            lines.append(f"- {name}: no derivation has both premises believed, so consistency "
                         "is undefined" + _confirmatory(r) + ".")
            continue
        if int(r["n_both"]) < MIN_ITEMS:
            lines.append(f"- {name}: only {r['n_both']} derivations have both premises believed "
                         f"(consistency {_pct(r, 'consistency')} %, {r['violations']} violations): "
                         f"too few (< {MIN_ITEMS}) to read" + _confirmatory(r) + ".")
            continue
        text = (f"- {name}: the conclusion is believed in {_pct(r, 'consistency')} % of the "
                f"{r['n_both']} derivations whose premises are both believed "
                f"({r['violations']} violations)")
        what = "difference within rules" if r["rule"] == "all" else "difference"
        lo, hi, p = _num(r, "difference_lo"), _num(r, "difference_hi"), _num(r, "p_holm")
        if lo > 0 and p < ALPHA:
            text += (f"; more often than when they are not ({what} "
                     f"{_pct(r, 'difference')} points, Holm p = {p:.3g})")
        elif hi < 0 and p < ALPHA:
            text += (f"; *less* often than when they are not ({what} "
                     f"{_pct(r, 'difference')} points, Holm p = {p:.3g})")
        elif lo == lo:
            text += ("; the data show no difference from derivations whose premises are not "
                     f"both believed ({what} {_pct(r, 'difference')} points"
                     + (f", Holm p = {p:.3g})" if p == p else ")"))
        text += "; " + _verdict(r)
        lines.append(text + ".")
    return "\n".join(lines)


def _confirmatory(r: dict) -> str:
    """A confirmatory row's verdict, after a reading that says nothing else."""
    return "; " + _verdict(r) if str(r.get("confirmatory")) == "True" else ""


def _verdict(r: dict) -> str:
    """The row's claim (`claims`), or which of its conditions it misses."""
    from .claims import FAMILY

    if str(r.get("confirmatory")) != "True":
        return "exploratory (the confirmatory family is " + FAMILY + ")"
    matched = f"subject-matched contrast {_signed(r, 'subject_matched')} points"
    if str(r.get("claimed")) == "True":
        return (f"**claimed**: the {matched} is above 0 and above every control's on the same "
                f"statements (intersection–union p = {_p(r, 'p_claim')}, Holm "
                f"{_p(r, 'p_claim_holm')})")
    if str(r.get("testable")) != "True":
        return (f"not claimed: **not testable** (the {matched} rests on "
                f"{r.get('G', 0)} clusters; at least {MIN_CLUSTERS} are needed for every "
                "comparison)")
    return _why_not(r)


def _why_not(r: dict) -> str:
    """Which of the claim's conditions (`claims.confirm`) a testable row misses."""
    from .beliefs import MIN_BOTH

    missing = []
    if not _num(r, "p_subject_matched") < ALPHA:
        missing.append(f"subject-matched contrast not above 0 ({_signed(r, 'subject_matched')},"
                       f" p = {_p(r, 'p_subject_matched')})")
    missing += [f"not above {c} ({_signed(r, f'vs_{c}')}, p = {_p(r, f'p_vs_{c}')})"
                for c in _controls([r]) if not _num(r, f"p_vs_{c}") < ALPHA]
    if int(r["n_both"]) < MIN_BOTH:
        missing.append(f"fewer than {MIN_BOTH} derivations with both premises believed")
    if not missing:
        missing.append(f"Holm-adjusted p {_p(r, 'p_claim_holm')} ≥ {ALPHA}")
    return "not claimed: " + "; ".join(missing)


def _statement(label: str, s: dict) -> str:
    top = ", ".join(f"{c}{' ✓' if true else ''} ({score:.2f})" for c, score, true in s["top"])
    return (f"  - {label}: `{s['prompt']}` gold **{s['answer']}**, rank {s['rank']} of "
            f"{s['n_candidates']}; top: {top}")


def violations(predictions: list[dict], believe_at: int, limit: int = EXAMPLES) -> str:
    """The violations the model holds most firmly: premises ranked best, conclusion worst."""
    found = [p for p in predictions
             if all(s["rank"] <= believe_at for s in p["premises"])
             and p["conclusion"]["rank"] > believe_at]
    found.sort(key=lambda p: (-min(s["rr"] for s in p["premises"]), p["conclusion"]["rr"],
                              p["rule"], p["id"], p["template"]))
    if not found:
        if not any(all(s["rank"] <= believe_at for s in p["premises"]) for p in predictions):
            return "None: no derivation has both premises believed."
        return "None: every derivation with both premises believed has its conclusion believed."
    blocks = []
    for p in found[:limit]:
        blocks.append("\n".join([f"- **{p['id']}** ({p['rule']}, template {p['template']})",
                                 _statement("P1", p["premises"][0]),
                                 _statement("P2", p["premises"][1]),
                                 _statement("conclusion", p["conclusion"])]))
    return (f"{len(found)} violations; the {min(limit, len(found))} held most firmly (✓ marks "
            "answers true of the prompt):\n\n" + "\n".join(blocks))


def statements_table(out: Path) -> str:
    path = out / "statements.csv"
    if not path.exists():
        return ""
    rows = read_results(path)
    if rows and "exact" in rows[0]:  # --answers generate: believed = the answer is the gold
        lines = ["| relation | template | statements | believed (exact) | entailed | wrong | "
                 "unmapped |", "|---|---|---|---|---|---|---|"]
        return "\n".join(lines + [
            f"| {r['relation']} | {r['template']} | {r['n']} | " + " | ".join(
                f"{100 * float(r[g]):.1f}" for g in ("exact", "entailed", "wrong", "unmapped"))
            + " |" for r in rows])
    lines = ["| relation | template | statements | believed at rank 1 | MRR |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['relation']} | {r['template']} | {r['n']} | "
                     f"{100 * float(r['R@1']):.1f} | {100 * float(r['MRR']):.1f} |")
    return "\n".join(lines)


def write_report(out: str | Path) -> Path:
    out = Path(out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    believe_at = int(config.get("believe_at", 1))
    rows = read_rows(out)
    counts = {}
    if (out / "derivations.json").exists():
        counts = json.loads((out / "derivations.json").read_text(encoding="utf-8"))
    sampled = ", ".join(f"{rule} {n} of {counts.get('found', {}).get(rule, n)}"
                        for rule, n in counts.get("sampled", {}).items())
    text = [f"# {TITLE}", "", f"Run: `{out}`; model `{config.get('model')}`, ontology "
            f"{config.get('ontology')}, candidates {config.get('candidates')}, ranking "
            f"{config.get('ranking')}; " + (
                f"open answers (at most {config.get('max_new_tokens')} new tokens): a statement "
                "is believed when the model's own answer is its gold (graded exact by the "
                "ontology; rank 1 below, else one past the candidates)."
                if config.get("answers") == "generate" else
                f"a statement is believed when its gold ranks ≤ {believe_at}."), "", f"Derivations (sampled of askable): {sampled or '—'}.", "",
            "Percentages with 95 % intervals. consistency = P(conclusion believed | both "
            "premises believed); minus base rate = consistency − the conclusions' base rate "
            "(the model's belief rate on statements of the same relation and answer about "
            "other subjects); **subject-matched** = for the same subject and relation, belief "
            "in conclusions entailed by believed premises − belief in its conclusions that are "
            "not, each net of its base rate (strata: subjects with both kinds; G: clusters); "
            "minus NAME's = the same contrast, model − control, paired on the same statements; "
            "those intervals and p's are a wild cluster bootstrap-t (Webb weights, one-sided "
            f"p), not testable below {MIN_CLUSTERS} clusters. p claim = the largest of the "
            "subject-matched contrast's and every comparison's p (the model must beat each); "
            "Holm runs over the confirmatory family, the `all` row of each template; a row is "
            "claimed when every comparison is testable, its Holm p < 0.05, at least 10 "
            "derivations have both premises believed, and the model is not itself a control. "
            "The remaining columns are exploratory (BCa bootstrap over clusters of derivations "
            "sharing a statement, permutation tests, Holm over the whole table): difference "
            "= consistency − P(conclusion believed | not both); matched difference = against "
            "control premises of another subject with the same answer; minus reference = "
            "consistency − the reference model's (`--reference`); graded = the conclusions' "
            "mean reciprocal rank weighted by "
"min(RR(P1), RR(P2)).", "", format_table(rows), "", "## Reading", "", reading(rows),
            "", "## How often each kind of statement is believed", "", statements_table(out),
            "", "## Violations", "", violations(read_predictions(out), believe_at), ""]
    if rows:
        from .figure import FIGURE, write_figure

        write_figure(out, rows, f"{config.get('model')}: conclusion believed (rank ≤ {believe_at}) "
                     "by premises believed")
        text[text.index("## Reading")] = f"![consistency by rule]({FIGURE})\n\n## Reading"
    path = out / "report.md"
    write_text(path, "\n".join(text))
    return path


def observations(out: str | Path) -> list[dict]:
    """One observation per derivation and template: its conclusion's metrics
    (`Study.observations`), so `kgprobe compare` pairs two models' derivations."""
    out = Path(out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    believe_at = int(config.get("believe_at", 1))
    obs = []
    for p in read_predictions(out):
        rank = p["conclusion"]["rank"]
        both = all(s["rank"] <= believe_at for s in p["premises"])
        obs.append({"rule": p["rule"], "template": p["template"], "item": p["id"],
                    "MRR": 1.0 / rank, "R@1": float(rank <= 1),
                    "believed": float(rank <= believe_at), "premises_believed": float(both)})
    return obs
