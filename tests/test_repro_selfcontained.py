"""repro.py of each stage, with laya-tui's whole cache removed (issue 41): a build repro carries
the source it compiles and the compiler command and fails as the cell did; trace, lower and
compare repros fail the same way too; one whose kernel file is gone names it (exit 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._util import run_cli

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests" / "fixtures" / "labels"


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler")
def test_a_build_repro_fails_the_same_way_with_the_cache_removed(tmp_path: Path) -> None:
    cache = tmp_path / "xdg"
    report = tmp_path / "r.json"
    run_cli("--headless", "--no-cache", "--no-demo", "--only", "tilelang/widen_half*",
            "--kernels", str(LABELS), "--json", str(report), cwd=ROOT, timeout=600,
            env={"XDG_CACHE_HOME": str(cache)})
    probe = next(p for p in json.loads(report.read_text())["probes"]
                 if p["id"] == "tilelang/widen_half[c,fp16-fp32]")
    (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
    d = low["detail"]
    assert d["outcome"] == "build-failed" and d["command"]
    repro = Path(d["repro"])
    assert str(repro).startswith(str(cache / "laya-tui" / "artifacts"))  # per workspace
    assert Path(d["wrapped_source"]).is_file()
    kept = tmp_path / "repro.py"
    shutil.copy(repro, kept)  # attached to a bug report
    shutil.rmtree(cache)  # the cache cleared: the cell's .cpp is gone
    proc = subprocess.run([sys.executable, str(kept)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == low["reason"].split(": ", 1)[1]
    assert "no longer fails" not in proc.stdout
    # the kernel file itself missing: named, exit 2
    text = kept.read_text().replace(repr(str(LABELS / "widen_half.py")),
                                    repr(str(tmp_path / "gone.py")))
    kept.write_text(text)
    proc = subprocess.run([sys.executable, str(kept)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.startswith(f"cannot reproduce: the kernel file {tmp_path / 'gone.py'}")


RUN = ROOT / "tests" / "fixtures" / "run_kernels"
UP = ROOT / "tests" / "fixtures" / "upstream_kernels"


@pytest.mark.parametrize(("folder", "cell", "stage"), [
    (RUN, "tilelang/bad_trace[c,fp32]", "trace"),
    (UP, "tilelang/gemm[c,fp16]", "lower"),
    (RUN, "tilelang/caught_check[c,fp32]", "compare"),
])
def test_trace_lower_and_compare_repros_fail_the_same_way_with_the_cache_removed(
        tmp_path: Path, folder: Path, cell: str, stage: str) -> None:
    cache = tmp_path / "xdg"
    report = tmp_path / "r.json"
    run_cli("--headless", "--no-cache", "--no-demo", "--only", cell, "--kernels",
            str(folder), "--json", str(report), cwd=ROOT, timeout=600,
            env={"XDG_CACHE_HOME": str(cache)})
    probe = next(p for p in json.loads(report.read_text())["probes"] if p["id"] == cell)
    (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
    assert low["reason"].startswith(f"{stage} failed"), low["reason"]
    kept = tmp_path / "repro.py"
    shutil.copy(low["detail"]["repro"], kept)
    shutil.rmtree(cache)
    proc = subprocess.run([sys.executable, str(kept)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last == low["reason"].split(": ", 1)[1] or last in low["reason"], (last, low)
