"""Chat templates rendered with a bound on time and size, and their errors in one line.

A chat template is code (Jinja) from a file the user names or from a model's tokenizer, and
it is rendered once per prompt. Jinja's immutable sandbox stops it reaching Python's internals,
but not from running forever or filling memory: ``range`` is capped at 100 000 items, yet two
nested loops run 10^10 times, and ``'x' * 10**9`` or a string doubled in a loop allocates
gigabytes in one step. So the template renders in `BoundedSandbox`, which

* checks one deadline (`RENDER_SECONDS`) at every loop iteration (each ``{% for %}`` iterates
  through `_Bounds.loop`, put there by rewriting the parsed template), every call, attribute
  and item access, operator and output chunk;
* estimates, *before* computing it, the size of what ``*``, ``+``, ``**``, ``%``, ``~``, every
  filter and every string method would make, and refuses one past `MAX_CHARS` characters
  (widths and counts are read from the arguments, so ``'x'|center(10**9)`` is refused before
  it allocates); the output is capped at `MAX_CHARS`, and everything made during one render at
  `MAX_WORK`, so many values just under the cap cannot add up either.

Real chat templates render in well under a millisecond and make a few kilobytes, far below
both bounds. The environment is the one `transformers` renders chat templates with (its
filters, globals and extensions), so a template renders here as it does there.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from typing import Any, Callable

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from kgprobe.errors import TemplateError

__all__ = ["MAX_CHARS", "MAX_WORK", "RENDER_SECONDS", "check_syntax", "render_chat"]

#: One render's time: real templates take well under a millisecond.
RENDER_SECONDS = 2.0
#: The most characters one value, or the whole output, may have.
MAX_CHARS = 1_000_000
#: The most characters all the values one render makes may add up to.
MAX_WORK = 16 * MAX_CHARS
#: String methods whose integer arguments multiply the result (a tab size, per tab).
_MULTIPLYING = frozenset({"expandtabs", "indent"})
_FORMATTING = frozenset({"format", "format_map", "__mod__"})
_NUMBER = re.compile(r"\d+")


class Overrun(Exception):
    """The render passed a bound; its message says which."""


class _Budget:
    """One render's deadline and the characters it has made so far."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.made = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise Overrun(f"ran past {RENDER_SECONDS:g} s (a loop or recursion too long)")

    def allow(self, estimate: int) -> None:
        if estimate > MAX_CHARS:
            raise Overrun(f"would make a value of about {estimate:,} characters "
                          f"(at most {MAX_CHARS:,})")

    def count(self, value: Any) -> None:
        n = _size(value)
        self.allow(n)
        self.made += n
        if self.made > MAX_WORK:
            raise Overrun(f"made more than {MAX_WORK:,} characters in all")


def _size(value: Any, depth: int = 0) -> int:
    """About how many characters `value` is as text, stopping once past `MAX_CHARS`."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    if isinstance(value, range):
        return len(value)
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)) and depth < 32:
        total = len(value)
        for item in value:
            total += _size(item, depth + 1)
            if total > MAX_CHARS:
                break
        return total
    return 8


def _weight(value: Any) -> int:
    """An argument's say in a result's size: an integer by its value (a width, a count)."""
    return abs(value) if isinstance(value, int) and not isinstance(value, bool) else _size(value)


def _estimate(name: str, value: Any, args: tuple, kwargs: dict) -> int:
    """A bound on the size of `value`'s method (or filter) `name` applied to the arguments."""
    others = [*args, *kwargs.values()]
    ints = sum(_weight(a) for a in others if isinstance(a, int) and not isinstance(a, bool))
    texts = sum(_size(a) for a in others if not isinstance(a, int))
    base = _size(value)
    if name in _FORMATTING and isinstance(value, str):
        widths = [int(n) for n in _NUMBER.findall(value)]
        return base + texts + max(widths, default=0) + (ints if "*" in value else 0)
    if name in _MULTIPLYING:
        return base * (1 + texts + ints)
    return base * (1 + texts) + ints


class _Bounds(Extension):
    """What the rewritten template calls: each loop's iterable and each ``~``."""

    def loop(self, iterable: Any):
        budget = self.environment.budget()
        for item in iterable:
            budget.tick()
            yield item

    def concat(self, *parts: Any) -> str:
        budget = self.environment.budget()
        budget.allow(sum(_size(p) for p in parts))
        text = "".join(str(p) for p in parts)
        budget.count(text)
        return text


class _Rewrite(NodeTransformer):
    """Route every loop and ``~`` through `_Bounds` (a node the parser never makes)."""

    def _bounds(self, name: str, args: list) -> nodes.Call:
        return nodes.Call(nodes.ExtensionAttribute(_Bounds.identifier, name), args, [], None, None)

    def visit_For(self, node: nodes.For) -> nodes.For:
        node = self.generic_visit(node)
        node.iter = self._bounds("loop", [node.iter]).set_lineno(node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Call:
        node = self.generic_visit(node)
        return self._bounds("concat", list(node.nodes)).set_lineno(node.lineno)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with each render's deadline and size bounds (module docstring)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._state = threading.local()
        self.finalize = self._finalize

    def budget(self) -> _Budget:
        """The render under way's budget (a fresh one where Jinja folds constants at compile time)."""
        return getattr(self._state, "budget", None) or _Budget()

    def _finalize(self, value: Any) -> Any:
        self.budget().allow(_size(value))  # before the value becomes text
        return value

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = self.budget()
        budget.tick()
        if operator == "*":
            n, seq = (left, right) if isinstance(left, int) else (right, left)
            if isinstance(n, int) and isinstance(seq, (str, list, tuple)):
                budget.allow(_size(seq) * max(n, 0))
        elif operator == "+":
            budget.allow(_size(left) + _size(right))
        elif operator == "**" and isinstance(left, int) and isinstance(right, int):
            budget.allow(right * max(left.bit_length() - 1, 0) // 3)
        elif operator == "%" and isinstance(left, str):
            budget.allow(_estimate("__mod__", left, tuple(right) if isinstance(right, tuple)
                                   else (right,), {}))
        result = super().call_binop(context, operator, left, right)
        budget.count(result)
        return result

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        budget = __self.budget()
        budget.tick()
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        owner = getattr(method, "__self__", None)
        if isinstance(owner, str):
            shown = {k: v for k, v in kwargs.items() if not k.startswith("_")}
            budget.allow(_estimate(getattr(method, "__name__", ""), owner, args, shown))
        result = super().call(__context, __obj, *args, **kwargs)
        budget.count(result)
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.budget().tick()
        return super().getitem(obj, argument)

    def bounded_filter(self, name: str, func: Callable) -> Callable:
        """`func` (the filter `name`) with its result's size estimated first and counted after."""
        @functools.wraps(func)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            budget = self.budget()
            budget.tick()
            plain = [a for a in args if not isinstance(a, (Context, jinja2.nodes.EvalContext,
                                                           jinja2.Environment))]
            if plain:
                budget.allow(_estimate(name, plain[0], tuple(plain[1:]), kwargs))
            result = func(*args, **kwargs)
            budget.count(result)
            return result
        return bounded

    def render_bounded(self, template: jinja2.Template, context: dict) -> str:
        """`template` rendered under a fresh budget; Overrun past a bound."""
        budget = self._state.budget = _Budget()
        try:
            parts, size = [], 0
            for chunk in template.generate(**context):
                budget.tick()
                size += len(chunk)
                if size > MAX_CHARS:
                    raise Overrun(f"wrote more than {MAX_CHARS:,} characters")
                parts.append(chunk)
            return "".join(parts)
        finally:
            self._state.budget = None


@functools.lru_cache(maxsize=1)
def _environment() -> BoundedSandbox:
    """transformers' chat-template environment (its filters, globals, extensions), bounded."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    base = _compile_jinja_template("").environment
    env = BoundedSandbox(trim_blocks=True, lstrip_blocks=True,
                         extensions=[*(type(e) for e in base.extensions.values()), _Bounds])
    env.globals.update(base.globals)
    env.globals.pop("lipsum", None)  # unbounded text in one call; no chat template needs it
    env.filters.update({name: env.bounded_filter(name, f) for name, f in base.filters.items()})
    return env


class _Generation(Extension):
    """transformers' ``{% generation %}`` tag, for a syntax check that imports no transformers."""

    tags = {"generation"}

    def parse(self, parser) -> list:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _shown(source: str) -> str:
    return "auto (the model's own chat template)" if source == "auto" else source


def check_syntax(template: str, source: str) -> None:
    """Refuse a template Jinja cannot parse, in one line naming `source` and the line."""
    env = jinja2.Environment(extensions=[_Generation, "jinja2.ext.loopcontrols"])
    try:
        env.parse(template)
    except jinja2.TemplateSyntaxError as err:
        raise TemplateError(f"--chat-template {_shown(source)}: line {err.lineno}: "
                            f"{_one_line(err.message)}; fix the template, or use --chat-template "
                            "none") from None


@functools.lru_cache(maxsize=16)
def _compiled(template: str) -> jinja2.Template:
    env = _environment()
    tree = _Rewrite().visit(env.parse(template))
    return env.from_string(tree)


def render_chat(template: str, source: str, context: dict) -> str:
    """`template` rendered with `context` within the bounds; else one line naming `source`.

    Every failure is the template's (its code runs on the user's input), so each becomes a
    TemplateError: a syntax error, an error it raises itself (``raise_exception``), a name it
    lacks, an operation the sandbox refuses, a bound passed."""
    try:
        return _environment().render_bounded(_compiled(template), context)
    except Overrun as err:
        what = f"rendering stopped: it {err}"
    except jinja2.TemplateSyntaxError as err:
        what = f"line {err.lineno}: {_one_line(err.message)}"
    except jinja2.TemplateError as err:
        what = f"the template failed ({type(err).__name__}: {_one_line(err)})"
    except Exception as err:  # noqa: BLE001 - the template's own code failed on its input
        what = f"the template failed ({type(err).__name__}: {_one_line(err)})"
    raise TemplateError(f"--chat-template {_shown(source)}: {what}; fix the template, or use "
                        "--chat-template none")


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:200]
