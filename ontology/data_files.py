"""The TOML data files kgprobe ships (templates, the exclusion list) and users replace: where
the bundled one lives, and reading one with a one-line error naming the file and the fix."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from kgprobe.errors import KgprobeError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def bundled_data_file(name: str) -> Path:
    """A data file shipped in `kgprobe/ontology/` (``templates.toml``, ``excluded_terms.toml``)."""
    return Path(str(resources.files("kgprobe.ontology") / name))


def read_toml(path: Path, error: type[KgprobeError], what: str, bundled: str) -> dict:
    """`path` parsed; a missing or malformed file raises `error` (`what` names the kind of
    file, `bundled` the shipped one a replacement is laid out like)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {what} not found; give a TOML file laid out like {bundled}") from None
    except (IsADirectoryError, NotADirectoryError):
        raise error(f"{path}: not a file; give the {what} as a TOML file laid out like "
                    f"{bundled}") from None
    except tomllib.TOMLDecodeError as err:
        raise error(f"{path}: not valid TOML ({err}); fix the {what}") from None
