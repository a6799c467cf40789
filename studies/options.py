"""Command-line options shared by several `kgprobe` commands.

They live with the studies (not in `kgprobe.cli`) because each study package registers its own
sub-command, and a study must never import the layer above it.
"""

from __future__ import annotations

import functools

import argparse
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Sequence

from kgprobe.errors import KgprobeError


DEVICES_HELP = "auto (cuda when present, else cpu), cpu, cuda or cuda:N"
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ModelSettings:
    """Where and how a study's model computes, the same options on every study that loads one
    (`model_options`): none of them changes a CPU run's numbers (``--dtype`` changes a GPU
    run's last digits), so the studies pin none of them, except where they always did."""

    device: str = "auto"
    dtype: str = "float32"
    batch_size: int | None = 64  # None: the study's own choice (COPEN: each method's)
    threads: int | None = None
    cache: bool = True  # read and write the persistent score cache (models/score_cache)
    chat_template: str = "none"  # auto, none or a Jinja file (models/chat; `chat_pinned`)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ModelSettings":
        """The options `model_options` added, parsed once (the CLI and `kgprobe.run` alike)."""
        dtype = getattr(args, "dtype", "float32")
        if dtype not in DTYPES:
            raise KgprobeError(f"--dtype {dtype}: use one of {', '.join(DTYPES)}")
        batch = getattr(args, "batch_size", None)
        if batch is not None and batch < 1:
            raise KgprobeError(f"--batch-size {batch}: give at least 1")
        from kgprobe.models.chat import check_chat_template

        return cls(device=str(getattr(args, "device", "auto")), dtype=dtype, batch_size=batch,
                   threads=getattr(args, "threads", None),
                   cache=not getattr(args, "no_cache", False),
                   chat_template=check_chat_template(getattr(args, "chat_template", None)))

    def fields(self) -> dict:
        """The config fields every model study has: ``device``, ``dtype``, ``batch_size``,
        ``cache``, ``chat_template`` (threads are applied to the process, `apply_threads`)."""
        return {"device": self.device, "dtype": self.dtype, "batch_size": self.batch_size,
                "cache": self.cache, "chat_template": self.chat_template}

    @classmethod
    def taken_from(cls, settings: dict, **defaults: Any) -> "ModelSettings":
        """The model settings among a Python shortcut's keywords (``batch_size=4,
        cache=False``), removed from `settings`, so ``run_memorization(model, out,
        batch_size=4)`` needs no `ModelSettings` of its own; `defaults`: a study's own."""
        names = [f.name for f in dataclass_fields(cls)]
        return cls(**{**defaults, **{k: settings.pop(k) for k in names if k in settings}})


def model_options(parser: argparse.ArgumentParser, *, batch_size: int | None = 64,
                  batch_help: str = "prompts scored at once") -> None:
    """``--device`` (default auto), ``--dtype``, ``--batch-size``, ``--threads``, ``--no-cache``:
    every study that loads a model takes these, with these defaults (`batch_size`: the study's
    own), read back once by `ModelSettings.from_args`."""
    parser.add_argument("--device", default="auto", help=DEVICES_HELP)
    parser.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="the weights' dtype (bfloat16 on a GPU; ranks like float32)")
    parser.add_argument("--batch-size", type=int, default=batch_size, help=batch_help)
    threads_option(parser)
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the persistent score cache "
                             "(`kgprobe cache stats|clear`)")
    parser.add_argument("--chat-template", default=None, metavar="auto|none|FILE",
                        help="ask each cloze as a user turn and score the assistant's completed "
                             "statement (auto: the tokenizer's template where the model has one; "
                             "FILE: a Jinja chat template; none, the default: the bare sentence; "
                             "multiple-choice: the question's turn, --chat's default auto)")
    served_options(parser)


CHAT_FILE = Path(__file__).resolve().parent.parent / "prompts" / "chat.toml"


@functools.cache
def chat_instruction(study: str) -> str:
    """The user turn's instruction `study` asks under ``--chat-template`` (``prompts/chat.toml``,
    its section, else ``default``)."""
    import tomllib

    data = tomllib.loads(CHAT_FILE.read_text(encoding="utf-8"))
    return str(data.get(study, data["default"])["instruction"])


def chat_pinned(chat_template: str, study: str) -> dict:
    """What ``config.json`` pins of the chat wrap: nothing for ``none`` (folders written
    before the option resume as they were); else the setting, the instruction and a FILE's
    hash (an edited template changes every number)."""
    if chat_template in (None, "none"):
        return {}
    pinned = {"chat_template": chat_template, "chat_instruction": chat_instruction(study)}
    if chat_template != "auto":
        import hashlib

        pinned["chat_template_sha256"] = hashlib.sha256(Path(chat_template).read_bytes()).hexdigest()
    return pinned


def no_chat_template(chat_template: str, study: str) -> None:
    """A study that asks no cloze sentence (STA's slot distributions, COPEN's segments) takes
    ``--chat-template none`` only: one line, where a wrap would otherwise be silently unused."""
    if chat_template not in (None, "none"):
        raise KgprobeError(f"--chat-template {chat_template}: {study} does not ask cloze "
                           "statements, so no template wraps its prompts yet; drop the option")


def use_chat(loaded, chat_template: str, study: str):
    """Set `loaded`'s chat wrap (`models.chat.chat_wrap`) for `study`; returns `loaded`.
    A wrapping model (``prior:MODEL``) hands it to the model whose scorer reads it."""
    from kgprobe.models.chat import chat_wrap

    wrap = chat_wrap(chat_template, loaded, chat_instruction(study))
    target = getattr(loaded, "inner", loaded)
    if wrap is not None or getattr(target, "chat", None) is not None:
        target.chat = wrap
    return loaded


def served_options(parser: argparse.ArgumentParser) -> None:
    """``--api-key-env NAME`` and ``--tokenizer ID|DIR``: settings of a served model
    (``--model openai:URL#MODEL``), folded into its name by `fold_served_options`."""
    parser.add_argument("--api-key-env", default=None, metavar="NAME",
                        help="served model: the environment variable holding the API key (its "
                             "name is recorded, never its value)")
    parser.add_argument("--tokenizer", default=None, metavar="ID|DIR",
                        help="served model: the tokenizer that finds the candidate's tokens in "
                             "the echoed prompt (default: the server's own token offsets)")


def fold_served_options(args: argparse.Namespace) -> None:
    """Fold ``--api-key-env`` and ``--tokenizer`` into a served model's name as its
    ``key_env=`` and ``tokenizer=`` settings (`models.served_client`), so config.json and the
    pinned settings record them with the model (the variable's name, never the key). Why here:
    the one place both the command line and `kgprobe.run` pass before a study reads its
    options. For any other model they mean nothing: one line, exit 2."""
    given = {k: getattr(args, a, None) for k, a in (("key_env", "api_key_env"),
                                                    ("tokenizer", "tokenizer"))}
    given = {k: v for k, v in given.items() if v}
    if not given:
        return
    from kgprobe.models.served_client import is_served, with_settings

    model = getattr(args, "model", None)
    if not isinstance(model, str) or not is_served(model):
        flag = "--api-key-env" if "key_env" in given else "--tokenizer"
        raise KgprobeError(f"{flag}: only for a served model (--model openai:URL#MODEL); "
                           f"drop it for model {model!r}")
    args.model = with_settings(model, given)


def threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads``; `kgprobe.cli.main` applies it before any command runs."""
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice); 1 is much faster when "
                             "other processes share the cores")


def candidates_option(parser: argparse.ArgumentParser, default: str = "all") -> None:
    """``--candidates all|K``: the candidate protocol (`reasoning.distractors`), the same on
    every command that ranks candidates. Handlers check it with `parse_protocol` (a bad value
    is then one line and exit 2, where argparse would print its usage too)."""
    parser.add_argument("--candidates", default=default, metavar="all|K",
                        help="all: rank the gold against every candidate of its kind (the "
                             "paper's §3); K: the gold and K-1 seeded distractors of its kind "
                             f"that are no gold of the item (the paper's §5 uses 20; default "
                             f"{default})")


def ranking_option(parser: argparse.ArgumentParser) -> None:
    """``--ranking filtered|raw`` (`reasoning.filtering`); handlers check it with
    `parse_ranking`, so a bad value is one line and exit 2."""
    parser.add_argument("--ranking", default="filtered", metavar="filtered|raw",
                        help="filtered (default): an item's other true answers (entailed "
                             "superclasses, superproperties, domain/range classes; a record's "
                             "other golds) are left out when its gold is ranked, as in "
                             "knowledge-graph completion; raw: every candidate counts")


def dry_run_option(parser: argparse.ArgumentParser) -> None:
    """``--dry-run``: write ``OUT/prompts.jsonl`` (`studies.dry_run`) and load no model."""
    parser.add_argument("--dry-run", action="store_true",
                        help="write OUT/prompts.jsonl, one line per prompt the study would score, "
                             "without loading a model (--model not needed)")


def dry_run_done(out, n: int) -> int:
    """What every study's ``--dry-run`` prints when it has written its prompts."""
    print(f"wrote {out}/prompts.jsonl ({n} prompts; no model loaded)")
    return 0


def apply_threads(args: argparse.Namespace) -> None:
    threads = getattr(args, "threads", None)
    if threads is not None:
        from kgprobe.models.loading import set_threads

        set_threads(threads)


def comma_list(text: str | None, *, choices: Sequence[str] | None = None,
               option: str = "", lower: bool = False) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``: the one parser of every comma-separated option.

    With `choices`, an unknown entry is a one-line error naming `option` and the valid values.
    """
    if text is None:
        return []
    items = [x.strip() for x in str(text).split(",") if x.strip()]
    if lower:
        items = [x.lower() for x in items]
    if choices is not None:
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise KgprobeError(f"{option} {text}: use one or more of {', '.join(choices)} "
                               "(comma-separated)")
    return items


#: ``--answers``: rank the candidates, or let the model write its answer (docs/open-answers.md)
ANSWERS = ("rank", "generate")


def answers_options(parser: argparse.ArgumentParser, generate: str) -> None:
    """``--answers rank|generate`` and ``--max-new-tokens``, the same on every study that
    grades open answers; `generate` says what a generated answer means in that study."""
    parser.add_argument("--answers", choices=ANSWERS, default="rank",
                        help=f"rank: the candidates ranked by the model's scores; generate: "
                             f"{generate}, graded by the ontology as exact, entailed (a true "
                             "superclass), wrong or unmapped (docs/open-answers.md)")
    parser.add_argument("--max-new-tokens", type=int, default=8,
                        help="--answers generate: the longest answer in tokens (it stops "
                             "earlier at the sentence's end)")
