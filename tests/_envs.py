"""Second Python environments for the ``--env`` tests, built once into a cache folder.

* :func:`bare_env`: a venv with nothing installed and no system site-packages: what a
  laya-tui worker needs beyond the standard library is nothing.
* :func:`overlay_env`: a venv that sees the test interpreter's site-packages *after* its
  own (a ``.pth`` line), with a few packages of other versions installed into its own
  (``pip install --no-deps --target``): e.g. TileLang 0.1.14 over this venv's torch. The
  packages come from the registry pip is configured with; without it the test skips.

Folders live under ``$LAYA_TEST_ENV_CACHE`` (default ``~/.cache/laya-tui-tests/envs``), one
per (base interpreter, site-packages, packages), and are reused by later sessions.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

MAIN_SITE = sysconfig.get_paths()["purelib"]


def cache_root() -> Path:
    base = os.environ.get("LAYA_TEST_ENV_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "laya-tui-tests", "envs")
    return Path(base)


def _base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


def _build(tag: str, parts: list[str], make: object) -> str:
    key = hashlib.sha256("\0".join([_base_python(), MAIN_SITE, *parts]).encode()).hexdigest()
    root = cache_root() / f"{tag}-{key[:12]}"
    python = root / "bin" / "python"
    stamp = root / ".laya-test-ready"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(str(root) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            subprocess.run([_base_python(), "-m", "venv", "--clear", "--without-pip",
                            str(root)], check=True, capture_output=True, timeout=300)
            make(root)  # type: ignore[operator]
            stamp.write_text("ok\n")
    return str(python)


def site_packages(root: Path) -> Path:
    return next((root / "lib").glob("python3*/site-packages"))


def bare_env() -> str:
    """A venv's python with only the standard library (no pip, no system site-packages)."""
    return _build("bare", [], lambda root: None)


def overlay_env(packages: list[str]) -> str:
    """A venv's python that sees this interpreter's site-packages behind its own, where
    ``packages`` (pip requirement strings) are installed; skips when pip cannot get them."""
    def make(root: Path) -> None:
        site = site_packages(root)
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                               "--no-compile", "--target", str(site), *packages],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode:
            pytest.skip(f"cannot install {' '.join(packages)} for a second environment "
                        f"(pip: {proc.stderr.strip().splitlines()[-1:]}); needs the package "
                        "registry")
        (site / "zz-laya-test-main-site.pth").write_text(MAIN_SITE + "\n")

    return _build("overlay", packages, make)


#: A probe that says where it runs: interpreter, prefix, the laya_tui it imported, its
#: options; fails its lowering check where torch is not installed, else reports fallbacks.
PROBE = '''
import os
import sys
from importlib import metadata

from laya_tui import param, probe


@probe(family="where", params=[param("a", value=1), param("b", value=2)])
def where(ctx, value):
    from helpers import MARK

    ctx.environment("executable", sys.executable, detail={"prefix": sys.prefix})
    import laya_tui

    ctx.environment("laya_tui", os.path.dirname(os.path.realpath(laya_tui.__file__)))
    ctx.environment("out", os.environ.get("LAYA_TUI_OPTIONS"))
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        ctx.lowering("torch", passed=False, reason=f"torch is not installed in {sys.prefix}")
        return
    ctx.lowering("torch", passed=True)
    ctx.environment("torch", torch)
    ctx.signal("fallback", subject=f"op-{MARK}", count=2, reason="dtype-not-fp16")
'''


def workspace(tmp_path: Path) -> Path:
    """A workspace with the :data:`PROBE` (two cells) and the helper module it imports."""
    ws = tmp_path / "ws"
    (ws / "probes").mkdir(parents=True)
    (ws / "helpers").mkdir()
    (ws / "probes" / "where.py").write_text(PROBE)
    (ws / "helpers" / "__init__.py").write_text("MARK = 1\n")
    (ws / "pyproject.toml").write_text("[tool.laya-tui]\n")
    return ws
