"""What installing laya-tui brings (issue 28): ``[all]`` is safe anywhere, torch-rbln only in
its own extra with the README's caveat beside it, and the repository's setup is quiet."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests._util import REPO


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


def resolved(extra: str, extras: dict[str, list[str]] | None = None) -> set[str]:
    """The requirement names an extra installs, ``laya-tui[a,b]`` self-references followed."""
    extras = extras or _extras()
    out: set[str] = set()
    for req in extras[extra]:
        m = re.match(r"laya-tui\[([^\]]+)\]", req)
        if m:
            for sub in m.group(1).split(","):
                out |= resolved(sub.strip(), extras)
        else:
            out.add(re.split(r"[\[<>=;! ]", req, maxsplit=1)[0].lower())
    return out


def test_all_is_safe_anywhere_and_torch_rbln_is_its_own_extra():
    assert "torch-rbln" not in resolved("all")
    assert {"torch", "transformers", "tilelang", "mlx"} <= resolved("all")
    assert resolved("rbln") == {"torch-rbln"}


def test_the_readme_caveat_sits_next_to_the_rbln_extra():
    readme = (REPO / "README.md").read_text()
    at = readme.index("'.[all,rbln]'")
    near = readme[at:at + 800]
    assert "only where the RBLN runtime" in near
    assert "Failed to\nload the backend extension" in near or \
        "Failed to load the backend extension" in near
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in near


def test_the_repositorys_own_setup_names_rbln_for_its_tests():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert re.search(r"^EXTRAS=\$\{LAYA_EXTRAS:-all,rbln,dev\}$", setup, re.M)


def _filter() -> str:
    setup = (REPO / "scripts" / "setup.sh").read_text()
    m = re.search(r'PYTHONWARNINGS="([^"$]+)', setup)
    assert m, "setup.sh sets no PYTHONWARNINGS filter for pip"
    return m.group(1)


def test_setup_hides_setuptools_editable_warning_box(tmp_path: Path):
    """The PEP 660 hook pip calls, run here with this venv's setuptools on a copy of the
    project: the box is there without setup.sh's filter, gone with it."""
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, tmp_path / name)
    for name in ("laya_tui", "probes", "kernels"):
        shutil.copytree(REPO / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import sys, tempfile\nfrom setuptools import build_meta\n"
            "build_meta.build_editable(tempfile.mkdtemp())\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}

    def build(extra: dict[str, str]) -> str:
        # -P: the project folder is not first on sys.path (pip builds in an isolated env;
        # here the venv's Hugging Face `kernels` egg_info hook would import our kernels/)
        proc = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**env, **extra})
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout + proc.stderr

    assert "Please be careful with folders" in build({})  # what pip shows without it
    assert "Please be careful" not in build({"PYTHONWARNINGS": _filter()})
