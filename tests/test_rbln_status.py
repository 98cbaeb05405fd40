"""Runtime detection, decided by torch-rbln's own ``resolve_runtime_library()``.

Each case builds a fake install layout on disk (a ``rebel`` package, a ``rebel-compiler``
distribution record, ``librbln.so`` present or not, ``LD_LIBRARY_PATH``) and asks
:func:`laya_tui.families.rbln_status.runtime_library` in a fresh interpreter, which loads the
installed wheel's ``torch_rbln/_internal/rbln_runtime_lib.py`` by path: neither torch nor
torch_rbln may end up imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.families.rbln_status import runtime_lib_module, torch_rbln_installed

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    not torch_rbln_installed() or runtime_lib_module() is None,
    reason="torch-rbln (with _internal/rbln_runtime_lib.py) not installed: "
           "pip install 'laya-tui[rbln]'")

PROBE = """
import json, os, sys
from laya_tui.families.rbln_status import guard_autoload, runtime_library
env = {}
out = {"lib": runtime_library(), "guard": guard_autoload(env), "env": env,
       "imported": sorted(m for m in ("torch", "torch_rbln") if m in sys.modules)}
print(json.dumps(out))
"""


def _layout(site: Path, *, record: bool, library: bool) -> Path:
    """``rebel`` importable from ``site``; a rebel-compiler record; the library or not."""
    (site / "rebel" / "lib").mkdir(parents=True)
    (site / "rebel" / "__init__.py").write_text("")
    lib = site / "rebel" / "lib" / "librbln.so"
    if library:
        lib.write_bytes(b"\x7fELF fake")
    if record:
        info = site / "rebel_compiler-0.10.3.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rebel-compiler\n"
                                       "Version: 0.10.3\n")
        (info / "RECORD").write_text("rebel/__init__.py,,\nrebel/lib/librbln.so,,\n")
    return lib


def _ask(tmp_path: Path, site: Path | None, ld: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([str(site)] if site else []))
    if ld is not None:
        env["LD_LIBRARY_PATH"] = ld
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_library_found_through_the_distribution_record(tmp_path):
    site = tmp_path / "site"
    lib = _layout(site, record=True, library=True)
    got = _ask(tmp_path, site)
    assert got["lib"] == {"path": os.path.realpath(lib), "source": "rebel-compiler record"}
    assert got["guard"] is None and got["env"] == {}  # runtime there: autoload stays on
    assert got["imported"] == []


def test_rebel_importable_but_no_library_is_not_a_runtime(tmp_path):
    """The old check ("a rebel package imports") said yes here; torch-rbln says no."""
    site = tmp_path / "site"
    _layout(site, record=True, library=False)
    got = _ask(tmp_path, site)
    assert got["lib"]["reason"].startswith("Could not find librbln.so")
    assert "rebel-compiler record" in got["lib"]["reason"]  # what it tried
    assert got["env"] == {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    assert "runtime is missing" in got["guard"]
    assert got["imported"] == []


def test_ld_library_path_overrides(tmp_path):
    d = tmp_path / "lib"
    d.mkdir()
    (d / "librbln.so").write_bytes(b"\x7fELF fake")
    got = _ask(tmp_path, None, ld=str(d))
    assert got["lib"] == {"path": os.path.realpath(d / "librbln.so"),
                          "source": "LD_LIBRARY_PATH"}


def test_nothing_installed_says_so(tmp_path):
    got = _ask(tmp_path, None, ld="")
    assert "No rebel-compiler distribution is installed" in got["lib"]["reason"]
    assert "`rebel` does not import" in got["lib"]["reason"]
    assert "\n" not in got["lib"]["reason"]
    assert got["imported"] == []
