"""The run stage of a lowering-matrix cell: run the built kernel and compare (worker side).

What a cell compares with, best first:

1. the file's own checks, as its run made them (recorded by the capture): the reference
   program it gave ``profiler.assert_allclose`` (run through TileLang's profiler inputs,
   compared as TileLang compares), or each check it made on an expression of the kernel's
   outputs (:mod:`laya_tui.families.tilelang.own_checks`), made again on the real outputs
   with the check's own function and options;
2. a factory's ``example()``, or a plain file's module-level ``ref_program``
   (:mod:`laya_tui.families.tilelang.reference`).

``cuda`` cells run only where torch sees a GPU.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.cell_state import (
    SEED,
    CellState,
    KernelCall,
    StageFailed,
    dtype_label,
    first_line_of,
    has_gpu,
    tdetail,
)
from laya_tui.families.tilelang.diagnostics import Diagnostic, from_exception
from laya_tui.families.tilelang.kernel_launch import launch
from laya_tui.families.tilelang.own_check_run import check_site, close, rebuilt, run_own_check
from laya_tui.families.tilelang.records import CheckDict, Detail, Example, ProbeContext, Tensors
from laya_tui.families.tilelang.stages import Built, no_gpu_reason
from laya_tui.families.tilelang.tl_objects import Artifact, Kernel, PrimFunc, Target

if TYPE_CHECKING:
    from laya_tui.families.tilelang.capture_stubs import KernelCallRecord

__all__ = ["check_site", "close", "compare_outputs", "launch", "run_stage"]


def run_stage(ctx: ProbeContext, state: CellState, func: PrimFunc, artifact: Artifact,
              tgt: Target, built: Built, example: Example | None,
              call: KernelCall | None = None) -> None:
    """Run on the CPU (c) or the GPU (cuda) and compare every output with the reference."""
    record = call.record if call is not None else None
    own = record is not None and (record.ref_program is not None or record.checks)
    if example is None and not own:
        why = (state.no_reference or "a plain TileLang file has no example() giving inputs "
               "and a reference") if state.kind != "factory" else "the module defines no example()"
        if record is not None:
            why = f"{_why_unchecked(state)}, and {why}"
        state.extra["run_skipped"] = f"{why}: lowered and built only"
        state.extra["not_run"] = "no reference to compare with"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    if state.target == "cuda" and not has_gpu():
        state.extra["run_skipped"] = no_gpu_reason(linked=True)
        state.extra["not_run"] = "no GPU"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    inline = record is not None and bool(record.checks) and bool(record.inputs) and \
        _on_device(record.inputs, state.device) and all(c.trusted for c in record.checks) \
        and record.inputs_from is None
    if own and record is not None and (record.ref_program is not None or inline):
        kernel = built.kernel if built.kernel is not None else _load(func, artifact, tgt,
                                                                     built, call)
        run_own_check(ctx, state, kernel, record, artifact.params,
                      call.out_idx if call is not None else None,
                      rebuild=(lambda config: rebuilt(state, func, call, config))
                      if ctx.options.get("precision_plan") is not False else None)
        return
    if example is None and record is not None and record.inputs_from is not None:
        state.extra["run_skipped"] = (
            f"the file's inputs to this kernel come from another TileLang kernel "
            f"({record.inputs_from}), which the capture does not run: lowered and built only")
        state.extra["not_run"] = "inputs made by another kernel"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    if example is None and record is not None and not all(c.trusted for c in record.checks):
        run = state.extra.get("file_run")
        faked = run.get("faked_ops", 0) if run else 0
        state.extra["run_skipped"] = (
            f"the file's check compares with values its run made while the capture answered "
            f"{faked or 'some'} GPU-sized torch op(s) with zeros (a GPU host computes them): "
            "lowered and built only")
        state.extra["not_run"] = "the file's reference is GPU-sized"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    if example is None:
        state.extra["run_skipped"] = (
            "the file checks this kernel with tensors on another device than this cell's "
            f"({_devices(record)}): lowered and built only")
        state.extra["not_run"] = "the file's check is on another device"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    _run_example(ctx, state, func, artifact, tgt, built, example)


def _why_unchecked(state: CellState) -> str:
    """Why the file's run gave no check of this kernel: it compares nothing with its
    outputs, or it stopped first, or its comparisons cannot be made again here."""
    run = state.extra.get("file_run")
    let_pass = run.get("checks_let_pass") if run else None
    if let_pass:
        return (f"the file's run compares values laya-tui cannot make again from this "
                f"kernel's outputs alone ({let_pass} comparison(s) let pass)")
    ended = [e for e in (run["entries"] if run else []) if not e.endswith((": ran", ": exited (0)",
                                                                  ": exited (None)"))]
    if ended:
        return f"the file's run ended before it checked this kernel ({ended[0]})"
    return "the file's run compares nothing with this kernel's outputs"


def _on_device(tensors: list[object], device: str) -> bool:
    return all(getattr(getattr(t, "device", None), "type", device) == device for t in tensors)


def _devices(record: KernelCallRecord | None) -> str:
    kinds = sorted({str(getattr(getattr(t, "device", None), "type", "?"))
                    for t in (record.inputs if record is not None else [])})
    return ", ".join(kinds) or "no device"


def _load(func: PrimFunc, artifact: Artifact, tgt: Target, built: Built,
          call: KernelCall | None) -> Kernel:
    from laya_tui.families.tilelang.build import load_kernel

    return load_kernel(func, artifact, tgt, built.code or "", built.lib or "",
                       out_idx=call.out_idx if call is not None else None)


def _run_example(ctx: ProbeContext, state: CellState, func: PrimFunc, artifact: Artifact,
                 tgt: Target,
                 built: Built, example: Example) -> None:
    import torch

    state.stage = "run"
    t0 = time.perf_counter()
    try:
        torch.manual_seed(SEED)
        tensors, promoted = example.materialize(state.dtype, state.device)
        if state.kind != "factory":  # a plain file's ref_program, fed laya-tui's inputs
            expected = _plain_reference(ctx, state, example, promoted)
            if expected is None:
                return
        else:
            expected = example.expected(promoted, state.dtype)
        launch(state, func, artifact, tgt, built, tensors)
        actual = example.actual(tensors)
    except Exception as exc:
        state.seconds["run"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/run", state.seconds["run"], detail=tdetail(state))
        if isinstance(exc, StageFailed):
            raise
        raise StageFailed(from_exception(exc, stage="run", target=state.target,
                                         kernel_file=state.file)) from exc
    checks, failures = compare_outputs(
        ctx, example, state.name, actual, expected, dtype=state.dtype, cpu=state.spec == "cpu",
        detail={"dtype": dtype_label(state.dtype), "target": state.target, "spec": state.spec,
                "kernel": state.kernel, "seed": SEED})
    state.seconds["run"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/run", state.seconds["run"], detail=tdetail(state))
    state.extra["checks"] = checks
    if failures:
        raise StageFailed(Diagnostic(stage="run", exception="ToleranceExceeded",
                                     line=failures[0], text="\n".join(failures)))
    state.outcome = "ran"


def _plain_reference(ctx: ProbeContext, state: CellState, example: Example,
                     promoted: Tensors) -> Tensors | None:
    """A plain file's ``ref_program`` on laya-tui's inputs; None (run skipped) when it does
    not take them or gives no finite numbers: a reference that cannot be run is no finding."""
    import torch

    try:
        expected = example.expected(promoted, state.dtype)
    except Exception as exc:  # noqa: BLE001 - the reference, not the kernel, refused
        why = ("the file's ref_program does not take the kernel's inputs "
               f"({first_line_of(str(exc))})")
    else:
        if all(bool(torch.isfinite(t).all()) for t in expected.values()):
            return expected
        why = "the file's ref_program gives non-finite numbers on laya-tui's random inputs"
    state.extra["run_skipped"] = f"{why}: lowered and built only"
    state.extra["not_run"] = "the file's reference cannot run"
    ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
    return None


def compare_outputs(ctx: ProbeContext, example: Example, prefix: str, actual: Tensors,
                    expected: Tensors, *, dtype: str, cpu: bool, detail: Detail,
                    label: str = "") -> tuple[dict[str, CheckDict], list[str]]:
    """A ``tolerance`` signal per checked output (``<prefix>/<output>``), within the
    example's limit for ``dtype``/``cpu``: ``(checks, failure lines)``."""
    checks: dict[str, CheckDict] = {}
    failures = []
    for name in example.outputs:
        limit = example.tolerance(name, dtype=dtype, cpu=cpu)
        sig = ctx.compare(f"{prefix}/{name}", actual[name], expected[name], atol=limit,
                          mask=example.masks.get(name), detail=detail)
        checks[name] = {"value": sig.get("value"), "limit": limit, "passed": sig.get("passed")}
        if not sig.get("passed"):
            failures.append(f"{name}: {label}max |diff| {sig.get('value'):.3g} > {limit:g}")
    return checks, failures
