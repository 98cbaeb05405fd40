"""CPU-vs-GPU specialization agreement: one kernel's two specializations on the same inputs.

A factory kernel is written once against a ``Spec`` that realises either the GPU
primitives (fragments, ``T.Parallel``, pipelining) or the ``cpu=True`` ones. The matrix
checks each against the torch fp32 reference; this cell checks them against each other:
the cpu specialization lowered for ``c`` and run on the CPU in fp32, the gpu
specialization lowered for ``cuda`` and run on the GPU in fp16/bf16, both fed the same
inputs rounded to that dtype. Outputs the kernel stores in its I/O dtype (an in-place
residual) are rounded to that dtype on the CPU side first. Limits are the matrix's low
precision ones (0.05; attention 0.02 over valid query rows). Worker side; heavy imports
inside the functions.
"""

from __future__ import annotations

from laya_tui.families.tilelang.cell_state import (
    INSTALL_HINT,
    SEED,
    CellState,
    StageFailed,
    factory_site,
)
from laya_tui.families.tilelang.discover import DTYPES
from laya_tui.families.tilelang.records import (
    CellDict,
    Example,
    ProbeContext,
    ProbeOptions,
    Tensors,
)
from laya_tui.families.tilelang.run_stage import compare_outputs, launch
from laya_tui.families.tilelang.stages import build_stage, lower_stage, trace_stage

#: The dtypes the gpu specialization is compared in (fp32 is the cpu specialization's own).
AGREE_DTYPES = ("float16", "bfloat16")


def agreement_label(dtype: str) -> str:
    """``cpu-vs-gpu,bf16``: the bracketed part of an agreement cell id."""
    return f"cpu-vs-gpu,{DTYPES.get(dtype, dtype)}"


def agreement_cells(opts: ProbeOptions) -> list[CellDict]:
    """One cell per factory kernel x fp16/bf16: ``{"id", "name", "deps", "kwargs"}``."""
    from laya_tui.families.tilelang.discover import find_kernels, kernel_dirs

    return [{"id": agreement_label(dt), "name": e.name, "deps": [e.file],
             "kwargs": {"kernel": e.name, "file": e.file, "dtype": dt, "factory": e.factory,
                        "line": e.line}}
            for e in find_kernels(kernel_dirs(opts), opts) if e.kind == "factory"
            for dt in AGREE_DTYPES]


def compare_specs(ctx: ProbeContext, example: Example, kernel: str, dtype: str,
                  cpu_out: Tensors, gpu_out: Tensors) -> list[str]:
    """One ``tolerance`` signal per output (gpu vs cpu specialization); the failures."""
    import torch

    dl = DTYPES.get(dtype, dtype)
    # outputs the kernel stores in the I/O dtype: the cpu side rounded the same way
    ref = {name: t.to(getattr(torch, dtype)).float() if name in example.rounded else t
           for name, t in cpu_out.items()}
    _, failures = compare_outputs(
        ctx, example, f"{kernel}[{agreement_label(dtype)}]", gpu_out, ref, dtype=dtype,
        cpu=False, label=f"gpu-spec {dl} vs cpu-spec ",
        detail={"kernel": kernel, "dtype": dl, "seed": SEED, "a": "cuda gpu-spec",
                "b": "c cpu-spec fp32"})
    return failures


def run_agreement(ctx: ProbeContext, *, kernel: str, file: str, dtype: str,
                  factory: str | None = None, line: int | None = None) -> None:
    """Build and run both specializations of ``kernel`` and compare their outputs."""
    ctx.depends_on(file)
    try:
        import tilelang  # noqa: F401 - the probe's one heavy import
        import torch
    except ImportError as exc:
        ctx.skip(f"tilelang/torch not importable ({exc}): {INSTALL_HINT}")
    if not torch.cuda.is_available():
        ctx.skip("no CUDA device here (torch.cuda.is_available() is False): the gpu "
                 "specialization cannot run, so there is nothing to compare the cpu one with")
    from tilelang.tools.compile_only import cuda_codegen_available

    if not cuda_codegen_available():
        ctx.skip("this TileLang build has no CUDA codegen (a Metal/CPU wheel)")
    fsite = factory_site(file, line, factory)
    outputs: dict[str, Tensors] = {}
    example: Example | None = None
    for target, spec in (("c", "cpu"), ("cuda", "gpu")):
        run_dtype = "float32" if spec == "cpu" else dtype
        state = CellState(kernel=kernel, target=target, dtype=run_dtype, spec=spec, file=file,
                          kind="factory")
        try:
            func, example = trace_stage(ctx, state, fsite, factory)
            if example is None:
                ctx.skip(f"{file} defines no example(): no inputs to compare the "
                         "specializations on")
            artifact, tgt = lower_stage(ctx, state, func, fsite)
            built = build_stage(ctx, state, func, artifact, tgt)
            if built is None:
                why = state.extra.get("build_skipped") or state.extra.get("run_skipped")
                ctx.skip(f"{state.name}: {why}")
            torch.manual_seed(SEED)
            tensors, _ = example.materialize(dtype, state.device)
            if spec == "cpu":  # the fp32 kernel gets the same dtype-rounded numbers
                tensors = {k: v.float() if v.is_floating_point() else v
                           for k, v in tensors.items()}
            assert built is not None  # ctx.skip raised above otherwise
            launch(state, func, artifact, tgt, built, tensors)
            outputs[spec] = example.actual(tensors)
        except StageFailed as failed:
            ctx.fail(f"{state.name} failed to {failed.diag.stage}: {failed.diag.line} "
                     "(its matrix cell has the full diagnostic)")
    assert example is not None  # ctx.skip raised above otherwise
    failures = compare_specs(ctx, example, kernel, dtype, outputs["cpu"], outputs["gpu"])
    if failures:
        ctx.fail(failures[0])
