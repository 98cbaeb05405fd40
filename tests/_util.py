"""Helpers shared by tests: run the real CLI in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
WORKSPACES = FIXTURES / "workspaces"
REPO = Path(__file__).resolve().parents[1]


def copy_workspace(name: str, dest: Path) -> Path:
    """Copy a fixture workspace into ``dest`` and return its path."""
    target = dest / name
    shutil.copytree(WORKSPACES / name, target)
    return target


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m laya_tui.cli ARGS`` and capture its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "laya_tui.cli", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          stdin=subprocess.DEVNULL)
