"""The tagger's answers kept on disk, so that a label is tagged once per machine, not once per
command.

Wording an ontology's labels needs spaCy's tagger, and importing spaCy and loading its
pipeline costs about 2.4 s of CPU (measured with `bench/startup.py`), more than everything
else `kg load` does on a small ontology. The tags of a label depend only on the label, how it
is written to the tagger (as written, or with Title Case lowered) and the versions of spaCy
and the pipeline. So they are kept in ``tags.sqlite`` in kgprobe's cache folder
(`kgprobe.cache_home`), keyed by those versions (read from the installed packages' metadata,
without importing spaCy): a command whose labels were all tagged before never imports spaCy,
and an upgrade of either package is a fresh cache, never a stale answer.

The cache is an optimisation only: a folder that cannot be written, or a damaged file, turns it
off for the process and every label is tagged as before.
"""

from __future__ import annotations

import json
import sqlite3
from functools import lru_cache
from typing import Iterable

from kgprobe.cache_home import cache_dir

__all__ = ["TagCache", "tag_cache"]

#: Tags of one label: (word, Penn tag) per token.
Tags = tuple[tuple[str, str], ...]


def tagger_version(pipeline: str) -> str:
    """spaCy's and the pipeline package's installed versions, what tags depend on."""
    from importlib import metadata

    try:
        return (f"spacy {metadata.version('spacy')} "
                f"{pipeline} {metadata.version(pipeline.replace('_', '-'))}")
    except metadata.PackageNotFoundError:
        return ""


class TagCache:
    """Rows (version, key) → tags as JSON; `key` is the label as `wording` keys it."""

    def __init__(self, path, version: str) -> None:
        self.path = path
        self.version = version
        self._db: sqlite3.Connection | None = None
        self.off = not version

    def _conn(self) -> sqlite3.Connection | None:
        if self.off:
            return None
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # a cache: a lost row is retagged
                db.execute("CREATE TABLE IF NOT EXISTS tags (version TEXT, key TEXT, tags TEXT, "
                           "PRIMARY KEY (version, key))")
                db.commit()
            except (OSError, sqlite3.Error):
                self.off = True
                return None
            self._db = db
        return self._db

    def get(self, keys: Iterable[str]) -> dict[str, Tags]:
        """The stored tags of those `keys` that have them."""
        keys = list(keys)
        db = self._conn()
        out: dict[str, Tags] = {}
        if db is None or not keys:
            return out
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = db.execute(f"SELECT key, tags FROM tags WHERE version = ? AND key IN "
                                  f"({','.join('?' * len(chunk))})", [self.version, *chunk])
                out.update((k, tuple(tuple(p) for p in json.loads(t))) for k, t in rows)
        except (sqlite3.Error, ValueError):
            self.off = True
            return {}
        return out

    def put(self, tagged: dict[str, Tags]) -> None:
        """Keep `tagged` (key → tags) for the next command; one transaction."""
        db = self._conn()
        if db is None or not tagged:
            return
        try:
            db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?, ?)",
                           [(self.version, k, json.dumps(v)) for k, v in tagged.items()])
            db.commit()
        except sqlite3.Error:
            self.off = True


@lru_cache(maxsize=None)
def tag_cache(pipeline: str, folder: str) -> TagCache:
    """The cache of `pipeline`'s tags in `folder` (one per process and folder)."""
    from pathlib import Path

    return TagCache(Path(folder) / "tags.sqlite", tagger_version(pipeline))


def current(pipeline: str) -> TagCache:
    """The tag cache in ``$KGPROBE_TAG_CACHE_DIR`` if set (the test suite shares one while
    each test has its own score cache), else in kgprobe's cache folder
    (`cache_home.cache_dir`)."""
    import os

    return tag_cache(pipeline, os.environ.get("KGPROBE_TAG_CACHE_DIR") or str(cache_dir()))
