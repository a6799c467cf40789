"""Follow a study's configuration through one command: which modules must a reader open?

A study's configuration is built once (`Study.config_from_args`); every function it is handed
to is a place a reader must open to know what a setting does. This script runs one
``kgprobe study …`` command in this process with a profile hook installed right after the
configuration is built, and records each call of a kgprobe function that receives the
configuration or one of its settings that is an object of its own (a candidate protocol, an
ontology source, the model settings, a tuple of rules: not a number, a string or a flag, whose
identity says nothing), directly or as a field of an argument (a setup object holding it):

    python bench/config_trace.py premise-ablation --dry-run --ontology bundled --limit 2 --out /tmp/t
    python bench/config_trace.py premise-ablation --model reader --limit 2 --pairs 1 \\
        --controls copy --out /tmp/t2
    python bench/config_trace.py memorization --model frequency --task all --limit 3 --out /tmp/t3

It prints one JSON line: ``places`` (modules the configuration visits), ``returns`` (calls
that climb back into a module already open further up the call stack: a reader who followed
the configuration down must go back up to a file they left), ``functions`` (distinct
functions) and each module's functions. The hook slows the run several times, so trace small
runs (a weightless model, ``--limit 2``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _fields(value: object) -> list:
    """An object's attribute values, read without running its code (no properties, no
    ``__getattr__``)."""
    try:
        held = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return []
    return list(held.values()) if isinstance(held, dict) else []


def trace(study: str, argv: list[str]) -> dict:
    """Run ``kgprobe study STUDY ARGV`` here; the configuration's visits."""
    from kgprobe.cli import main
    from kgprobe.studies import contract

    root = str(REPO) + "/"
    found: dict = {}
    calls: list[tuple[str, str, bool]] = []  # module, function, climbs back up
    stack: list[tuple[object, str]] = []  # the traced calls still running: frame, module
    built = contract.Study.config_from_args

    def hook(frame, event, arg):  # noqa: ARG001 (the profile hook's signature)
        if event == "return":
            if stack and stack[-1][0] is frame:
                stack.pop()
            return
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(root):
            return
        carried = found["carried"]
        local = frame.f_locals
        for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            value = local.get(name)
            if id(value) in carried or any(id(v) in carried for v in _fields(value)):
                module = str(Path(code.co_filename).relative_to(REPO))
                above = {m for _, m in stack[:-1]} - {stack[-1][1]} if stack else set()
                calls.append((module, code.co_qualname, module in above))
                stack.append((frame, module))
                return

    def config_from_args(self, args):
        config = built(self, args)
        found["config"] = config  # kept alive, so the ids below stay its objects'
        found["carried"] = {id(config)} | {id(v) for v in _fields(config)
                                           if not isinstance(v, (type(None), bool, int, float,
                                                                 str, Path))}
        sys.setprofile(hook)
        return config

    contract.Study.config_from_args = config_from_args
    try:
        status = main(["study", study, *argv])
    finally:
        sys.setprofile(None)
        contract.Study.config_from_args = built
    modules: dict[str, list[str]] = {}
    for module, function, _ in calls:
        if function not in modules.setdefault(module, []):
            modules[module].append(function)
    returns = sorted({f"{m}:{f}" for m, f, up in calls if up})
    return {"study": study, "argv": argv, "exit": status, "places": len(modules),
            "returns": len(returns), "functions": sum(map(len, modules.values())),
            "modules": modules, "climbs": returns}


USAGE = "usage: python bench/config_trace.py STUDY [options of kgprobe study STUDY]"

if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(USAGE + "\n\n" + __doc__)
    elif len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(USAGE)
    else:
        print(json.dumps(trace(sys.argv[1], sys.argv[2:])))
