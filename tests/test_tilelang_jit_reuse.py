"""A ``cuda`` cell lowers its kernel once: the build reuses the lower stage's IR
(``families/tilelang/jit_from_lowered.py``) and yields what a plain ``JITKernel`` builds."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._signals import detail_of
from tests._tilelang_cells import ROOT, run_folder_cell

pytest.importorskip("tilelang", reason="tilelang not installed: pip install 'laya-tui[tilelang]'")

needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not os.path.isfile("/usr/local/cuda/bin/nvcc"),
    reason="nvcc not found: cuda cells build with it")


def _count_lowerings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the functions TileLang's lowering pipeline lowers, from now on (the real
    ``lower_to_host_device_ir`` still runs)."""
    engine = importlib.import_module("tilelang.engine.lower")
    real: Callable[..., Any] = engine.lower_to_host_device_ir
    seen: list[str] = []

    def counted(func_or_mod: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(getattr(func_or_mod, "attrs", {}).get("global_symbol", "?")))
        return real(func_or_mod, *args, **kwargs)

    monkeypatch.setattr(engine, "lower_to_host_device_ir", counted)
    return seen


def test_the_installed_tilelang_takes_the_reuse_path() -> None:
    """A TileLang whose private step moved makes this fail (the cells still build, lowering
    twice): follow the new step in jit_from_lowered.py."""
    from laya_tui.families.tilelang.jit_from_lowered import supported

    assert supported()


ADD = """
import tilelang.language as T


def add(n=1024, block=128):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
            C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return add
"""


def _add(folder: Path) -> Any:
    """A fresh PrimFunc of a small elementwise kernel (written as a user's file)."""
    path = folder / "add_kernel.py"
    path.write_text(ADD)
    spec = importlib.util.spec_from_file_location("add_kernel", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.add()


def _lower(func: Any, tgt: Any) -> Any:
    import tilelang

    from laya_tui.families.tilelang.stages import prepared

    with tilelang.transform.PassContext(opt_level=3), tgt:
        return tilelang.lower(prepared(func, tgt, "tvm_ffi", [2]), target=tgt,
                              enable_device_compile=False)


@needs_nvcc
def test_built_from_the_lowered_ir_is_what_jitkernel_builds(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tilelang.jit.kernel import JITKernel
    from tvm.target import Target

    from laya_tui.families.tilelang.jit_from_lowered import kernel_from_lowered

    tgt = Target({"kind": "cuda", "arch": "sm_90a"})
    flags = ["-DLAYA_REUSE_PROBE=1"]
    plain = JITKernel(_add(tmp_path), out_idx=[2], execution_backend="tvm_ffi", target=tgt,
                      compile_flags=flags)
    seen = _count_lowerings(monkeypatch)
    func = _add(tmp_path)
    lowered = _lower(func, tgt)
    assert seen == ["add"]
    reused = kernel_from_lowered(func, lowered, out_idx=[2], execution_backend="tvm_ffi",
                                 target=tgt, pass_configs=None, compile_flags=flags)
    assert seen == ["add"], "the build lowered the kernel again"
    assert reused.get_kernel_source() == plain.get_kernel_source()
    assert reused.get_host_source() == plain.get_host_source()
    assert [str(p.dtype) for p in reused.params] == [str(p.dtype) for p in plain.params]
    # a device binary compiled by nvcc is in the runtime module, as in the plain build
    assert reused.artifact.rt_mod is not None
    assert [m.kind for m in reused.artifact.rt_mod.imports] == \
        [m.kind for m in plain.artifact.rt_mod.imports]
    assert reused.pass_configs == plain.pass_configs


@needs_nvcc
def test_a_failing_nvcc_build_fails_the_same_way(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile flags reach nvcc through the reused path too: a flag nvcc refuses fails
    both builds with TileLang's own error, which the build diagnostic parses."""
    from tilelang.jit.kernel import JITKernel
    from tvm.target import Target

    from laya_tui.families.tilelang.jit_from_lowered import kernel_from_lowered

    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    tgt = Target({"kind": "cuda", "arch": "sm_90a"})
    flags = ["--no-such-nvcc-flag-laya"]
    errors = []
    for build in ("plain", "reused"):
        func = _add(tmp_path)
        with pytest.raises(Exception) as info:  # noqa: PT011 - TileLang raises a bare error
            if build == "plain":
                JITKernel(func, out_idx=[2], execution_backend="tvm_ffi", target=tgt,
                          compile_flags=flags)
            else:
                kernel_from_lowered(func, _lower(func, tgt), out_idx=[2],
                                    execution_backend="tvm_ffi", target=tgt,
                                    pass_configs=None, compile_flags=flags)
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1])
    for err in errors:
        assert "--no-such-nvcc-flag-laya" in str(err)


@needs_nvcc
def test_a_cuda_cell_lowers_its_kernel_once(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    seen = _count_lowerings(monkeypatch)
    status, signals = run_folder_cell("rope_kernel[cuda,fp16,gpu]", tmp_path, ROOT / "kernels")
    low = [s for s in signals if s["kind"] == "lowering"]
    assert status == "ok" and len(low) == 1 and low[0]["passed"]
    detail = detail_of(low[0])
    assert detail["outcome"] in ("built", "ran")
    assert detail["execution_backend"] == "tvm_ffi"
    assert "nvcc" in (detail.get("command") or "") or detail.get("command_note")
    assert len(seen) == 1, f"lowered {len(seen)} times: {seen}"
