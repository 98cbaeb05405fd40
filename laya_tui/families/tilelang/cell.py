"""One lowering-matrix cell: trace, lower, build, run and compare one kernel (worker side).

Signals per cell (the dashboard's lowering matrix reads them):

* exactly one ``lowering`` signal summarising the cell (``subject`` = ``gemm_kernel[c,bf16,gpu]``
  or ``gemm[cuda,fp16]``, ``passed``, ``reason`` = the failing stage and the first
  diagnostic line (``build failed (g++): k.py:66: error: ...``), ``site``/``fix`` on
  failure, ``detail`` with kernel/target/dtype/spec/outcome/stage/diagnostic/arguments and
  their sources/execution backend/... and per-stage seconds; a cell lowered or built but not
  run says why in a few words in ``not_run``: ``no GPU``...);
* a ``timing`` signal per stage attempted (``<cell>/lower``, ``/build``, ``/run``);
* a ``tolerance`` signal per checked output (``<cell>/<output>``);
* an ``artifact`` signal for the generated source, and ``log`` notes (why a run was skipped);
* for a failed cell, ``artifact`` signals for ``ir_before.py`` (the IR the failing pass
  received), ``last_pass.diff`` and ``repro.py``, all in ``<out>/tilelang/cells/<kernel>/
  <cell>/``; every lowered cell's detail has ``passes`` (TileLang's per-pass seconds).

A plain kernel is examined as its file's own run builds it
(:mod:`laya_tui.families.tilelang.plain_resolve`). A cell that cannot be examined (a kernel
the file calls whose arguments are unknown, a kernel file that does not import, a factory
that raises, a jit kernel refusing its arguments) ends with ``ctx.error`` (status
``error``), after a ``lowering`` signal with outcome ``not-examined`` carrying the import
diagnostic where there is one. A kernel the file never calls, and one whose tracing needs a
GPU on a machine without one, are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
from contextlib import AbstractContextManager
from typing import cast

from laya_tui.families.tilelang.cell_state import (
    INSTALL_HINT,
    NOT_EXAMINED,
    SEED,
    CellState,
    KernelCall,
    StageFailed,
    cuda_target_spec,
    dtype_label,
    factory_site,
    safe_name,
    tdetail,
)
from laya_tui.families.tilelang.diagnostics import Diagnostic
from laya_tui.families.tilelang.missing_package import missing_package
from laya_tui.families.tilelang.records import (
    CellArtifacts,
    CellExtra,
    Example,
    KernelArgs,
    PassConfigs,
    ProbeContext,
)
from laya_tui.families.tilelang.run_stage import compare_outputs, launch, run_stage
from laya_tui.families.tilelang.stages import build_stage, lower_stage, trace_stage

__all__ = ["INSTALL_HINT", "NOT_EXAMINED", "SEED", "CellState", "KernelCall", "StageFailed",
           "build_stage", "compare_outputs", "cuda_target_spec", "factory_site", "launch",
           "lower_stage", "run_cell", "trace_stage"]


def run_cell(ctx: ProbeContext, *, kernel: str, file: str, kind: str, target: str, dtype: str,
             spec: str | None = None, factory: str | None = None, line: int | None = None,
             obj: str | None = None, args: KernelArgs | None = None,
             arg_sources: dict[str, str] | None = None, missing: list[str] | None = None,
             key: str | None = None, dtype_arg: str | None = None,
             pass_configs: PassConfigs | None = None, called: bool = True,
             tuned: bool = False, execution_backend: str | None = None,
             note: str | None = None) -> None:
    """Probe one cell and report it through ``ctx`` (see the module docstring)."""
    if kind == "account":  # a file without kernel cells: why (always ends the cell)
        from laya_tui.families.tilelang.account import account_file

        account_file(ctx, file, note)
    state = CellState(kernel=kernel, target=target, dtype=dtype, spec=spec, file=file,
                      kind=kind)
    if line:  # the kernel's definition: a finding's related location
        state.extra["definition"] = {"file": file, "line": line}
    ctx.depends_on(file)
    if kind == "factory" and spec == "cpu" and dtype != "float32":
        dl = dtype_label(dtype)
        ctx.skip(f"cpu=True is the fp32 specialization: {dl} is not one of its dtypes "
                 f"(the gpu specialization covers {dl})")
    try:
        import tilelang  # noqa: F401 - the probe's one heavy import
    except ImportError as exc:
        ctx.skip(f"tilelang is not importable ({exc}): {INSTALL_HINT}")
    if target == "cuda":
        from tilelang.tools.compile_only import cuda_codegen_available

        if not cuda_codegen_available():
            ctx.skip("this TileLang build has no CUDA codegen (a Metal/CPU wheel)")
    call: KernelCall | None = None
    if kind in ("jit", "maker", "primfunc", "nested"):
        from laya_tui.families.tilelang.plain_resolve import plain_call

        call = plain_call(ctx, state, obj=obj or kernel, args=dict(args or {}),
                          sources=dict(arg_sources or {}),
                          missing=None if missing is None else list(missing),
                          key=key, dtype_arg=dtype_arg, pass_configs=pass_configs,
                          called=called, execution_backend=execution_backend)
        state.extra["args"] = call.args
        state.extra["arg_sources"] = call.sources
        if call.out_idx is not None:
            state.extra["out_idx"] = call.out_idx
    elif kind == "file":
        call = KernelCall(obj=obj or kernel)
    fsite = factory_site(file, line, factory or (obj if kind in ("jit", "maker", "nested")
                                                  else None))
    session = tool_session(ctx, state, call)
    example: Example | None
    try:
        with session:
            func, example = trace_stage(ctx, state, fsite, factory, call)
            artifact, tgt = lower_stage(ctx, state, func, fsite, call)
            built = build_stage(ctx, state, func, artifact, tgt, call)
            if built is not None:
                if example is None and kind in ("jit", "primfunc", "maker", "nested"):
                    from laya_tui.families.tilelang.reference import reference_example

                    example, state.no_reference = reference_example(
                        state.module, func, SEED, call.out_idx if call is not None else None)
                run_stage(ctx, state, func, artifact, tgt, built, example, call)
    except StageFailed as failed:
        state.diag = failed.diag
        if _unexamined(state, failed):
            state.outcome = NOT_EXAMINED
            _emit_summary(ctx, state)
            if state.stage == "run":
                why = (f"could not run {state.name}: the GPU ran out of memory (other "
                       f"processes may hold it; not a finding about the kernel)")
            else:
                what = "import" if state.stage == "import" else "build the kernel object of"
                why = f"could not {what} {os.path.basename(file)}: {failed.diag.exception}"
            top = missing_package(failed.diag.line, file) if state.stage == "import" else None
            hint = f" (a package not installed here: pip install {top})" if top else ""
            if state.stage == "import" and not top:
                from laya_tui.families.tilelang.moved_names import moved_hint

                moved = moved_hint(failed.diag.line, file)
                hint = f" ({moved})" if moved else ""
            ctx.error(f"{why}: {failed.diag.line}{hint}")  # raises: the cell ends here
        state.outcome = {"import": "lower-failed", "factory": "lower-failed",
                         "lower": "lower-failed", "build": "build-failed",
                         "run": "run-failed"}[state.stage]
        if failed.diag.fix and state.kind != "factory":
            failed.diag.fix = _plain_fix(failed.diag.fix)
        _failure_files(ctx, state, call)
    _emit_summary(ctx, state)


def tool_session(ctx: ProbeContext, state: CellState, call: KernelCall | None
                 ) -> AbstractContextManager[object]:
    """The TileLang tool session the file built this kernel in, entered again for the
    cell's trace, lower, build and run (IKET: ``with iket.session():`` adds the codegen its
    ``iket.mark`` events need; built outside it, nvcc meets ``TL_IKET_EVENT`` undefined);
    else a no-op."""
    record = call.record if call is not None else None
    if record is None or getattr(record, "session", None) != "iket":
        return contextlib.nullcontext()
    from tilelang.tools.cuda import iket

    from laya_tui.families.tilelang.build import cache_root

    state.extra["tool_session"] = "tilelang.tools.cuda.iket.session()"
    session: AbstractContextManager[object] = iket.session(
        output_dir=os.path.join(cache_root(ctx.options), "iket", state.name))
    return session


#: a factory's fixes name its cpu=True specialization; what applies to a plain kernel
_PLAIN_FIXES = {
    "fragments are GPU registers": "fragments are GPU registers: this kernel is written for a "
    "GPU (lower it for cuda; target c needs a variant with local buffers and serial loops)",
    "target c has no bfloat16 type": "target c has no bfloat16 type: build the kernel with a "
    "float32 dtype for c",
    "fp16 vectors do not compile as C++": "fp16 vectors do not compile as C++: build the "
    "kernel with a float32 dtype for c",
    "shared-memory tiles need the GPU": "shared-memory tiles need the GPU: lower it for cuda; "
    "target c needs a variant without shared memory",
}


def _plain_fix(fix: str) -> str:
    """The fix of a plain kernel: a factory's fix names a specialization it does not have."""
    if "cpu=True" not in fix:
        return fix
    head = fix.split(":", 1)[0]
    return _PLAIN_FIXES.get(head, head)


#: a run that failed for want of device memory says nothing about the kernel
_OUT_OF_MEMORY = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "cudaErrorMemoryAllocation")


def _unexamined(state: CellState, failed: StageFailed) -> bool:
    """The file did not import, a factory raised, a jit kernel refused its arguments, or
    the GPU had no memory left to run it."""
    if state.stage == "import":
        return True
    if state.stage == "run":
        text = f"{failed.diag.exception}: {failed.diag.line}"
        return failed.diag.exception == "OutOfMemoryError" or any(
            k in text for k in _OUT_OF_MEMORY)
    if state.stage != "factory":
        return False
    if state.kind == "factory" or failed.diag.exception == "LookupError":
        return True  # a factory raised, or the kernel is gone from its file
    return failed.diag.exception == "TypeError" and "argument" in failed.diag.line and \
        not _raised_in_file(failed.__cause__, state.file)


def _raised_in_file(exc: BaseException | None, path: str) -> bool:
    """Whether ``exc`` passed through a frame of the kernel file: a TypeError raised by the
    kernel's own body (``T.gemm(..., k_pack=2)`` on a TileLang without ``k_pack``) is a
    finding, as ``python file.py`` shows; one raised binding the kernel's arguments never
    enters the file (the cell calls the kernel itself)."""
    real = os.path.realpath(path)
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == real:
            return True
        tb = tb.tb_next
    return False


def _failure_files(ctx: ProbeContext, state: CellState, call: KernelCall | None) -> None:
    """The IR before the failing pass, the last pass's diff and ``repro.py`` of a failed
    cell, in ``<out>/tilelang/cells/<kernel>/<label>/``."""
    from laya_tui.families.tilelang.build import cache_root
    from laya_tui.families.tilelang.repro import write_repro

    folder = os.path.join(cache_root(ctx.options), "cells", safe_name(state.kernel),
                          safe_name(state.label))
    files: CellArtifacts = {}
    log = state.extra.pop("_passlog", None)
    try:
        if log is not None and state.stage == "lower":
            from laya_tui.families.tilelang.passlog import write_failure_artifacts

            files.update(write_failure_artifacts(
                log, folder, failing_pass=state.diag.pass_name if state.diag else None,
                message=state.diag.text if state.diag else ""))
        files["repro"] = write_repro(folder, state, call or KernelCall(obj=state.kernel),
                                     cuda_target_spec() if state.target == "cuda" else None)
    except Exception as exc:  # noqa: BLE001 - artifacts must never hide the diagnostic
        ctx.log(f"could not write the failure artifacts of {state.name}: {exc}",
                subject=state.name)
    state.extra.update(cast(CellExtra, files))  # its keys are the detail's own
    for k, v in files.items():
        if k in ("ir_before", "last_pass_diff", "repro") and isinstance(v, str):
            ctx.artifact(f"{state.name}/{k}", v, detail={"kind": k.replace("_", " "),
                                                         **tdetail(state)})


#: the stages a failing cell's reason names (``factory`` is where a kernel is traced)
_STAGE_NAMES = {"import": "import", "factory": "trace", "lower": "lower", "build": "build",
                "run": "run"}


def failure_reason(d: Diagnostic) -> str:
    """``build failed (g++): kernel.py:66: error: ...``: the stage that failed first (trace,
    lower, build, run, compare; import when the file did not import), then its diagnostic.
    The bare diagnostic stays in the detail (``diagnostic``) and in ``repro.py``."""
    stage = "compare" if d.exception == "ToleranceExceeded" else \
        _STAGE_NAMES.get(d.stage, d.stage)
    tool = f" ({os.path.basename(d.command.split()[0])})" \
        if d.stage == "build" and d.command and d.command.split() else ""
    return f"{stage} failed{tool}: {d.line}"


def _emit_summary(ctx: ProbeContext, state: CellState) -> None:
    failed = state.outcome in ("lower-failed", "build-failed", "run-failed", NOT_EXAMINED)
    d = state.diag
    total = sum(v for k, v in state.seconds.items() if k != "trace")
    ctx.lowering(state.name, passed=not failed,
                 reason=failure_reason(d) if (failed and d) else None,
                 site=d.site if (failed and d and d.site) else None,
                 fix=d.fix if (failed and d) else None,
                 seconds=round(total, 6), detail=state.detail())
