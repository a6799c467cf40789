"""``report.md`` of a COPEN run: the data, the accuracy table and the paper's analyses
(Tables 3–6 and 13) for the units that have finished."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from kgprobe.reasoning.copen_items import SPLITS, TASKS, select
from kgprobe.studies.copen.analysis import (
    baselines,
    gold_levels,
    markdown_table,
    mean_std,
    pct,
    wilson,
)
from kgprobe.studies.runner import Unit, finished_unit
from kgprobe.studies.stats import interval_text, mean_interval

from .config import CopenConfig

TASK_NAMES = {"csj": "CSJ", "cpj": "CPJ", "cic": "CiC"}


def build_report(cfg: CopenConfig, out: Path, sets: dict, summary: dict, units: Sequence[Unit]) -> str:
    done = [(u, *found) for u in units if (found := finished_unit(out, u)) is not None]
    rows = [r for _, r, _ in done]
    source = (f"generated from {summary.get('csj', summary.get('cic', {})).get('source', 'the knowledge graph')}"
              + (f" and the norms at {cfg.norms}" if cfg.norms and "cpj" in sets else "")
              if cfg.from_kg else f"official data at {cfg.data}")
    lines = [f"# COPEN — {cfg.method} — {cfg.model}", "",
             f"Data: {source} (seed {cfg.seed}); test items per task: "
             f"{_limit_text(cfg.limit)}"
             + (f"; seeds {', '.join(map(str, cfg.seeds))}" if cfg.method != "zero-shot" else "")
             + f". {len(done)}/{len(units)} units finished.", ""]
    lines += ["## Data", "", _data_table(cfg, sets), ""]
    if cfg.from_kg and summary:
        for task in sets:
            info = summary.get(task)
            if info:
                counts = ", ".join(f"{k} {v}" for k, v in info["counts"].items())
                lines.append(f"- {TASK_NAMES[task]} generation: {counts}.")
        lines.append("")
    if "cic" in sets:
        test = select(sets["cic"].get("test", []), cfg.limit_for("cic"), cfg.seed)
        lv = gold_levels(test)
        lines += ["CiC gold concept level in its chain (0 = most specific), evaluated items: "
                  + ", ".join(f"level {k}: {v}" for k, v in lv.items()) + ".", ""]
    lines += ["## Accuracy (%)", "", _accuracy_table(cfg, rows, _intervals(done)), ""]
    lines += _analysis_tables(cfg, rows)
    lines += _examples(done)
    return "\n".join(lines) + "\n"


def _limit_text(limit) -> str:
    if isinstance(limit, dict):
        return ", ".join(f"{TASK_NAMES[t]} {n}" for t, n in limit.items())
    return str(limit) if limit else "all"


def _data_table(cfg: CopenConfig, sets: dict) -> str:
    body = []
    for task, splits in sets.items():
        test_all = splits.get("test", [])
        test = select(test_all, cfg.limit_for(task), cfg.seed)
        base = baselines(task, test)
        body.append([TASK_NAMES[task], *(str(len(splits.get(s, []))) for s in SPLITS),
                     str(len(test)), str(sum(it.label is None for it in test)),
                     ", ".join(f"{k} {pct(v)}" for k, v in base.items()) or "–"])
    return markdown_table(["task", "train", "dev", "test", "evaluated", "unlabeled",
                           "baselines on the evaluated items (%)"], body)


def _by(rows, task):
    return [r for r in rows if r["task"] == task]


def _intervals(done) -> dict[int, str]:
    """Each unit's accuracy interval: a 95% bootstrap over its items (seed 0), where its
    predictions reproduce its accuracy (else the table keeps the Wilson interval)."""
    out = {}
    for _unit, row, preds in done:
        scored = [float(p["correct"]) for p in preds if p.get("correct") is not None]
        if scored and row.get("accuracy") is not None and abs(sum(scored) / len(scored) - row["accuracy"]) < 1e-9:
            out[id(row)] = interval_text(mean_interval(scored, seed=0, key=(row["task"], row.get("variant"))))
    return out


def _accuracy_table(cfg: CopenConfig, rows, intervals: dict[int, str] | None = None) -> str:
    intervals = intervals or {}
    if cfg.method == "zero-shot":
        body = []
        for task in TASKS:
            trs = _by(rows, task)
            if not trs:
                continue
            tied = {id(r) for r in trs if (r.get("tie_share") or 0) >= 0.99}
            informative = [r for r in trs if id(r) not in tied] or trs
            best = max(informative, key=lambda r: -1 if r["accuracy"] is None else r["accuracy"])
            for r in trs:
                mark = " (every choice ties)" if id(r) in tied else " (best)" if r is best and len(trs) > 1 else ""
                chain = f"{pct(r['chain_accuracy'])} ({r['n_chains']} chains)" if task == "cpj" else "–"
                body.append([TASK_NAMES[task], r["variant"] + mark, str(r["n"]), pct(r["accuracy"]),
                             intervals.get(id(r)) or wilson(r["accuracy"], r["n"]), chain])
        note = ("\n\nA causal model reads the CSJ query and the CPJ concept before anything that differs "
                "between the choices, so those parts tie for every choice; ties count against the "
                "gold (CSJ) or predict *false* (CPJ), as in the authors' code.")
        return markdown_table(["task", "scored part", "n", "accuracy", "95% interval", "CPJ chain-level"],
                              body) + note
    body = []
    for task in TASKS:
        trs = _by(rows, task)
        if not trs:
            continue
        per_seed = ", ".join(f"{r['seed']}: {pct(r['accuracy'])}" for r in trs)
        chain = mean_std([r["chain_accuracy"] for r in trs]) if task == "cpj" else "–"
        body.append([TASK_NAMES[task], str(trs[0]["n"]), mean_std([r["accuracy"] for r in trs]),
                     chain, per_seed, mean_std([r.get("dev_accuracy") for r in trs])])
    return markdown_table(["task", "n", "accuracy (mean ± std)", "CPJ chain-level", "per seed",
                           "dev accuracy"], body)


def _analysis_tables(cfg: CopenConfig, rows) -> list[str]:
    out: list[str] = []

    def variants(task):
        trs = _by(rows, task)
        if cfg.method == "zero-shot":
            return [(r["variant"], [r]) for r in trs]
        return [(f"seeds {', '.join(str(r['seed']) for r in trs)}", trs)] if trs else []

    csj = variants("csj")
    if csj:
        out += ["## CSJ: mean reciprocal rank of hard and easy distractors (%, Table 3)", "",
                markdown_table(["run", "answer", "hard distractors", "easy distractors"],
                               [[v, mean_std([r["mrr_answer"] for r in rs]),
                                 mean_std([r["mrr_hard"] for r in rs]),
                                 mean_std([r["mrr_easy"] for r in rs])] for v, rs in csj]), ""]
    cpj = variants("cpj")
    if cpj:
        out += ["## CPJ: false positives among the errors (%, Table 4)", "",
                markdown_table(["run", "errors", "false-positive share", "chain-level accuracy"],
                               [[v, ", ".join(str(r["n_errors"]) for r in rs),
                                 mean_std([r["fp_share"] for r in rs]),
                                 mean_std([r["chain_accuracy"] for r in rs])] for v, rs in cpj]), ""]
    cic = variants("cic")
    if cic:
        out += ["## CiC: out-of-context predictions and error types (%, Tables 5 and 13)", "",
                "Out-of-context: the error equals the prediction made without the sentence. "
                "Disambiguation vs wrong level: errors on entities with more than one chain.", "",
                markdown_table(["run", "errors", "out-of-context share", "errors with 2+ chains",
                                "disambiguation", "wrong level"],
                               [[v, ", ".join(str(r["n_errors"]) for r in rs),
                                 mean_std([r["ooc_share"] for r in rs]),
                                 ", ".join(str(r.get("n_multi_chain_errors", "–")) for r in rs),
                                 mean_std([r["disambiguation_share"] for r in rs]),
                                 mean_std([r["wrong_level_share"] for r in rs])] for v, rs in cic]), ""]
    return out


def _examples(done) -> list[str]:
    """A few errors per task, like the paper's Table 6 (from the task's most accurate unit)."""
    out = ["## Example errors", ""]
    best: dict[str, tuple] = {}
    for unit, row, preds in done:
        task = unit.key["task"]
        acc = row.get("accuracy") if row.get("accuracy") is not None else -1
        if task not in best or acc > best[task][1].get("accuracy", -1):
            best[task] = (unit, {**row, "accuracy": acc}, preds)
    for task in TASKS:
        if task not in best:
            continue
        unit, _row, preds = best[task]
        errs = [p for p in preds if p.get("correct") is False][:3]
        for p in errs:
            if task == "csj":
                out.append(f"- CSJ ({unit.key['variant']}): *{p['query']}* → predicted "
                           f"{p['candidates'][p['pred']]} ({p['kinds'][p['pred']] or '?'}), answer "
                           f"{p['candidates'][p['label']]}")
            elif task == "cpj":
                out.append(f"- CPJ ({unit.key['variant']}): \"{p['text']}\" is "
                           f"{'true' if p['label'] else 'false'}, predicted {'true' if p['pred'] else 'false'}")
            else:
                ooc = f"; without context: {p['candidates'][p['ooc_pred']]}" if "ooc_pred" in p else ""
                out.append(f"- CiC ({unit.key['variant']}): \"{p['sentence']}\" *{p['entity']}* "
                           f"(chains {' / '.join(' → '.join(c) for c in p['chains'])}): predicted "
                           f"{p['candidates'][p['pred']]}, gold {p['candidates'][p['label']]}{ooc}")
    return out + [""] if len(out) > 2 else []
