"""A cloze prompt asked of an instruction-tuned model through its chat template.

Instruction-tuned models are trained on conversations, so a bare sentence is not the text they
see in use: `--chat-template` asks them the way they are used. The cloze prompt becomes a user
turn asking to complete the statement (the study's instruction, a data file:
``prompts/chat.toml``), with the slot shown as ``___``; the template's generation prompt opens
the assistant's turn, and each candidate is scored as the assistant's completed statement,
whole-sentence as without a template (`models.cloze`): the statement's text before the slot
is part of the shared prefix, candidate and suffix are scored.

``none`` (the default) asks the bare sentence, as before; ``auto`` uses the tokenizer's
template where the model has one (none otherwise: a base model, a masked LM, a baseline);
a FILE is a Jinja chat template, applied through the tokenizer (a masked LM has no turns, so a
FILE with one is refused). The wrap (the template's text and the instruction) is part of the
scorer's settings, so the score cache never serves a wrapped prompt's scores for a bare one
(`models.score_cache.scorer_settings`).

Light on purpose (no torch): the studies' option parsing imports it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgprobe.errors import KgprobeError
from kgprobe.models.chat_render import check_syntax, render_chat
from kgprobe.ontology.verbalize import MASK

__all__ = ["BLANK", "ChatWrap", "check_chat_template", "chat_wrap", "user_message"]

#: How the slot is shown in the user's turn.
BLANK = "___"
AUTO, NONE = "auto", "none"
#: The wrap's rule in the score cache's key: a changed rule gets a new name.
WRAP = "user-turn-v1"


def check_chat_template(value: str | None) -> str:
    """``auto``, ``none`` or a readable Jinja file Jinja can parse (its resolved path); else
    one line naming the file (and the line of a syntax error)."""
    value = NONE if value in (None, "") else str(value)
    if value in (AUTO, NONE):
        return value
    path = Path(value).expanduser()
    if not path.is_file():
        raise KgprobeError(f"--chat-template {value}: no such file; give auto, none or a Jinja "
                           "chat template file")
    try:  # a template Jinja cannot parse is refused before any run starts
        check_syntax(path.read_text(encoding="utf-8"), value)
    except (OSError, UnicodeDecodeError) as err:
        raise KgprobeError(f"--chat-template {value}: cannot be read ({err}); give a UTF-8 "
                           "Jinja chat template file") from None
    return str(path.resolve())


def user_message(instruction: str, prompt: str) -> str:
    """The user's turn: the instruction with the statement, its slot shown as ``___``."""
    statement = prompt.replace(MASK, BLANK)
    return instruction.format(statement=statement) if "{statement}" in instruction \
        else f"{instruction}\n{statement}"


@dataclass(frozen=True)
class ChatWrap:
    """How a model's prompts are wrapped: the Jinja template's text and the instruction."""

    template: str
    instruction: str
    source: str  # "auto" (the tokenizer's) or the file's path

    def __post_init__(self) -> None:
        check_syntax(self.template, self.source)  # one line now, not a traceback per prompt

    def key(self) -> dict:
        """What decides the wrapped text: part of the score cache's key."""
        digest = hashlib.sha256(self.template.encode("utf-8")).hexdigest()
        return {"wrap": WRAP, "template_sha256": digest, "instruction": self.instruction}

    def header(self, tok: Any, prompt: str) -> str:
        """The rendered conversation up to where the assistant's statement starts."""
        text = self.render(prompt, getattr(tok, "special_tokens_map", None) or {})
        bos = getattr(tok, "bos_token", None)
        if bos and text.startswith(bos) and _adds_bos(tok):  # the encoder adds it already
            text = text[len(bos):]
        return text

    def render(self, prompt: str, special_tokens: dict) -> str:
        """The template rendered as `transformers`' apply_chat_template renders it (the
        tokenizer's special tokens as variables, a generation prompt), but within a time and
        size bound (`models.chat_render`): the template is code from a file or a model."""
        messages = [{"role": "user", "content": user_message(self.instruction, prompt)}]
        context = {**special_tokens, "messages": messages, "tools": None, "documents": None,
                   "add_generation_prompt": True}
        return render_chat(self.template, self.source, context)

    def wrapped(self, tok: Any, prompt: str) -> str:
        """The whole text the model reads (the slot still ``[MASK]``): header + statement."""
        return self.header(tok, prompt) + prompt


@functools.lru_cache(maxsize=8)
def _adds_bos(tok: Any) -> bool:
    """Whether the tokenizer puts its BOS token before a text itself (Llama's does; SmolLM2's
    BOS is ``<|im_start|>``, which only the template writes); asked once per tokenizer, not
    once per wrapped prompt."""
    ids = tok("x", add_special_tokens=True)["input_ids"]
    return bool(ids) and ids[0] == getattr(tok, "bos_token_id", None)


def chat_wrap(setting: str | None, loaded: Any, instruction: str) -> ChatWrap | None:
    """The wrap `setting` (``auto``, ``none``, a FILE) gives `loaded`'s prompts; None: bare.

    A model that is no causal LM with a tokenizer (a baseline, a masked LM) asks bare prompts
    under ``auto``; a FILE with a masked (or served) LM is refused: it has no conversation to
    continue here; a baseline reads no text, so it has nothing to wrap.
    """
    setting = check_chat_template(setting)
    if setting == NONE:
        return None
    tok = getattr(loaded, "tokenizer", None)
    causal = getattr(loaded, "kind", "") == "causal" and tok is not None  # scored in-process
    if setting == AUTO:
        template = getattr(tok, "chat_template", None) if causal else None
        return ChatWrap(template, instruction, AUTO) if isinstance(template, str) and template else None
    if not causal:
        if getattr(loaded, "kind", "") == "baseline":  # no text is read: nothing to wrap
            return None
        raise KgprobeError(f"--chat-template {setting}: model '{getattr(loaded, 'name', '?')}' "
                           "is not a causal LM scored here (a masked LM has no turns); use auto "
                           "or none")
    return ChatWrap(Path(setting).read_text(encoding="utf-8"), instruction, setting)


def dry_wrapper(setting: str, model: str | None, instruction: str):
    """prompt → the wrapped text a run would score, for a dry run, which loads no weights:
    a FILE is rendered as it is; ``auto`` reads the tokenizer of a local model folder or of
    a preset already converted (`models.gguf`). None where no template is at hand."""
    tok = _local_tokenizer(model)
    if setting == AUTO:
        template = getattr(tok, "chat_template", None)
        if not template:
            return None
        wrap = ChatWrap(template, instruction, AUTO)
    else:
        wrap = ChatWrap(Path(setting).read_text(encoding="utf-8"), instruction, setting)
    if tok is not None:
        return lambda prompt: wrap.wrapped(tok, prompt)
    return lambda prompt: wrap.render(prompt, {}) + prompt


def _local_tokenizer(model: str | None) -> Any:
    """The tokenizer of `model` where it is on disk already (a folder, a converted preset)."""
    if not model:
        return None
    from kgprobe.models.loading import default_cache_dir

    for folder in (Path(model).expanduser(), default_cache_dir() / model):
        if (folder / "tokenizer_config.json").is_file():
            from transformers import AutoTokenizer

            try:
                return AutoTokenizer.from_pretrained(str(folder))
            except (OSError, ValueError):
                return None
    return None
