"""A kernel that fails its file's own check is built again by TileLang with one pass option
changed at a time, and the option that restores the check is named (issue 43 item 5). The
wrong result is injected through TileLang's own pass pipeline: the LoopUnswitching pass the
CPU pipeline calls is wrapped so that it also corrupts every float store unless TileLang's
``tl.disable_loop_unswitching`` (or, for fast.py, unless ``tl.enable_fast_math`` is off) is
set, as tile-ai/tilelang#1804's LoopUnswitching miscompile did. TileLang's own compile
with and without the option shows the same in each test."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.pass_bisect import BUILDS, REMOVED
from tests._signals import detail_of
from tests._tilelang_cells import run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "pass_bisect"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="no C++ compiler on PATH: target c builds with it")


@pytest.fixture
def tl(monkeypatch: pytest.MonkeyPatch) -> Any:
    tilelang = pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                      "'laya-tui[tilelang]'")
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")  # the injected pass is not in its keys
    monkeypatch.setenv("LAYA_TUI_TILELANG_BISECT_S", "120")
    return tilelang


@pytest.fixture
def miscompile(tl: Any, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[Callable[[Callable[[Any], bool]], None]]:
    """``miscompile(wrong_when)``: TileLang's LoopUnswitching also adds 1.0 to every float
    store when ``wrong_when(pass_context_config)`` holds."""
    import tvm

    real = tl.transform.LoopUnswitching

    def install(wrong_when: Callable[[Any], bool]) -> None:
        def wrapped() -> Any:
            inner = real()

            @tvm.transform.module_pass(opt_level=0, name="tl.LoopUnswitching")
            def run(mod: Any, ctx: Any) -> Any:
                mod = inner(mod)
                if not wrong_when(ctx.config):
                    return mod

                def store(op: Any) -> Any:
                    if isinstance(op, tvm.tirx.BufferStore) and "float" in str(op.value.dtype):
                        one = tvm.tirx.const(1.0, op.value.dtype)
                        return tvm.tirx.BufferStore(op.buffer, op.value + one, op.indices)
                    return None

                out = {}
                for gv, fn in mod.functions.items():
                    if isinstance(fn, tvm.tirx.PrimFunc):
                        fn = fn.with_body(tvm.tirx.stmt_functor.ir_transform(
                            fn.body, None, store, ["tirx.BufferStore"]))
                    out[gv] = fn
                return tvm.IRModule(out)

            return run

        monkeypatch.setattr(tl.transform, "LoopUnswitching", wrapped)

    yield install


def _own_compile(tl: Any, jit: Any, n: int, config: dict[str, Any]) -> tuple[Any, Any]:
    import torch

    kernel = tl.compile(jit.get_tir(N=n), out_idx=[1], target="c", pass_configs=config)
    x = torch.arange(n, dtype=torch.float32)
    return x, kernel(x)


def _cell(cid: str, tmp_path: Path) -> tuple[str, SignalDict, SignalDict]:
    status, signals = run_folder_cell(cid, tmp_path, FOLDER)
    low = next(s for s in signals if s["kind"] == "lowering")
    tol = next(s for s in signals if s["kind"] == "tolerance")
    return status, low, tol


def _unswitched(config: Any) -> bool:
    return not bool(config.get("tl.disable_loop_unswitching", False))


def test_the_pass_that_changes_the_numbers_is_named(tl: Any, miscompile: Any,
                                                     tmp_path: Path) -> None:
    import torch

    miscompile(_unswitched)
    status, low, tol = _cell("scaled[c,fp32]", tmp_path)
    assert status == "failed" and tol["passed"] is False
    found = detail_of(low)["pass_bisection"]
    assert found["restored_by"] == {"tl.disable_loop_unswitching": True}
    assert found["pass_name"] == "LoopUnswitching"
    assert found["builds"] == 1 and found["builds"] <= BUILDS
    assert low["fix"] is not None
    assert "pass_configs={'tl.disable_loop_unswitching': True}" in low["fix"]
    import importlib.util

    spec = importlib.util.spec_from_file_location("scaled_kernel", FOLDER / "scaled.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x, wrong = _own_compile(tl, mod.scaled, 64, {})  # TileLang's own compile: wrong ...
    assert not torch.allclose(wrong, x * 2)
    x, right = _own_compile(tl, mod.scaled, 64, {"tl.disable_loop_unswitching": True})
    torch.testing.assert_close(right, x * 2)  # ... and right with the option named


def test_the_file_s_own_option_is_tried_first(tl: Any, miscompile: Any,
                                              tmp_path: Path) -> None:
    miscompile(lambda config: bool(config.get("tl.enable_fast_math", False)))
    status, low, tol = _cell("fast[c,fp32]", tmp_path)
    assert status == "failed" and tol["passed"] is False
    found = detail_of(low)["pass_bisection"]
    assert found["restored_by"] == {"tl.enable_fast_math": REMOVED}
    assert low["fix"] is not None
    assert "without its own pass option 'tl.enable_fast_math'" in low["fix"]


def test_a_wrong_result_no_option_restores_is_said_plainly(tl: Any, miscompile: Any,
                                                           tmp_path: Path) -> None:
    miscompile(lambda config: True)
    status, low, _ = _cell("scaled[c,fp32]", tmp_path)
    assert status == "failed"
    found = detail_of(low)["pass_bisection"]
    assert found["restored_by"] is None
    assert found["verdict"].startswith("no pass option restores the check")
    assert found["builds"] <= BUILDS
    assert all(t["passed"] is not True for t in found["trials"])


def test_a_passing_kernel_is_not_bisected(tl: Any, tmp_path: Path) -> None:
    status, low, tol = _cell("scaled[c,fp32]", tmp_path)
    assert status == "ok" and tol["passed"] is True
    assert "pass_bisection" not in detail_of(low)


def test_the_search_is_switched_off_by_its_budget(tl: Any, miscompile: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYA_TUI_TILELANG_BISECT_S", "0")
    miscompile(_unswitched)
    status, low, tol = _cell("scaled[c,fp32]", tmp_path)
    assert status == "failed" and tol["passed"] is False
    assert "pass_bisection" not in detail_of(low) and not low.get("fix")
