"""The documentation builds as a site with MkDocs without a single warning: every page is in
the nav, every link between pages and every anchor resolves (`mkdocs.yml` turns each of those
into a warning, and `--strict` into a failure)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(tmp_path: Path, edit=None) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of a copy of the docs, so the checkout is left as it is."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    if edit:
        edit(tmp_path / "docs")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_the_docs_build_without_warnings(tmp_path):
    proc = build(tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert not [line for line in output.splitlines() if "WARNING" in line], output
    pages = sorted(p.stem for p in (REPO / "docs").glob("*.md"))
    assert len(pages) >= 15
    for page in pages:  # every page became part of the site
        built = tmp_path / "site" / ("index.html" if page == "index" else f"{page}/index.html")
        assert built.exists(), page


def test_a_broken_link_or_an_unlisted_page_fails_the_build(tmp_path):
    def broken(docs: Path) -> None:
        with open(docs / "store.md", "a", encoding="utf-8") as fh:
            fh.write("\nSee [nowhere](nowhere.md).\n")
        (docs / "orphan.md").write_text("# Not in the nav\n", encoding="utf-8")

    proc = build(tmp_path, broken)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "nowhere.md" in output and "orphan.md" in output
