"""laya-tui as a new user gets it: a built wheel, installed outside the repo (no editable
install), run in a project of its own with one model factory and one TileLang kernel file.

The wheel is built offline from a copy of the source tree (``pip wheel --no-deps
--no-build-isolation``: setuptools and wheel come from this environment) and installed with
``pip install --no-deps --target``; the heavy libraries come from this environment's
site-packages, laya-tui itself only from the target folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from laya_tui.report.document import validate_report
from tests._user_project import MODEL, SOURCES, build_wheel, install_wheel, make_project
from tests._util import REPO

DEMO_MARKERS = ("explain/tiny_llama", "explain/tiny_modernbert", "aoti/decision", "mlx/",
                "tilelang/gemm_kernel", "tilelang/rope_kernel", "tilelang/attn_kernel",
                "tilelang/add_ln_kernel", "tilelang/gemm_geglu_kernel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def site(wheel, tmp_path_factory) -> Path:
    return install_wheel(wheel, tmp_path_factory.mktemp("site"))


def installed(site: Path, cwd: Path, *args: str, timeout: float = 120,
              script: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the installed laya-tui (``python -m laya_tui``, or its ``laya-tui`` script)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LAYA_TUI_OPTIONS")}
    env["PYTHONPATH"] = str(site)
    cmd = [str(site / "bin" / "laya-tui")] if script else [sys.executable, "-m", "laya_tui"]
    return subprocess.run([*cmd, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_wheel_ships_every_module_and_no_top_level_probes_or_kernels(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for folder, inside in SOURCES.items():
        for path in (REPO / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                expected.add(f"{inside}/{path.relative_to(REPO / folder).as_posix()}")
    missing = sorted(expected - names)
    assert not missing, f"missing from the wheel: {missing}"
    assert "laya_tui/report/schema.json" in names and "laya_tui/tui/app.tcss" in names
    assert not [n for n in names if n.startswith(("probes/", "kernels/"))]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "laya-tui = laya_tui.cli.main:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_installed_empty_project_hint_then_init_then_env(site, tmp_path):
    version = installed(site, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.splitlines()[0] == "laya-tui 0.1.0"
    assert "  torch " in version.stdout  # the probed libraries too (issue 46)
    probe = subprocess.run([sys.executable, "-c", "import laya_tui; print(laya_tui.__file__)"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)},
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == str(site / "laya_tui" / "__init__.py")
    proc = installed(site, tmp_path, "--headless")
    assert proc.returncode == 2 and "[tool.laya-tui]" in proc.stderr
    assert "nothing to examine" in proc.stderr
    assert installed(site, tmp_path, "init", script=True).returncode == 0
    # the table init writes names nothing yet: still no configuration (never an env-only
    # PASS), and --list says so the same way; once it names a folder, that is listed
    listed = installed(site, tmp_path, "--list")
    assert listed.returncode == 2 and "nothing to examine" in listed.stderr
    assert not listed.stdout.split()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my_probe.py").write_text(
        "from laya_tui import probe\n\n\n@probe('mine', name='hello')\n"
        "def hello(ctx):\n    return None\n")
    table = (tmp_path / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(table.replace('# probes = ["probes"]',
                                                           'probes = ["mine"]'))
    listed = installed(site, tmp_path, "--list")
    assert listed.returncode == 0, listed.stderr
    ids = listed.stdout.split()
    assert "mine/hello" in ids


@pytest.mark.slow
def test_installed_tool_in_a_user_project(site, tmp_path):
    project = make_project(tmp_path / "project")
    listed = installed(site, project, "--list", script=True)
    assert listed.returncode == 0, listed.stderr
    ids = listed.stdout.split()
    assert not [i for i in ids if i.startswith(DEMO_MARKERS)]
    assert {i for i in ids if i.startswith(("explain/", "aoti/"))} == {
        f"explain/model:{MODEL}[eager]", f"explain/model:{MODEL}[compile]",
        f"aoti/model[{MODEL}]"}
    kernel_ids = [i for i in ids if i.startswith("tilelang/")]
    assert kernel_ids and all(i.startswith("tilelang/elementwise_add[") for i in kernel_ids)
    assert "env/python" in ids and not [i for i in ids if i.startswith("mlx/")]
    # a headless run (the aoti packaging round trip is covered by the aoti tests);
    # --model names the same factory: mypkg is imported from the project folder
    out = project / "report.json"
    proc = installed(site, project, "--headless", "--json", str(out), "--model", MODEL,
                     "--only", "env/python", "--only", "explain/*", "--only", "tilelang/*",
                     "--jobs", "1", "--cache-dir", str(tmp_path / "cache"), timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    got = {p["id"]: p for p in report["probes"]}
    assert set(got) == {"env/python", f"explain/model:{MODEL}[eager]",
                        f"explain/model:{MODEL}[compile]", *kernel_ids}
    for scenario in ("eager", "compile"):
        cell = got[f"explain/model:{MODEL}[{scenario}]"]
        assert cell["status"] == "ok", (cell["reason"], cell["log_tail"][-2000:])
    # the kernel file's main() passes literal shapes and tiles: every cell is examined (ok, or
    # a finding such as a failed lowering), none is an error
    assert {got[k]["status"] for k in kernel_ids} <= {"ok", "failed"}, [
        (k, got[k]["reason"]) for k in kernel_ids]
    # every cell came from the built-in probes inside the installed package
    assert {os.path.dirname(p["file"]) for p in report["probes"]} == {
        str(site / "laya_tui" / "builtin_probes")}
