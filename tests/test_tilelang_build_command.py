"""The build command of a ``cuda`` cell, and a CUDA build that only the host link stops.

A cell built through TileLang's own ``JITKernel`` records the nvcc command TileLang ran (as
a cython build records its g++ command), or says that TileLang's CUDA binary cache answered
instead. A file asking for the cython backend builds its CUDA code here and is stopped only
by the missing libcuda: that is the machine, not the kernel, so the cell is built, not run,
never a finding; checked against what ``tilelang.compile`` itself does on this machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
PROBES = str(ROOT / "probes" / "tilelang_matrix.py")


@pytest.fixture(scope="module")
def tl() -> Any:
    tl = pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                "'laya-tui[tilelang]'")
    from tilelang.contrib.nvcc import get_nvcc_compiler

    try:
        get_nvcc_compiler()
    except Exception as exc:  # noqa: BLE001 - no CUDA toolkit
        pytest.skip(f"no nvcc here ({exc}): a CUDA toolkit builds the cuda cells")
    return tl


def _cells(tmp_path: Path, src: Path, cell: str, **env: str) -> dict[str, Any]:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    shutil.copy(src, tmp_path / "kernels" / src.name)
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
         "--probes", PROBES, "--kernels", "kernels", "--only", cell, "--no-cache",
         "--json", str(out), "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert out.exists(), proc.stderr[-2000:]
    return {p["id"]: p for p in json.loads(out.read_text())["probes"]}


def _lowering(probe: dict[str, Any]) -> dict[str, Any]:
    (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
    return low["detail"]


def test_a_jit_cuda_build_records_the_nvcc_command_tilelang_ran(tl: Any, tmp_path: Path) -> None:
    from tilelang.contrib.nvcc import get_nvcc_compiler

    cell = "tilelang/maker_of_maker[cuda,fp32]"
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "tlcache")}  # empty: nvcc runs
    src = FIXTURES / "anywhere" / "maker_of_maker.py"
    detail = _lowering(_cells(tmp_path, src, cell, **env)[cell])
    cmd = detail["command"].split()
    assert cmd[0] == get_nvcc_compiler() and "--cubin" in cmd
    assert cmd[-1].endswith(".cu") and "-arch=sm_90a" in cmd  # the cell's target
    assert os.listdir(tmp_path / "tlcache")  # TileLang kept the binary
    # the same build again: TileLang's binary cache answers, and the cell says nvcc did not run
    again = _lowering(_cells(tmp_path, src, cell, **env)[cell])
    assert again.get("command") is None
    assert "TileLang's CUDA binary cache" in again["command_note"]


def test_a_cython_cuda_build_stopped_by_the_host_link_is_not_a_finding(
        tl: Any, tmp_path: Path) -> None:
    from laya_tui.families.tilelang.build import can_link_cuda

    if can_link_cuda():
        pytest.skip("this machine has libcuda: the cython build links and runs")
    src = FIXTURES / "build_command" / "cython_cuda.py"
    # TileLang itself: the CUDA code compiles, the host link fails (-lcuda) on this machine
    sys.path.insert(0, str(src.parent))
    try:
        import cython_cuda
    finally:
        sys.path.remove(str(src.parent))
    with pytest.raises(Exception) as err:
        tl.compile(cython_cuda.triple.get_tir(64), out_idx=[1],
                   target={"kind": "cuda", "arch": "sm_90a"}, execution_backend="cython")
    assert "lcuda" in str(err.value)
    cells = _cells(tmp_path, src, "tilelang/cython_cuda[cuda,*")
    (probe,) = cells.values()
    detail = _lowering(probe)
    assert probe["status"] != "failed", probe["reason"]
    assert detail["outcome"] == "built" and detail["linked"] is False
    assert detail["not_run"] == "no GPU" and "no libcuda" in detail["run_skipped"]
    assert detail["command"].split()[0].endswith("nvcc") and " -c " in detail["command"]


def test_a_kernel_built_in_an_iket_session_is_built_in_one_again(tl: Any, tmp_path: Path,
                                                                capfd: Any) -> None:
    """IKET events need the session's codegen: TileLang itself fails to compile the kernel
    outside ``iket.session()`` (nvcc: TL_IKET_EVENT undefined) and compiles it inside; the
    cell builds it in a session as the file did, so it is built, not a false build failure."""
    from tilelang.tools.cuda import iket

    src = FIXTURES / "iket_session" / "marked_add.py"
    sys.path.insert(0, str(src.parent))
    try:
        import marked_add
    finally:
        sys.path.remove(str(src.parent))
    target = {"kind": "cuda", "arch": "sm_90a"}

    def tilelang_says() -> str:  # its exception and what nvcc printed (TileLang lets it)
        capfd.readouterr()
        try:
            tl.compile(marked_add.marked_add(256), out_idx=-1, target=target,
                       execution_backend="cython")
            said = ""
        except Exception as exc:  # noqa: BLE001 - TileLang's own words
            said = str(exc)
        out = capfd.readouterr()
        return f"{said}\n{out.out}\n{out.err}"

    undefined = 'identifier "TL_IKET_EVENT" is undefined'
    assert undefined in tilelang_says()  # outside a session
    with iket.session(output_dir=str(tmp_path / "iket")):
        assert undefined not in tilelang_says()  # (here only the link may fail)
    cells = _cells(tmp_path, src, "tilelang/marked_add[cuda,*")
    (probe,) = cells.values()
    detail = _lowering(probe)
    assert probe["status"] != "failed", probe["reason"]
    assert detail["outcome"] == "built"
    assert detail["tool_session"] == "tilelang.tools.cuda.iket.session()"
