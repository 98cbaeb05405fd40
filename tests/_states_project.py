"""A small temp project whose headless run holds every finished cell state (issue 42): a
TileLang kernel with wrong maths (a finding on ``c``; built, not run on ``cuda`` without a
GPU), a kernel file with no check (built, not compared), a probe that raises (could not be
examined), one that skips and one that passes. One real run writes every output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

STORY_PROBES = '''\
from laya_tui import probe


@probe("story")
def raises(ctx):
    raise RuntimeError("a bug in this probe, not in the subject")


@probe("story")
def needs_thing(ctx):
    ctx.skip("thing is not installed: pip install thing")


@probe("story")
def fine(ctx):
    pass
'''


def make_project(tmp: Path) -> Path:
    """The project folder: ``kernels/`` with the two TileLang files, ``story_probes.py``."""
    (tmp / "kernels").mkdir(parents=True)
    shutil.copy(FIXTURES / "wrong_output" / "wrong.py", tmp / "kernels" / "wrong.py")
    shutil.copy(FIXTURES / "own_checks" / "no_check.py", tmp / "kernels" / "no_check.py")
    (tmp / "story_probes.py").write_text(STORY_PROBES)
    return tmp


def run_headless(tmp: Path, *extra: str) -> dict[str, Any]:
    """Run laya-tui headless on the project with every output; the outputs read back."""
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--jobs", "2", "--probes",
         str(ROOT / "probes" / "tilelang_matrix.py"), "--probes", "story_probes.py",
         "--kernels", "kernels", "--only", "tilelang/*", "--only", "story/*",
         "--json", "r.json", "--junit", "r.xml", "--markdown", "r.md", "--sarif", "r.sarif",
         "--annotations", "--out", "o", "--cache-dir", "c", *extra],
        cwd=tmp, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(tmp / "s.md")})
    assert (tmp / "r.json").exists(), proc.stderr[-3000:]
    return {"proc": proc, "dir": tmp, "report": json.loads((tmp / "r.json").read_text()),
            "junit": (tmp / "r.xml").read_text(), "markdown": (tmp / "r.md").read_text(),
            "sarif": json.loads((tmp / "r.sarif").read_text()),
            "step_summary": (tmp / "s.md").read_text() if (tmp / "s.md").exists() else ""}
