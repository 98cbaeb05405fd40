"""The TileLang lowering matrix: every kernel x target (c, cuda) x dtype x specialization.

Each cell lowers its kernel (``tilelang.lower(..., enable_device_compile=False)``), builds it
with the execution backend ``tilelang.compile`` would use (the C++ compiler for ``c``, a
``tvm_ffi`` JITKernel with nvcc for ``cuda``), runs it where it can (``c`` on the CPU,
``cuda`` on a GPU) and compares it with its reference; a failing stage reports its first
real diagnostic. Kernels come from ``--kernels DIR`` (default ``./kernels``): factory
modules (``gemm_kernel(N, K, *, cpu=False, dtype=...)`` plus an ``example()``, compared
with the torch fp32 reference) and TileLang files written like TileLang's examples, where
every ``@tilelang.jit`` function, module-level ``PrimFunc`` and PrimFunc maker is a kernel,
examined as the file's own run builds it (:mod:`laya_tui.families.tilelang.capture`) and
compared with the file's own check; the file's syntax tree
(:mod:`laya_tui.families.tilelang.static_args`) and pyproject's
``[tool.laya-tui.kernel-args]`` give what the run does not. A kernel the file calls whose
arguments are unknown, or whose file does not import, ends with status ``error``.

``<kernel>[cpu-vs-gpu,<dtype>]`` cells run a factory kernel's cpu specialization (``c``,
fp32) and its gpu specialization (``cuda``, fp16/bf16) on the same dtype-rounded inputs and
compare the two; they need a GPU and skip with the reason elsewhere.

Discovery stays light: the cells come from a syntax-tree scan of the kernel files; TileLang
is imported inside the probe function only.
"""

from __future__ import annotations

from laya_tui.api import Param, options, param, probe


def _params(cells: list[dict]) -> list[Param]:
    return [param(c["id"], name=c["name"], deps=c["deps"], **c["kwargs"]) for c in cells]


def lowering_cells() -> list[Param]:
    """One cell per kernel x target x dtype x specialization (no TileLang import)."""
    from laya_tui.families.tilelang.discover import matrix_cells

    return _params(matrix_cells(options()))


@probe(family="tilelang", name="lowering", params=lowering_cells)
def lowering(ctx, **cell) -> None:  # noqa: ANN001 - ctx is laya_tui.api.Context
    """Lower, build, run and compare one cell; report it as one ``lowering`` signal."""
    from laya_tui.families.tilelang.cell import run_cell

    run_cell(ctx, **cell)


def agreement_cells() -> list[Param]:
    """One cell per factory kernel x fp16/bf16 (no TileLang import)."""
    from laya_tui.families.tilelang.agree import agreement_cells as cells

    return _params(cells(options()))


@probe(family="tilelang", name="agree", params=agreement_cells)
def agree(ctx, **cell) -> None:  # noqa: ANN001 - ctx is laya_tui.api.Context
    """The cpu and gpu specializations of one kernel agree on the same inputs."""
    from laya_tui.families.tilelang.agree import run_agreement

    run_agreement(ctx, **cell)
