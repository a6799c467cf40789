"""Candidate scoring with causal (decoder-only) language models.

The candidate fills the ``[MASK]`` slot and is scored by the log-probability of the
sentence from the slot on, given the text before it (the standard cloze score for a decoder,
as in lm-pub-quiz and minicons)::

    score(c) = pool_t log P(c_t | prefix, c_<t)   [ + sum_s log P(suffix_s | prefix, c, suffix_<s) ]

with pooling ``sum`` (default: the candidate's log-probability), ``mean``, ``first`` or
``max`` over the candidate's tokens. The suffix term, the total log-probability of the text
after the slot (a fixed string, so it measures how well the candidate fits what follows), is
added where that text holds more than punctuation (``include_suffix="auto"``, the default;
the rule is `models.cloze`; True / False: always / never); pseudoword positions in the
suffix are inputs, never targets.

Token ids: prefix, candidate and suffix are tokenised separately (see `encoding`) and
concatenated: ``front specials [+ chat header, `models.chat`] + prefix | candidate | suffix``. If that leaves nothing
before the candidate, the tokenizer's BOS (else EOS) token is used as the context.

Prefix sharing (token trie, the default without gradients): the candidates' continuations
(candidate ids, plus the suffix ids where the suffix is scored) are sorted by their ids and
taken `batch_size` at a time, fewer where the trie would pass `trie.MAX_NODES` nodes (a
scored suffix follows each candidate, so it adds its length in nodes per candidate). The
inputs of one such chunk (each continuation minus its last token) are merged into a token
trie, so candidates that start with the same tokens
share those positions, and ONE forward pass runs the packed sequence
``prefix + trie nodes`` with a tree attention mask: a node attends to the prefix and its
own ancestors only, and its position id is its position in its own full sequence
(prefix length - 1 + depth). Token t of a continuation is scored from the logits of the
prefix's last position (t = 0) or of the node holding its first t tokens, so every
distinct token prefix is computed once per chunk, and only the prefix's last position
and the nodes go through the LM head (``logits_to_keep``). Sliding-window layers (Gemma,
Qwen2 ``layer_types``) get their own mask, windowed by those positions. On TP (~790 class
labels, 1516 candidate tokens with SmolLM2's tokenizer) the trie holds 575 nodes per prompt.

A one-time check per scorer compares the tree pass with plain forwards on a few tokens;
architectures that fail it (custom 4-D masks or position ids ignored), and sliding-window
models without ``layer_types`` whose window is shorter than the sequence, use the cached
path instead: the prefix runs once with ``use_cache=True``, its `DynamicCache` is
deep-copied and expanded over a batch of candidates (`Cache.batch_repeat_interleave`),
and only the candidates' (right-padded) tokens run on top of it. Right padding needs no
attention mask under causal attention: padded tokens come after every scored position.
With gradients enabled (pseudoword training) full sequences are scored, batch-wise.
Every path equals scoring each full sequence separately up to float round-off (tested
to 1e-4).

`CausalScorer.stats` counts forward passes, positions run and positions that went
through the LM head (for throughput and FLOP accounting, e.g. ``bench/scoring.py``).
"""

from __future__ import annotations

import copy
import inspect
from typing import Mapping, Sequence

import torch
from kgprobe.errors import ModelError
from kgprobe.models.cloze import AUTO, RULE, SUFFIX_MODES, uses_suffix
from kgprobe.models.encoding import (
    Encoded,
    PromptEncoder,
    TensorScorer,
    inject,
    pool_logprobs,
    split_prompt,
)
from kgprobe.models.language_model import LanguageModel
from kgprobe.models.tree_batch import score_tree_batch
from kgprobe.models.trie import (
    MAX_NODES,
    CandidateTrie,
    additive_mask,
    chunk_order,
    tree_layout,
    trie_indices,
)

__all__ = ["CausalScorer"]

_FULL, _SLIDING = "full_attention", "sliding_attention"


class CausalScorer(TensorScorer):
    """Scores candidates as continuations of the prompt's text before ``[MASK]``."""

    def __init__(
        self,
        loaded: LanguageModel,
        *,
        pooling: str = "sum",
        include_suffix: bool | str = AUTO,
        share_prefix: bool = True,
        chat=None,
    ):
        if include_suffix not in SUFFIX_MODES or not isinstance(include_suffix, (bool, str)):
            raise ModelError(f"include_suffix={include_suffix!r}; use 'auto', True or False")
        self.loaded = loaded
        self.pooling = pooling
        #: ``"auto"``: score the text after the slot where it holds more than punctuation
        #: (`models.cloze`); True / False: always / never.
        self.include_suffix = include_suffix
        self.suffix_rule = RULE if include_suffix == AUTO else None
        self.share_prefix = share_prefix
        self.chat = chat  # `models.chat.ChatWrap`: its header joins the shared prefix
        tok = loaded.tokenizer
        self.encoder = PromptEncoder(tok)
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.start_id = int(start) if start is not None else None
        self._tree_ok: bool | None = None  # set by the first tree pass (see `_tree_supported`)
        #: Prompts that share their continuations run through the trie together
        #: (`models.tree_batch`); False scores them one at a time (the reference, and `bench`).
        self.batch_prompts = True
        #: Work done so far: forward passes, positions run, positions through the LM head.
        self.stats = {"forwards": 0, "positions": 0, "logit_positions": 0}

    @property
    def name(self) -> str:
        return self.loaded.name

    # ------------------------------------------------------------------
    def encode(
        self, prompt: str, candidates: Sequence[str], vectors: Mapping[str, torch.Tensor] | None = None
    ) -> tuple[Encoded, list[list[int]], Encoded]:
        """(prefix incl. specials, candidate ids, suffix) exactly as `score` uses them."""
        enc = self.encoder
        prefix, suffix = split_prompt(prompt, list(vectors) if vectors else ())
        pre, at_start, space = enc.encode_pieces(prefix, at_start=True, space_before=False)
        suf, _, _ = enc.encode_pieces(suffix, at_start=False, space_before=False)
        head = Encoded(list(enc.front), [])
        if self.chat is not None:  # the conversation's ids, then the statement from its start
            text = self.chat.header(self.loaded.tokenizer, prompt)
            head = enc.encode_verbatim(text, list(vectors) if vectors else (), front=True)
        ids = head.ids + pre.ids
        slots = head.slots + pre.shifted(len(head.ids))
        if not ids:
            if self.start_id is None:
                raise ModelError(
                    f"prompt {prompt!r} has no text before [MASK] and model '{self.name}' has no BOS/EOS token "
                    "to condition on; put text before the slot"
                )
            ids = [self.start_id]
        mode = enc.candidate_mode(at_start, space)
        cands = [enc.encode_candidate(c, mode, self.name) for c in candidates]
        return Encoded(ids, slots), cands, suf

    # ------------------------------------------------------------------
    def _score_tensor(self, prompts: Sequence[str], candidates: Sequence[str],
                      per_prompt: list | None, batch_size: int) -> torch.Tensor:
        # With gradients it runs full sequences: a cache holding graph tensors cannot be copied.
        rows: list[torch.Tensor | None] = [None] * len(prompts)
        trees: dict[tuple, list[tuple[int, Encoded, dict]]] = {}  # continuations → prompts
        for i, prompt in enumerate(prompts):
            vectors = per_prompt[i] if per_prompt else {}
            prefix, cands, suffix = self.encode(prompt, candidates, vectors)
            with_suffix = uses_suffix(self.include_suffix, prompt)
            conts = []
            for c in cands:
                if with_suffix:
                    targets = [1] * len(c) + [2] * len(suffix.ids)
                    for pos, _ in suffix.slots:
                        targets[len(c) + pos] = 0
                    conts.append((c + suffix.ids, suffix.shifted(len(c)), targets, len(c)))
                else:
                    conts.append((c, [], [1] * len(c), len(c)))
            if self.share_prefix and not torch.is_grad_enabled():
                span = len(prefix.ids) + max(len(c[0]) for c in conts) - 1
                if self._mask_kind(span) is not None and self._tree_supported():
                    if self.batch_prompts:  # scored below, with every prompt sharing `conts`
                        key = tuple((tuple(c[0]), tuple(c[1]), tuple(c[2]), c[3]) for c in conts)
                        trees.setdefault(key, []).append((i, prefix, vectors))
                    else:
                        rows[i] = self._score_tree(prefix, conts, vectors, batch_size)
                else:
                    rows[i] = self._score_shared(prefix, conts, vectors, batch_size)
            else:
                rows[i] = self._score_full(prefix, conts, vectors, batch_size)
        for key, group in trees.items():
            conts = [(list(a), list(b), list(c), n) for a, b, c, n in key]
            scores = score_tree_batch(self, [g[1] for g in group], conts, [g[2] for g in group], batch_size)
            for (i, _, _), row in zip(group, scores):
                rows[i] = row
        if not rows:
            return torch.zeros((0, len(candidates)), device=self._device())
        return torch.stack(rows)

    # ------------------------------------------------------------------
    def _device(self):
        return next(self.loaded.model.parameters()).device

    def _inputs(self, rows: list[list[int]], slots: list[list[tuple[int, str]]], vectors) -> dict:
        """Right-padded batch as input_ids, or inputs_embeds when pseudowords occur."""
        device = self._device()
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.encoder.placeholder, dtype=torch.long)
        for b, r in enumerate(rows):
            ids[b, : len(r)] = torch.tensor(r, dtype=torch.long)
        ids = ids.to(device)
        if any(slots):
            embeds = self.loaded.model.get_input_embeddings()(ids)
            for b, s in enumerate(slots):
                if s:
                    inject(embeds, b, s, vectors)
            return {"inputs_embeds": embeds}
        return {"input_ids": ids}

    def _pool(self, token_lp: torch.Tensor, conts) -> torch.Tensor:
        """token_lp [B, W]: log-prob of continuation token t; pool candidate part, add suffix."""
        device = token_lp.device
        cand_len = torch.tensor([n for *_rest, n in conts], device=device)
        cand_width = int(cand_len.max())
        pooled = pool_logprobs(token_lp[:, :cand_width], cand_len, self.pooling)
        if any(len(targets) > n for _ids, _slots, targets, n in conts):  # a scored suffix
            kinds = torch.zeros(token_lp.shape, dtype=torch.long, device=device)
            for b, (_ids, _slots, targets, _n) in enumerate(conts):
                kinds[b, : len(targets)] = torch.tensor(targets, device=device)
            pooled = pooled + token_lp.masked_fill(kinds != 2, 0.0).sum(dim=1)
        return pooled

    def _score_shared(self, prefix: Encoded, conts, vectors, batch_size: int) -> torch.Tensor:
        model = self.loaded.model
        out = model(**self._inputs([prefix.ids], [prefix.slots], vectors), use_cache=True)
        self._count(len(prefix.ids), len(prefix.ids))
        last = out.logits[0, -1].float()
        first_lp = last - torch.logsumexp(last, dim=-1)
        cache = out.past_key_values
        del out
        if not hasattr(cache, "batch_repeat_interleave"):  # not a transformers Cache: no sharing
            return self._score_full(prefix, conts, vectors, batch_size)
        result = torch.zeros(len(conts), device=first_lp.device)
        order = sorted(range(len(conts)), key=lambda k: len(conts[k][0]))
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            batch = [conts[k] for k in idx]
            width = max(len(c[0]) for c in batch)
            token_lp = torch.zeros((len(batch), width), device=first_lp.device)
            token_lp[:, 0] = first_lp[torch.tensor([c[0][0] for c in batch], device=first_lp.device)]
            if width > 1:
                rows = [c[0][:-1] for c in batch]
                slots = [[(p, n) for p, n in c[1] if p < len(c[0]) - 1] for c in batch]
                past = copy.deepcopy(cache)
                past.batch_repeat_interleave(len(batch))
                logits = model(**self._inputs(rows, slots, vectors), past_key_values=past, use_cache=True).logits.float()
                self._count(len(batch) * (width - 1), len(batch) * (width - 1))
                del past
                token_lp[:, 1:] = _gather_logprobs(logits, batch, offset=1)
            result[torch.tensor(idx, device=result.device)] = self._pool(token_lp, batch)
        return result

    # ------------------------------------------------------------------ token-trie path
    def _count(self, positions: int, logit_positions: int) -> None:
        self.stats["forwards"] += 1
        self.stats["positions"] += positions
        self.stats["logit_positions"] += logit_positions

    def _mask_kind(self, span: int) -> str | None:
        """Which tree masks a sequence of `span` positions needs: ``"full"`` (one mask for all
        layers), ``"layers"`` (full and sliding masks by layer type) or None (unsupported)."""
        config = self.loaded.model.config
        window = getattr(config, "sliding_window", None)
        if not window or span <= int(window):  # the window never cuts anything off
            return "full"
        types = set(getattr(config, "layer_types", None) or ())
        return "layers" if types and types <= {_FULL, _SLIDING} else None

    def _tree_logits(self, prefix: Encoded, trie: CandidateTrie, vectors) -> torch.Tensor:
        """One forward over ``prefix + trie nodes``; float32 logits of the prefix's last
        position (row 0) and of every node (row 1 + node)."""
        model = self.loaded.model
        device = self._device()
        n_prefix, n = len(prefix.ids), len(trie.tok)
        pos, allowed = tree_layout(n_prefix, trie.parent, trie.depth)
        dtype = model.get_input_embeddings().weight.dtype
        full = additive_mask(allowed, dtype, device)
        kind = self._mask_kind(int(pos.max()) + 1)
        if kind == "layers":
            window = int(model.config.sliding_window)
            sliding = allowed & ((pos.unsqueeze(1) - pos.unsqueeze(0)) < window)
            masks = {_FULL: full, _SLIDING: additive_mask(sliding, dtype, device)}
        elif kind == "full":
            masks = full
        else:
            raise ModelError(f"model '{self.name}': no tree attention mask for a sliding window shorter than the prompt")
        slots = prefix.slots + [(n_prefix + i, name) for i, name in enumerate(trie.slot) if name is not None]
        inputs = self._inputs([prefix.ids + trie.tok], [slots], vectors)
        kwargs = {"attention_mask": masks, "position_ids": pos.unsqueeze(0).to(device), "use_cache": False}
        if self._takes_logits_to_keep():
            kwargs["logits_to_keep"] = n + 1
        logits = model(**inputs, **kwargs).logits[0, -(n + 1) :].float()
        self._count(n_prefix + n, logits.shape[0] if "logits_to_keep" in kwargs else n_prefix + n)
        return logits

    def _max_nodes(self) -> int:
        """The trie size of one forward on this model's device (`trie.MAX_NODES`)."""
        return MAX_NODES.get(torch.device(self._device()).type, MAX_NODES["cpu"])

    def _takes_logits_to_keep(self) -> bool:
        try:
            return "logits_to_keep" in inspect.signature(self.loaded.model.forward).parameters
        except (TypeError, ValueError):
            return False

    def _tree_supported(self) -> bool:
        """Whether this model honours a custom 4-D mask with position ids (checked once)."""
        if self._tree_ok is None:
            self._tree_ok = self._check_tree()
        return self._tree_ok

    def _check_tree(self) -> bool:
        model = self.loaded.model
        vocab = model.get_input_embeddings().weight.shape[0]
        a, b, c, d, e = [(37 * k + 11) % vocab for k in range(1, 6)]
        trie = CandidateTrie()
        trie.add([c, 0], []), trie.add([d, e, 0], [])  # nodes: c and d after the prefix, e after d
        saved = dict(self.stats)
        try:
            with torch.no_grad():
                got = self._tree_logits(Encoded([a, b], []), trie, {})
                one = model(input_ids=torch.tensor([[a, b, c]], device=self._device())).logits[0, -2:]
                two = model(input_ids=torch.tensor([[a, b, d, e]], device=self._device())).logits[0, -2:]
        except Exception:  # noqa: BLE001 - any failure means: use the cached path
            return False
        finally:
            self.stats = saved
        expected = torch.cat([one, two]).float()
        # An ignored mask moves log-probs by whole units, kernel order by a few dtype steps.
        tol = max(1e-3, 8 * torch.finfo(model.get_input_embeddings().weight.dtype).eps)
        return bool(torch.allclose(torch.log_softmax(got, -1), torch.log_softmax(expected, -1), atol=tol, rtol=tol))

    def _score_tree(self, prefix: Encoded, conts, vectors, batch_size: int) -> torch.Tensor:
        device = self._device()
        result = torch.zeros(len(conts), device=device)
        for idx in chunk_order(conts, batch_size, self._max_nodes()):
            batch = [conts[k] for k in idx]
            trie = CandidateTrie()
            rows = [trie.add(c[0], c[1]) for c in batch]
            logits = self._tree_logits(prefix, trie, vectors)
            lse = torch.logsumexp(logits, dim=-1)
            row_idx, tok_idx, lengths = trie_indices(batch, rows, device)
            width = row_idx.shape[1]
            token_lp = logits[row_idx, tok_idx] - lse[row_idx]
            valid = torch.arange(width, device=device).unsqueeze(0) < lengths.unsqueeze(1)
            token_lp = token_lp.masked_fill(~valid, 0.0)
            result[torch.tensor(idx, device=device)] = self._pool(token_lp, batch)
        return result

    def _score_full(self, prefix: Encoded, conts, vectors, batch_size: int) -> torch.Tensor:
        """Path without cache: each row is prefix + continuation (minus its last token)."""
        model = self.loaded.model
        p = len(prefix.ids)
        parts = []
        for b in range(0, len(conts), batch_size):
            batch = conts[b : b + batch_size]
            rows = [prefix.ids + c[0][:-1] for c in batch]
            slots = [prefix.slots + [(p + q, n) for q, n in c[1] if q < len(c[0]) - 1] for c in batch]
            logits = model(**self._inputs(rows, slots, vectors)).logits[:, p - 1 :].float()
            width = max(len(r) for r in rows)
            self._count(len(rows) * width, len(rows) * width)
            parts.append(self._pool(_gather_logprobs(logits, batch, offset=0), batch))
        return torch.cat(parts)


def _gather_logprobs(logits: torch.Tensor, batch, *, offset: int) -> torch.Tensor:
    """log P(cont[t]) from ``logits[:, t - offset]`` for t in [offset, width); zeros past each row's end."""
    width = max(len(c[0]) for c in batch)
    n = width - offset
    targets = torch.zeros((len(batch), n), dtype=torch.long, device=logits.device)
    for b, c in enumerate(batch):
        seq = c[0][offset:]
        targets[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    logits = logits[:, :n]
    lp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    valid = torch.arange(n, device=logits.device).unsqueeze(0) < torch.tensor(
        [len(c[0]) - offset for c in batch], device=logits.device
    ).unsqueeze(1)
    return lp.masked_fill(~valid, 0.0)


def last_token_logits(model, rows: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Float32 logits [B, V] at each row's last token: the rows are right-padded into one
    batch (causal attention never looks at pads after a row) and, when the model takes
    ``logits_to_keep``, only those positions go through the LM head (262k words for Gemma)."""
    device = next(model.parameters()).device
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    ids = ids.to(device)
    last = torch.tensor([[len(r) - 1] for r in rows], device=device)
    try:
        if "logits_to_keep" in inspect.signature(model.forward).parameters:
            return model(input_ids=ids, logits_to_keep=last).logits[:, 0].float()
        return model(input_ids=ids).logits[torch.arange(len(rows), device=device), last[:, 0]].float()
    except IndexError:
        config = getattr(model, "config", None)
        limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
        if isinstance(limit, int) and width > limit:  # past a learned position table
            raise ModelError(f"a prompt needs {width} tokens but the model takes at most {limit}; "
                             "use a model with a longer context or shorter prompts") from None
        raise
