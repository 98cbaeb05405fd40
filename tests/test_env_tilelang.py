"""The seed case of ``--env``: the same TileLang cell under TileLang 0.1.14 and 0.1.15.

The second environment sees this venv's torch and everything else, with TileLang 0.1.14
installed in front (tests/_envs.py, built once into a cache folder; the wheel comes from
the package registry). RoPE bf16 lowered to ``c``: 0.1.14 says bf16 has no C type, 0.1.15
fails earlier with another message. Each side's diagnostic is checked against TileLang
itself: the cell's ``repro.py`` run with that environment's interpreter (plain TileLang,
no laya-tui) prints its first diagnostic.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from laya_tui.report.document import validate_report
from tests._envs import overlay_env
from tests._util import REPO, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
CELL = "tilelang/rope_kernel[c,bf16,gpu]"


def _tilelang_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import tilelang; print(tilelang.__version__)"],
                         capture_output=True, text=True, timeout=300,
                         env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_rope_bf16_first_diagnostic_differs_between_tilelang_releases(tmp_path):
    if metadata.version("tilelang") == "0.1.14":
        pytest.skip("this venv already has TileLang 0.1.14")
    old = overlay_env(["tilelang==0.1.14"])
    assert _tilelang_version(old).startswith("0.1.14")  # TileLang's own answer
    out = tmp_path / "out"
    proc = run_cli("--headless", "--no-cache", "--only", CELL, "--out", str(out),
                   "--env", f"old={old}", "--env", f"new={sys.executable}",
                   "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md"),
                   timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    validate_report(report)
    assert report["envs"]["old"]["versions"]["tilelang"] == "0.1.14"
    assert report["envs"]["new"]["versions"]["tilelang"] == metadata.version("tilelang")
    by_id = {p["id"]: p for p in report["probes"]}
    cand = report["env_comparison"]["candidates"][0]
    assert cand["versions"]["tilelang"] == {"before": "0.1.14",
                                            "after": metadata.version("tilelang")}
    assert [d["probe"] for d in cand["diagnostics"]] == [CELL]
    assert [n["change"] for n in cand["notes"]] == ["diagnostic-changed"]
    said = {}
    for env, python in (("old", old), ("new", sys.executable)):
        p = by_id[f"{CELL}@{env}"]
        lowering = next(s for s in p["signals"] if s["kind"] == "lowering")
        assert p["status"] == "failed" and lowering["passed"] is False
        repro = out / f"@{env}" / "tilelang" / "cells" / "rope_kernel" / "c-bf16-gpu" / "repro.py"
        run = subprocess.run([python, str(repro)], capture_output=True, text=True, cwd=REPO,
                             timeout=300)
        assert run.returncode == 1, run.stderr  # it fails as the cell did
        said[env] = run.stdout.strip().splitlines()[-1]
        assert lowering["reason"].split(": ", 1)[1] == said[env]  # after the failed stage
    assert said["old"] == "Cannot convert type bfloat16 to C type"  # the study's 0.1.14 row
    assert said["new"] != said["old"]
    md = (tmp_path / "r.md").read_text()
    assert "First diagnostics that changed (1)" in md and "Cannot convert type bfloat16" in md
    assert "environments @new vs @old: 0 regression(s)" in proc.stderr
