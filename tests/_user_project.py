"""A user's project outside this repository and an installed wheel of laya-tui, shared by
tests/test_installed_tool.py and benchmarks/bench_user_project.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "tests" / "fixtures" / "user_project"
#: The project's model factory (``[tool.laya-tui] models``).
MODEL = "mypkg.mod:build"
#: What the source tree ships: the package, plus the two folders mapped inside it.
SOURCES = {"laya_tui": "laya_tui", "probes": "laya_tui/builtin_probes",
           "kernels": "laya_tui/demo_kernels"}


def build_wheel(dest: Path) -> Path:
    """Copy the source tree (no build leftovers) and build its wheel into ``dest/dist``."""
    src = dest / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(dest / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"pip wheel failed: {proc.stderr[-2000:]}")
    (wheel,) = (dest / "dist").glob("laya_tui-*.whl")
    return wheel


def install_wheel(wheel: Path, target: Path) -> Path:
    """``pip install --no-deps --target`` (no editable install); returns ``target``."""
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed: {proc.stderr[-2000:]}")
    return target


def make_project(root: Path) -> Path:
    """A copy of the user's project: one model factory package, one kernel file and a
    ``[tool.laya-tui]`` table naming them."""
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root
