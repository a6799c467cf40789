"""A pretrained model's answer to a multiple-choice question: each option letter's
log-probability as the token after the question (OntoProbe §5; `prompts.multiple_choice`).

The question plus an instruction to answer with the option letter is wrapped in the
tokenizer's chat template when it has one (user turn, then the assistant generation prompt),
followed by ``"("``; each option letter is scored as the next token. It lives with the models
because it is how a tokenizer-and-logits model answers `LanguageModel.letter_scores`; a
baseline answers the same call its own way (`models.baselines`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def letter_message(question: str, instruction: str) -> str:
    """The question and the instruction to answer with a letter: the user's turn."""
    return f"{question}\n{instruction}" if instruction else question


def plain_letter_prompt(question: str, instruction: str) -> str:
    """The text a question's answer letter follows without a chat template (a dry run writes
    it as the text the letter is asked after)."""
    return f"{letter_message(question, instruction)}\nAnswer: ("


def letter_context(tok: Any, question: str, instruction: str, use_chat: bool,
                   template: str | None = None) -> list[int]:
    """The token ids a question's answer letter follows (`template`: a Jinja chat template's
    text; None: the tokenizer's own)."""
    if use_chat:
        from kgprobe.models.chat_render import render_chat

        message = letter_message(question, instruction)
        messages = [{"role": "user", "content": message}]
        own = template or getattr(tok, "chat_template", None)
        if isinstance(own, str):  # the template is code: rendered within a time and size bound
            context = {**(getattr(tok, "special_tokens_map", None) or {}), "tools": None,
                       "documents": None, "add_generation_prompt": True, "messages": messages}
            text = render_chat(own, "auto" if template is None else "FILE", context)
        else:  # none at all: transformers says so
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return list(tok(text + "(", add_special_tokens=False)["input_ids"])
    return list(tok(plain_letter_prompt(question, instruction), add_special_tokens=True)["input_ids"])


def letter_logprobs(loaded: Any, questions: Sequence[str], options: Sequence[Mapping[str, str]],
                    *, instruction: str, use_chat_template: bool | str | None,
                    batch_size: int) -> list[dict[str, float]]:
    """Per question, letter → log-probability of that letter as the next token (the letters
    are `options`' keys; their texts are in the question already). `use_chat_template`:
    None: the tokenizer's template where it has one; a str: that Jinja template."""
    import torch

    from kgprobe.models.encoding import PromptEncoder

    tok = loaded.tokenizer
    template = use_chat_template if isinstance(use_chat_template, str) else None
    use_chat = (bool(getattr(tok, "chat_template", None)) if use_chat_template is None
                else bool(use_chat_template))
    encoder = PromptEncoder(tok)
    letter_id = {chr(c): encoder.encode_text(chr(c), "glued")[0] for c in range(ord("a"), ord("z") + 1)}
    contexts = [letter_context(tok, q, instruction, use_chat, template) for q in questions]
    out: list[dict[str, float]] = []
    with torch.no_grad():
        for start in range(0, len(contexts), batch_size):
            batch = contexts[start : start + batch_size]
            lp = torch.log_softmax(loaded.next_token_logits(batch), dim=-1).cpu()
            for b in range(len(batch)):
                out.append({l: float(lp[b, letter_id[l]]) for l in options[start + b]})
    return out
