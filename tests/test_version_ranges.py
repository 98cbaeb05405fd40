"""Ranges, not pins, for users (issue 46): the extras state the tested ranges, the pins live in
constraints.txt for this repository's own setup, and installing ``laya-tui[all]`` next to a
user's torch 2.14.1 keeps it. ``laya-tui --version`` reads versions from metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_user_extras_state_ranges_and_constraints_pin_the_repo():
    extras = _extras()
    reqs = [r for name in ("torch", "tilelang") for r in extras[name]]
    assert "torch>=2.13,<2.15" in reqs and "tilelang>=0.1.14,<0.2" in reqs
    assert not [r for r in reqs if "==" in r], reqs  # no pin in what users install
    assert extras["rbln"] == ["torch-rbln==0.12.0"]  # torch-rbln's own pairing
    pins = (ROOT / "constraints.txt").read_text()
    assert "torch==2.13.0" in pins and "tilelang==0.1.15" in pins
    assert "-c constraints.txt" in (ROOT / "scripts/setup.sh").read_text()


def test_installed_versions_fall_in_the_stated_ranges():
    from packaging.requirements import Requirement

    with open(ROOT / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    reqs = [Requirement(r) for r in deps + _extras()["torch"] + _extras()["tilelang"]
            + _extras()["serve"]]
    checked = 0
    for req in reqs:
        if req.name != "numpy" and (have := _installed(req.name)) is not None:
            assert req.specifier.contains(have, prereleases=True), (req, have)
            checked += 1
    assert checked >= 3  # textual, textual-serve... at least (a UI-only venv has no torch)


def _installed(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def test_version_flag_names_the_probed_libraries_without_importing_them():
    code = ("import sys; from laya_tui.cli.main import main\n"
            "try: main(['--version'])\nexcept SystemExit: pass\n"
            "print('IMPORTED', sorted(m for m in ('torch', 'tilelang', 'mlx') if m in "
            "sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"laya-tui {version('laya-tui')}"
    for dist in ("torch", "tilelang", "transformers", "mlx", "textual"):
        assert f"  {dist} {_installed(dist) or 'not installed'}" in lines, out.stdout
    assert lines[-1] == "IMPORTED []"


@pytest.mark.network
def test_installing_all_keeps_the_users_torch(request, tmp_path: Path):
    """A fresh venv holding torch 2.14.1 (the user's); pip resolves ``laya-tui[all]`` there
    and must install no other torch. Registry downloads: run with ``-m network``."""
    if "network" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("installs wheels into a fresh venv: run with -m network")
    venv = tmp_path / "venv"
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    t0 = time.perf_counter()
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "torch==2.14.1"],
                   check=True, timeout=900, env=env)
    before = subprocess.run([str(py), "-m", "pip", "show", "torch"], capture_output=True,
                            text=True, check=True).stdout
    assert "Version: 2.14.1" in before
    report = tmp_path / "plan.json"
    plan = subprocess.run([str(py), "-m", "pip", "install", "--dry-run", "--quiet",
                           "--report", str(report), f"{ROOT}[all]"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert plan.returncode == 0, plan.stderr[-3000:]
    installs = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                for i in json.loads(report.read_text())["install"]}
    after = subprocess.run([str(py), "-m", "pip", "show", "torch"], capture_output=True,
                           text=True, check=True).stdout
    print(f"torch before: 2.14.1; planned installs: torch={installs.get('torch')}, "
          f"tilelang={installs.get('tilelang')}; wall {time.perf_counter() - t0:.1f}s")
    assert "torch" not in installs, installs["torch"]
    assert "Version: 2.14.1" in after
    assert "laya-tui" in installs and "tilelang" in installs
