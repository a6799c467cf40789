"""Is a directory a store, and is the store whole? (`kg check`, and every open of a store.)

Why a check before RocksDB sees the directory: opened for writing, RocksDB creates a database
wherever it finds no ``CURRENT`` file, and then deletes the table files its new, empty
manifest does not list. A store whose ``CURRENT`` was lost (and its write-ahead log with it)
was silently replaced by an empty one, and a directory of unrelated files got a store
written into it. So a directory is opened only when it is absent or empty (a new store) or
its ``CURRENT`` names an existing manifest; missing table files are RocksDB's own refusal
(it opens every table file the manifest lists), which `opening_error` turns into one line.

`kgprobe kg check` (kg/check.py) starts from the same checks.
"""

from __future__ import annotations

from pathlib import Path

from kgprobe.errors import StoreError
from kgprobe.kg.lock import LOCK_NAME

#: RocksDB's own files: a directory holding any of them without ``CURRENT`` is a damaged store
_ROCKSDB_NAMES = ("IDENTITY", "LOCK", "LOG")
#: what the bulk loader writes before ingesting; left behind only by a failed load
BULK_GLOB = "bulk-*.sst"
_RESTORE = ("restore the directory from a backup, or rebuild it with `kgprobe kg load` into a "
            "new --store; it is left as it is")


class DamagedStoreError(StoreError):
    """The directory holds a damaged store, or files that are not a store."""


def _names(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name != LOCK_NAME)


def _rocksdb_file(name: str) -> bool:
    return (name in _ROCKSDB_NAMES or name.startswith(("MANIFEST-", "OPTIONS-", "LOG."))
            or name.endswith((".sst", ".log", ".blob")))


def is_new(path: Path) -> bool:
    """No store yet: the directory is absent or holds nothing but kgprobe's lock file."""
    return not path.exists() or (path.is_dir() and not _names(path))


def layout_problem(path: Path) -> str | None:
    """Why the files in `path` do not form a store RocksDB may open; None if they do (or if
    there is no store yet: `is_new`)."""
    if not path.exists():
        return None
    if not path.is_dir():
        return f"{path}: not a directory; pass a store directory as --store"
    names = _names(path)
    if not names:
        return None
    current = path / "CURRENT"
    if not current.is_file():
        if any(_rocksdb_file(n) for n in names):
            return (f"{path}: damaged store: its CURRENT file is missing (RocksDB would start "
                    f"an empty store over the remaining data); {_RESTORE}")
        shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
        return (f"{path}: not a store (it holds {shown}); pass a new or empty directory as "
                "--store")
    try:
        manifest = current.read_text(encoding="ascii", errors="replace").strip()
    except OSError as err:
        return f"{path}: damaged store: CURRENT cannot be read ({err.strerror}); {_RESTORE}"
    if not manifest.startswith("MANIFEST-") or "/" in manifest:
        return f"{path}: damaged store: CURRENT does not name a manifest; {_RESTORE}"
    if not (path / manifest).is_file():
        return f"{path}: damaged store: {manifest}, which CURRENT names, is missing; {_RESTORE}"
    return None


def require_layout(path: Path) -> None:
    """Refuse (one line) a directory whose files do not form a store, before anything opens
    it: `layout_problem`."""
    problem = layout_problem(Path(path))
    if problem is not None:
        raise DamagedStoreError(problem)


def require_openable(path: Path) -> None:
    """`require_layout`, then open the store read-only once and close it: for a process that
    hands the directory to another program (the Oxigraph server of `kg serve`), whose own
    refusal of a damaged store would be a panic's last line."""
    import pyoxigraph as ox

    require_layout(path)
    if is_new(Path(path)):
        return
    try:
        ox.Store.read_only(str(path))
    except RuntimeError as err:
        raise opening_error(path, err) from None
    except OSError:
        pass  # not damage: the caller's own open reports it


def opening_error(path: Path, err: BaseException) -> DamagedStoreError:
    """RocksDB's refusal to open a store (a table file the manifest lists is missing or
    corrupt: pyoxigraph raises RuntimeError "Corruption: …") as one line."""
    text = " ".join(str(err).split())[:200]
    return DamagedStoreError(f"{path}: damaged store ({text}); `kgprobe kg check --store "
                             f"{path}` lists what is wrong; {_RESTORE}")


def remove_bulk_leftovers(path: Path) -> list[Path]:
    """Delete the table files a failed bulk load wrote but never ingested. Only a process
    holding the writer lock may call it: nobody else is bulk-loading then."""
    removed = []
    for leftover in Path(path).glob(BULK_GLOB):
        leftover.unlink(missing_ok=True)
        removed.append(leftover)
    return removed


def flush_now(store, path: Path | None) -> None:
    """Write what was just committed into the table files at once, not at `close`: a big
    transaction lives in RocksDB's log until then, and a process stopped in between (the
    memory guard, `kill`) left that log for every reader to replay (a 500,000-triple
    inferred graph: 60 s and 1.2 GB per read; tests/test_reason_bound.py). A failed flush
    (disk full) is `close`'s to report."""
    if path is not None:
        try:
            store.flush()
        except OSError:
            pass
