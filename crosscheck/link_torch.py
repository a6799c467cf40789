"""Give .venv-openprompt the torch of .venv when it is the pinned build (torch==2.13.0).

Run with .venv's Python: `python crosscheck/link_torch.py .venv-openprompt 2.13.0`. The torch
wheel unpacks to about 700 MB, which took two of the cross-check's three minutes to install
again; the very same build is already in .venv, so its top-level packages are linked into the
other environment's site-packages. Exit status 1 (nothing linked) when .venv's torch is another
version: the Makefile then installs torch==2.13.0 itself. torch's own dependencies are pinned in
requirements-openprompt.txt.
"""

import os
import sys
from importlib import metadata
from pathlib import Path


def main() -> int:
    venv, version = Path(sys.argv[1]), sys.argv[2]
    dist = metadata.distribution("torch")
    if dist.version.split("+")[0] != version:
        print(f"torch {dist.version} in this environment, not {version}: install it instead")
        return 1
    base = Path(dist.locate_file(""))
    tops = {Path(str(f)).parts[0] for f in dist.files or []}
    tops = {t for t in tops if t not in ("..", "bin") and (base / t).exists()}
    sites = list(venv.glob("lib/python*/site-packages"))
    if len(sites) != 1:
        print(f"{venv}: no single lib/python*/site-packages")
        return 1
    for top in sorted(tops):
        link = sites[0] / top
        if not link.exists():
            link.symlink_to(os.path.relpath(base / top, sites[0]))  # survives moving the clone
    print(f"linked torch {dist.version} ({', '.join(sorted(tops))}) into {sites[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
