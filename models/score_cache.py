"""A persistent cache of candidate scores, shared by every study and run of a model.

Scoring a prompt against ~800 candidates is the expensive step of every ranking study, and
the same prompt comes back often: premise classification scores memorizing probes that the
memorization study scores again, a rerun into a new folder scores everything again, the
premise-ablation cells share prompts across settings. `CachedScorer` wraps a model's `Scorer`
and keeps each prompt's score row in one sqlite file in the user cache directory, so no
prompt is scored twice by the same model with the same settings.

A row is served only when everything that decides it is equal (`ScoreKey`):

* the model's identity and revision: its source (path or hub id), the hub commit when there
  is one, and a hash of its weight and config files (so re-converted or retrained weights in
  the same folder miss);
* the weights' dtype (a bfloat16 run never reads a float32 row); the device is not part of
  the key (the same dtype on cpu and cuda differs only by float round-off);
* the scorer's settings (class, pooling, masks, suffix, prefix sharing);
* the exact prompt text, the exact candidate list (order included) and the bytes of the
  pseudoword vectors the prompt uses (slots it does not contain do not change its scores).

The batch size is not part of the key: it decides only how the work is chunked.

Location: ``$KGPROBE_CACHE_DIR/scores.sqlite`` if set, else ``$KGPROBE_CACHE/scores.sqlite``,
else ``~/.cache/kgprobe/scores.sqlite``. `kgprobe cache stats` and `kgprobe cache clear`
inspect and empty it; the studies' ``--no-cache`` bypasses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from kgprobe.cache_home import cache_dir

__all__ = ["CachedScorer", "ScoreCache", "cache_dir", "cached_scorer", "model_identity"]

#: Bump to invalidate every stored row (a change in how scores are computed).
SCHEMA = 1
#: Files whose bytes define a model directory's weights and behaviour.
_MODEL_FILES = (".safetensors", ".bin", ".json", ".model", ".gguf", ".txt")


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _file_hash(path: Path, memo: dict) -> str:
    """SHA-256 of a file, memoised by (path, size, mtime) in the cache's `files` table."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in memo:
        return memo[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    memo[key] = h.hexdigest()
    return memo[key]


def model_identity(loaded: Any, memo: dict | None = None) -> dict:
    """What identifies a loaded model's weights: source, hub revision, file hashes, dtype."""
    memo = {} if memo is None else memo
    served = getattr(loaded, "cache_identity", None)
    if callable(served):  # a served model: its server's model id and revision (models.served)
        return served()
    source = str(getattr(loaded, "source", None) or getattr(loaded, "name", ""))
    config = getattr(getattr(loaded, "model", None), "config", None)
    revision = getattr(config, "_commit_hash", None)
    files = {}
    path = Path(source)
    if path.is_dir():
        for f in sorted(path.iterdir()):
            if f.is_file() and f.name.endswith(_MODEL_FILES):
                files[f.name] = _file_hash(f, memo)
    elif path.is_file():
        files[path.name] = _file_hash(path, memo)
    params = next(loaded.model.parameters())
    return {"source": source, "revision": revision, "files": files, "dtype": str(params.dtype),
            "kind": getattr(loaded, "kind", "")}


def scorer_settings(scorer: Any) -> dict:
    """The settings of a model scorer that decide its numbers."""
    out = {"class": type(scorer).__name__}
    for attr in ("pooling", "masks", "include_suffix", "suffix_rule", "share_prefix"):
        if hasattr(scorer, attr):
            out[attr] = getattr(scorer, attr)
    chat = getattr(scorer, "chat", None)
    if chat is not None:  # a wrapped prompt's scores are never a bare one's (models.chat)
        out["chat"] = chat.key()
    return out


def _vector_hash(prompt: str, vectors: Mapping | None) -> str:
    """Hash of the pseudoword vectors whose slot occurs in `prompt` (key, dtype, shape, bytes)."""
    from kgprobe.models.encoding import slot_key  # the scorer's own slot naming (torch: lazy)

    h = hashlib.sha256()
    for key in sorted(vectors or {}):
        name = slot_key(key)
        if name not in prompt:
            continue
        vec = vectors[key]
        kind = str(getattr(vec, "dtype", ""))
        arr = vec.detach().cpu().float().contiguous().numpy() if hasattr(vec, "detach") else np.asarray(vec)
        h.update(f"{name}|{kind}|{arr.shape}|".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


@dataclass
class CacheStats:
    rows: int
    models: int
    bytes: int
    path: str


class ScoreCache:
    """The sqlite file of score rows (one row per key, float64 bytes)."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.dir = Path(directory) if directory is not None else cache_dir()
        self.path = self.dir / "scores.sqlite"
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, model TEXT, "
                       "n INTEGER, scores BLOB, created REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT, size INTEGER, mtime INTEGER, "
                       "sha TEXT, PRIMARY KEY (path, size, mtime))")
            db.commit()
            self._db = db
        return self._db

    def file_memo(self) -> dict:
        return {(p, s, m): sha for p, s, m, sha in self._conn().execute("SELECT * FROM files")}

    def save_file_memo(self, memo: dict) -> None:
        db = self._conn()
        db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                       [(p, s, m, sha) for (p, s, m), sha in memo.items()])
        db.commit()

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        db = self._conn()
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in db.execute(f"SELECT key, scores FROM scores WHERE key IN ({marks})", chunk):
                out[key] = np.frombuffer(blob, dtype=np.float64).copy()
        return out

    def put(self, model: str, rows: Mapping[str, np.ndarray]) -> None:
        db = self._conn()
        now = time.time()
        db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?)",
                       [(k, model, len(v), np.ascontiguousarray(v, dtype=np.float64).tobytes(), now)
                        for k, v in rows.items()])
        db.commit()

    def stats(self) -> CacheStats:
        if not self.path.exists():
            return CacheStats(0, 0, 0, str(self.path))
        rows, models = self._conn().execute("SELECT COUNT(*), COUNT(DISTINCT model) FROM scores").fetchone()
        size = sum(p.stat().st_size for p in self.dir.glob("scores.sqlite*"))
        return CacheStats(int(rows), int(models), size, str(self.path))

    def clear(self) -> int:
        """Delete every row; return how many there were."""
        if not self.path.exists():
            return 0
        db = self._conn()
        (n,) = db.execute("SELECT COUNT(*) FROM scores").fetchone()
        db.execute("DELETE FROM scores")
        db.execute("DELETE FROM files")
        db.commit()
        db.execute("VACUUM")
        return int(n)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class CachedScorer:
    """A `Scorer` that serves stored rows and scores only the prompts it has not seen.

    Everything else (``stats``, ``encode``) is the wrapped scorer's own: only `score` (no
    gradients) reads and writes the cache; code that needs gradients asks `uncached`.
    """

    def __init__(self, scorer: Any, loaded: Any, cache: ScoreCache | None = None):
        self.inner = scorer
        self.cache = cache or ScoreCache()
        memo = self.cache.file_memo()
        identity = model_identity(loaded, memo)
        self.cache.save_file_memo(memo)
        self.model_key = _sha(json.dumps({"schema": SCHEMA, "model": identity,
                                          "scorer": scorer_settings(scorer)}, sort_keys=True))
        self.model_name = str(getattr(loaded, "name", ""))
        #: Prompts served from the cache and prompts scored, over this scorer's life.
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attr: str):  # stats, score_tensor, encode, loaded, …
        if attr == "inner":  # not set yet (copy, pickle): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def keys(self, prompts: Sequence[str], candidates: Sequence[str], per_prompt) -> list[str]:
        cands = _sha(json.dumps(list(candidates)))
        return [_sha(json.dumps([self.model_key, cands, p,
                                 _vector_hash(p, per_prompt[i] if per_prompt else None)]))
                for i, p in enumerate(prompts)]

    def score(self, prompts: Sequence[str], candidates: Sequence[str], *, pseudowords=None,
              batch_size: int = 32) -> np.ndarray:
        per_prompt = None
        if pseudowords is not None:
            per_prompt = [pseudowords] * len(prompts) if isinstance(pseudowords, Mapping) else list(pseudowords)
        keys = self.keys(prompts, candidates, per_prompt)
        found = self.cache.get(list(dict.fromkeys(keys)))
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            if k not in found:
                first.setdefault(k, i)  # a prompt repeated in one call is scored once
        todo = list(first.values())
        self.hits += len(prompts) - len(todo)
        self.misses += len(todo)
        if todo:
            fresh = self.inner.score([prompts[i] for i in todo], candidates,
                                     pseudowords=[per_prompt[i] for i in todo] if per_prompt else None,
                                     batch_size=batch_size)
            rows = {keys[i]: row for i, row in zip(todo, fresh)}
            self.cache.put(self.model_name, rows)
            found.update(rows)
        if not prompts:
            return np.zeros((0, len(candidates)))
        return np.stack([found[k] for k in keys]).astype(np.float64)


def uncached(scorer: Any) -> Any:
    """The model's own scorer behind a `CachedScorer` (or `scorer` itself): what needs
    gradients (soft-prompt training's ``score_tensor``) asks it, never the cache."""
    return scorer.inner if isinstance(scorer, CachedScorer) else scorer


def cached_scorer(scorer: Any, loaded: Any, *, enabled: bool = True) -> Any:
    """`scorer` behind the persistent cache, or unchanged when `enabled` is false or the model
    keeps no cache (`caches_scores`: a baseline, cheaper to compute than to look up, whose
    numbers no model identity key holds)."""
    return CachedScorer(scorer, loaded) if enabled and getattr(loaded, "caches_scores", True) else scorer
