"""The official OntoProbe code's prompts, for comparing `--protocol paper` against them.

The authors' prompt builder (``data.py`` of vickywu1022/OntoProbe-PLMs) needs OpenPrompt and
jsonlines only for two trivial things: a record type (``InputExample``) and reading JSON lines.
This script stands in for both, imports the authors' ``data.py`` from a checkout given on the
command line (it copies nothing of it), runs ``DatasetLoader.load_data`` for every memorizing
task × template (mode ``zs-f``) and every reasoning rule with both premises written (premise
mode ``22``, trained_soft ``none``), and renders each example through its template the way
OpenPrompt's ``ManualTemplate`` does (parts joined by the spaces between them). Golds are the
labels the authors' ``gt`` indexes point at.

    git clone https://github.com/vickywu1022/OntoProbe-PLMs official-code
    python bench/paper_official_prompts.py official-code official.jsonl
    python bench/paper_agreement.py official.jsonl D1/prompts.jsonl D2/prompts.jsonl

Premise selection reads the authors' "memorized" files; mode 22 selects every premise, so the
stand-in returns every index of the premise's memorizing run (the test slice that run scores:
records 20–519 of subClassOf, 20– of the others). Prints one JSON line: the prompts written,
per task or rule.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import types

MEMORIZING = {  # knowledge → the templates of the authors' scripts/memorizing/*.sh
    "type": [" is a", " has class", " is a particular"],
    "subClassOf": [" is a", " has class", " is a particular"],
    "subPropertyOf": [" implies"],
    "domain": ["One has to be a particular"],
    "range": ["One has to be a particular"],
}
REASONING = {  # rule → the template of scripts/reasoning/*.sh
    "rdfs2": "One has to be a particular", "rdfs3": "One has to be a particular",
    "rdfs5": " implies", "rdfs7": " implies", "rdfs9": " is a particular",
    "rdfs11": " is a particular",
}
#: How many records the memorizing run of each premise relation scores (mode zs-f).
PREMISE_RUN = {"subClassOf": 500}


class _Example:
    def __init__(self, text_a="", text_b="", meta=None, guid=None, tgt_text=None):
        self.text_a, self.text_b, self.meta = text_a, text_b, meta or {}


class _Labels(dict):
    """A candidate set that maps each label to itself, so `gt` holds labels."""

    def __getitem__(self, key):
        return key


def _stubs() -> None:
    openprompt = types.ModuleType("openprompt")
    data_utils = types.ModuleType("openprompt.data_utils")
    data_utils.InputExample = _Example
    openprompt.data_utils = data_utils
    sys.modules["openprompt"], sys.modules["openprompt.data_utils"] = openprompt, data_utils
    jsonlines = types.ModuleType("jsonlines")

    class _Reader:
        def __init__(self, path, mode="r"):
            self.f = open(path, encoding="utf-8")

        def __enter__(self):
            return (json.loads(line) for line in self.f if line.strip())

        def __exit__(self, *exc):
            self.f.close()

    jsonlines.open = _Reader
    sys.modules["jsonlines"] = jsonlines


def render(template: str, example: _Example) -> str:
    """OpenPrompt's ManualTemplate text of one example (whitespace runs collapsed)."""
    def part(m):
        spec = json.loads(m.group(0)) if ":" in m.group(0) else None
        if spec is None:
            return "[MASK]"
        if "placeholder" in spec:
            return getattr(example, spec["placeholder"])
        return example.meta[spec["meta"]]

    return " ".join(re.sub(r"\{[^{}]*\}", part, template).split())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="the authors' data.py, get_memorized.py and data/memorizing")
    ap.add_argument("out", help="the JSON lines file to write")
    args = ap.parse_args(argv)
    here = os.getcwd()
    out = os.path.join(here, args.out)  # an absolute `out` stays as it is
    checkout = os.path.abspath(args.checkout)
    os.chdir(checkout)  # the authors' code reads data/... relative to its folder
    sys.path.insert(0, checkout)
    try:
        counts = write_prompts(out)
    finally:
        os.chdir(here)
        sys.path.remove(checkout)
    print(json.dumps({"bench": "paper_official_prompts", "prompts": sum(counts.values()),
                      "groups": counts, "out": args.out}))


def write_prompts(path: str) -> dict[str, int]:
    """Write every official prompt to `path` (the current folder is the authors' checkout);
    returns how many per task or rule."""
    _stubs()
    import data  # the authors' data.py

    n_test = {}
    for k in MEMORIZING:
        with open(f"data/memorizing/{k}.jsonl", encoding="utf-8") as f:
            n_test[k] = sum(1 for line in f if line.strip()) - 20

    def select(path, *_):  # mode 22: every premise the memorizing run scored
        k = path.split("/")[1].split("-")[0]
        n = PREMISE_RUN.get(k, n_test[k]) if "memorized_gpt" in path else n_test[k]
        idx = list(range(n))
        return idx, idx, []

    data.split_by_Acc = data.split_by_MRR = select
    counts: dict[str, int] = {}
    out = open(path, "w", encoding="utf-8")
    plain = '{"placeholder":"text_a"} {"mask"} {"placeholder":"text_b"}'
    for k, templates in MEMORIZING.items():
        for t, pattern in enumerate(templates):
            loader = data.DatasetLoader(k, _Labels(), pattern, "zs-f", "x/m.zs-f.m.mean.t", "none")
            dataset, gt, _, _ = loader.load_data()
            for n, (ex, golds) in enumerate(zip(dataset, gt)):
                out.write(json.dumps({"group": k, "template": t, "index": n,
                                      "text": render(plain, ex), "golds": golds}) + "\n")
                counts[k] = counts.get(k, 0) + 1
    for rule, pattern in REASONING.items():
        loader = data.DatasetLoader(f"{rule}-22", _Labels(), pattern, "zs-f", "x/m.zs-f.m.mean.t", "none")
        dataset, gt, _, template = loader.load_data()
        for n, (ex, golds) in enumerate(zip(dataset, gt)):
            out.write(json.dumps({"group": rule, "template": 0, "index": n,
                                  "text": render(template, ex), "golds": golds,
                                  "p1": ex.meta["1"], "p2": ex.meta["2"],
                                  "h": ex.meta["h"]}) + "\n")
            counts[rule] = counts.get(rule, 0) + 1
    out.close()
    return counts


if __name__ == "__main__":
    main()
