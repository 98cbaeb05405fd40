"""Kernels of a user's project that only the project's own tests build (issue 41): a
src-layout package whose ``tests/`` import it under pytest's ``pythonpath``, a check in a
helper of another test module, ``kernel.compile(**params)``, a maker under ``lru_cache``
behind an ``is_cuda`` guard, ``@pytest.mark.parametrize``, a kernel nothing builds whose
arguments all have defaults, a library maker nothing calls and a file written for another
TileLang. laya-tui runs as a user runs it, in the project; each outcome is checked against
TileLang itself in the same test."""

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
PROJECT = ROOT / "tests" / "fixtures" / "project_tests"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="no C++ compiler on PATH: target c builds with it")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                           "'laya-tui[tilelang]'")
    work = tmp_path_factory.mktemp("proj")
    shutil.copytree(PROJECT, work, dirs_exist_ok=True)
    report = work / "r.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--json", str(report),
         "--kernels", "src/myops", "--probes", str(ROOT / "probes" / "tilelang_matrix.py"),
         "--jobs", "1", "--no-cache", "--out", str(work / "out"), "--cache-dir",
         str(work / "cache")], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert report.exists(), proc.stderr[-2000:]
    doc = json.loads(report.read_text())
    return {"rc": proc.returncode, "doc": doc, "work": work,
            "cells": {p["id"].removeprefix("tilelang/"): p for p in doc["probes"]
                      if p["family"] == "tilelang"}}


def _signal(cell: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(s for s in cell["signals"] if s["kind"] == kind)


def _tilelang_output(work: Path, module: str, kernel: str, n: int) -> Any:
    """TileLang's own c kernel of ``module.kernel`` at N=n, run on 0..n-1 (the same
    interpreter: the project's src/ on the path for the import only)."""
    import importlib

    import tilelang
    import torch

    sys.path.insert(0, str(work / "src"))
    try:
        jit = getattr(importlib.import_module(module), kernel)
    finally:
        sys.path.remove(str(work / "src"))
        for name in [m for m in sys.modules if m == "myops" or m.startswith("myops.")]:
            del sys.modules[name]
    built = tilelang.compile(jit.get_tir(N=n), out_idx=[1], target="c")
    x = torch.arange(n, dtype=torch.float32)
    return x, built(x)


def test_a_kernel_the_project_s_test_builds_is_compared_with_that_test_s_check(
        run: dict[str, Any]) -> None:
    import torch

    cell = run["cells"]["scale.scale_kernel[c,fp32]"]
    assert cell["status"] == "ok", cell.get("reason")
    low = _signal(cell, "lowering")["detail"]
    assert low["args"]["N"] == 64
    assert low["arg_sources"]["N"] == "test_ops.py: test_scale() at line 11"
    assert low["built_by"]["file"].endswith(os.path.join("tests", "test_ops.py"))
    tol = _signal(cell, "tolerance")
    assert tol["passed"] is True
    assert tol["detail"]["check"] == "torch.testing.assert_close at line 11 in test_ops.py"
    x, y = _tilelang_output(run["work"], "myops.scale", "scale_kernel", 64)
    torch.testing.assert_close(y, x * 2)  # TileLang's own kernel agrees: it is right


def test_a_wrong_kernel_fails_the_project_s_check_at_that_check_s_line(
        run: dict[str, Any]) -> None:
    import torch

    cell = run["cells"]["scale.tripled[c,fp32]"]
    assert cell["status"] == "failed"
    tol = _signal(cell, "tolerance")
    assert tol["passed"] is False
    assert tol["site"]["file"].endswith(os.path.join("tests", "test_ops.py"))
    assert tol["site"]["line"] == 15
    x, y = _tilelang_output(run["work"], "myops.scale", "tripled", 40)
    with pytest.raises(AssertionError):  # TileLang's own kernel fails the same check
        torch.testing.assert_close(y, x * 2)


def test_a_cached_maker_behind_a_cuda_guard_is_built_by_a_parametrized_test(
        run: dict[str, Any]) -> None:
    cell = run["cells"]["addv[c,fp32]"]
    assert cell["status"] == "ok", cell.get("reason")
    low = _signal(cell, "lowering")["detail"]
    assert low["args"] == {"N": 32, "B": 8}  # the parametrize mark's first case
    assert "test_add(n=32): ran" in low["file_run"]["entries"]
    assert _signal(cell, "tolerance")["passed"] is True


def test_an_in_place_kernel_written_through_a_flat_view_is_compared_on_its_buffer(
        run: dict[str, Any]) -> None:
    """``kernel(x.reshape(-1), y.reshape(-1), out.reshape(-1))`` and the test checks ``out``
    (4x8): the check is made on the written buffer, as the test makes it."""
    cell = run["cells"]["inplace[c,fp32]"]
    assert cell["status"] == "ok", cell.get("reason")
    tol = _signal(cell, "tolerance")
    assert tol["passed"] is True and tol["value"] < 1e-5
    assert tol["detail"]["check"].endswith("in test_ops.py")


def test_a_kernel_nothing_builds_is_examined_at_its_own_defaults(
        run: dict[str, Any]) -> None:
    import tilelang

    cell = run["cells"]["defaults[c,fp32]"]
    assert cell["status"] == "ok", cell.get("reason")
    low = _signal(cell, "lowering")["detail"]
    assert low["args"] == {"N": 64, "block": 8}
    assert set(low["arg_sources"].values()) == {"default"}
    assert low["built_by"]["entry"].startswith("its own defaults")
    sys.path.insert(0, str(run["work"] / "src"))
    try:
        from myops.defaults import doubled
    finally:
        sys.path.remove(str(run["work"] / "src"))
        sys.modules.pop("myops.defaults", None)
        sys.modules.pop("myops", None)
    tilelang.compile(doubled.get_tir(), out_idx=[1], target="c")  # it lowers: so did ours


def test_a_library_maker_nothing_calls_says_which_arguments_to_give(
        run: dict[str, Any]) -> None:
    cell = run["cells"]["unused[c,fp32]"]
    assert cell["status"] == "skipped"
    head, *lines = cell["reason"].splitlines()
    assert head.startswith("_build is defined but nothing in its file or the files "
                           "importing it builds it: nothing to examine until it gets its "
                           "arguments (M, N)")
    assert lines[0] == '[tool.laya-tui.kernel-args."src/myops/unused.py::_build"]'


def test_a_file_written_for_another_tilelang_could_not_be_examined_and_fails_the_run(
        run: dict[str, Any]) -> None:
    cell = run["cells"]["old_api[file]"]
    assert cell["status"] == "error"
    with pytest.raises(ImportError) as exc:  # what TileLang itself says
        from tilelang.autotuner import jit  # noqa: F401
    assert str(exc.value).split(" (")[0] in cell["reason"]
    gate = next(g for g in run["doc"]["gates"] if g["name"] == "no-probe-error")
    assert gate["passed"] is False and run["rc"] == 1
