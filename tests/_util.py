"""Helpers shared by tests: run the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
WORKSPACES = FIXTURES / "workspaces"
REPO = Path(__file__).resolve().parents[1]
#: What the UI/runner process, discovery and params callables must never import.
HEAVY = ("torch", "transformers", "tilelang", "tvm", "mlx", "torch_rbln", "numpy")


def heavy_imports(code: str, *, env: dict[str, str] | None = None) -> list[str]:
    """Run ``code`` in a fresh interpreter; the :data:`HEAVY` modules it left imported."""
    script = (code + "\nimport json as _json, sys as _sys\n"
              f"print(_json.dumps(sorted(h for h in {HEAVY!r} if h in _sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def copy_workspace(name: str, dest: Path) -> Path:
    """Copy a fixture workspace into ``dest`` and return its path."""
    target = dest / name
    shutil.copytree(WORKSPACES / name, target)
    return target


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m laya_tui ARGS`` and capture its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "laya_tui", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          stdin=subprocess.DEVNULL)
