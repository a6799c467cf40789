"""The README runs as written: every ```bash and ```python block is executed, in order, the way
a newcomer would run it from a fresh clone's root, on the bundled data.

A block may be left out only when an HTML comment right before it says why, e.g.
`<!-- readme-test: skip (model run, ~15 min) -->`; the reason is required, so a skipped block
is a decision a reader can see. Commands run in a sandbox that looks like a clone: a
temporary directory holding links to the repository's files, `shared/` beside it as on the
development machines, `.venv/bin/activate` putting a `kgprobe` that runs this checkout first on
PATH, and the store, `out/` and the score cache inside the sandbox. A comment `# true` or
`# false` after a command is its expected answer, and is checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHARED = REPO.parent / "shared"

RUNNABLE = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "py": "python"}
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*\((?P<reason>[^)]*)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
MARK = "@@README-LINE"


@dataclass
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    skip: str | None  # the reason, when marked to skip


def readme_blocks(text: str) -> list[Block]:
    """Fenced blocks with their language and the skip marker (the last non-blank line before
    the fence, if it is one)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i].strip())
        if not match:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP.search(before)
        blocks.append(Block(match["lang"].lower(), "\n".join(body), start + 1,
                            marker["reason"].strip() if marker else None))
        i += 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in BLOCKS if b.lang in RUNNABLE and b.skip is None]


def logical_lines(code: str) -> list[str]:
    """Shell lines with backslash continuations joined; blank and comment-only lines dropped."""
    out, pending = [], ""
    for raw in code.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if line and not line.startswith("#"):
            out.append(line)
    return out


def expected_answer(line: str) -> str | None:
    """`… # true` / `… # false`: the answer the README promises."""
    match = re.search(r"\s#\s*(true|false)\s*$", line)
    return match.group(1) if match else None


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("readme")
    clone = root / "kgprobe"
    clone.mkdir()
    for entry in REPO.iterdir():
        if entry.name in {".git", ".kgprobe", "out"} or entry.name.startswith(".venv"):
            continue
        (clone / entry.name).symlink_to(entry)
    if SHARED.exists():
        (root / "shared").symlink_to(SHARED)
    venv_bin = clone / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "activate").write_text(
        f'export VIRTUAL_ENV="{clone / ".venv"}"\nexport PATH="$VIRTUAL_ENV/bin:$PATH"\n')
    for name, command in (("kgprobe", f'"{sys.executable}" -m kgprobe.cli'),
                          ("python", f'"{sys.executable}"')):
        shim = venv_bin / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGPROBE_")}
    env["KGPROBE_CACHE_DIR"] = str(root / "score-cache")
    return clone, env


def test_the_readme_is_short_and_has_code_to_run():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    assert any(b.lang in ("bash", "sh") for b in RUN)


def test_every_skipped_block_says_why():
    for block in BLOCKS:
        if block.skip is not None:
            assert len(block.skip) >= 10, f"README line {block.line}: give a reason to skip"
    # the two commands are a 15-minute model run and the suite itself
    make = [b for b in BLOCKS if "make demo" in b.code]
    assert make and all(b.skip for b in make)


@pytest.mark.parametrize("block", RUN, ids=[f"line{b.line}-{b.lang}" for b in RUN])
def test_readme_block_runs_as_written(sandbox, block):
    clone, env = sandbox
    if RUNNABLE[block.lang] == "python":
        script = clone.parent / f"block{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"README line {block.line}:\n{proc.stderr[-3000:]}"
        return
    lines = logical_lines(block.code)
    if any(line.startswith("source .venv/bin/activate") for line in lines):
        # the reader's shell stays activated for the blocks that follow
        env["PATH"] = f"{clone / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    script = "set -e\n" + "".join(f"printf '\\n{MARK} {n}\\n'\n{line}\n"
                                  for n, line in enumerate(lines))
    proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300)
    outputs = dict.fromkeys(range(len(lines)), "")
    for part in proc.stdout.split(f"\n{MARK} ")[1:]:
        number, _, text = part.partition("\n")
        outputs[int(number)] = text
    failed = max((n for n in outputs if f"{MARK} {n}" in proc.stdout), default=0)
    assert proc.returncode == 0, (f"README line {block.line}: `{lines[failed]}` exited "
                                  f"{proc.returncode}:\n{proc.stderr[-3000:]}")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for n, line in enumerate(lines):
        answer = expected_answer(line)
        if answer is not None:
            assert outputs[n].strip().splitlines()[-1] == answer, (line, outputs[n])


def test_every_relative_link_in_the_readme_resolves():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link.split("#")[0] for link in links
                if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert len(relative) >= 5
    missing = [link for link in relative
               if not (REPO / link).exists()]
    assert not missing, missing
