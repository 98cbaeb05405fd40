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

import os
import re
import time
from collections.abc import Callable
from typing import Any

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
from laya_tui.families.tilelang.stages import Built, no_gpu_reason


def run_stage(ctx: Any, state: CellState, func: Any, artifact: Any, tgt: Any, built: Built,
              example: Any, call: KernelCall | None = None) -> None:
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
        kernel = built.kernel if built.kind == "kernel" else _load(func, artifact, tgt, built,
                                                                   call)
        _run_own_check(ctx, state, kernel, record, artifact.params,
                       call.out_idx if call is not None else None,
                       rebuild=(lambda config: _rebuilt(state, func, call, config))
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
        faked = (state.extra.get("file_run") or {}).get("faked_ops", 0)
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
    run = state.extra.get("file_run") or {}
    let_pass = run.get("checks_let_pass")
    if let_pass:
        return (f"the file's run compares values laya-tui cannot make again from this "
                f"kernel's outputs alone ({let_pass} comparison(s) let pass)")
    ended = [e for e in run.get("entries", []) if not e.endswith((": ran", ": exited (0)",
                                                                  ": exited (None)"))]
    if ended:
        return f"the file's run ended before it checked this kernel ({ended[0]})"
    return "the file's run compares nothing with this kernel's outputs"


def _on_device(tensors: list[Any], device: str) -> bool:
    return all(getattr(getattr(t, "device", None), "type", device) == device for t in tensors)


def _devices(record: Any) -> str:
    kinds = sorted({str(getattr(getattr(t, "device", None), "type", "?"))
                    for t in (record.inputs if record is not None else [])})
    return ", ".join(kinds) or "no device"


def _load(func: Any, artifact: Any, tgt: Any, built: Built, call: KernelCall | None) -> Any:
    from laya_tui.families.tilelang.build import load_kernel

    return load_kernel(func, artifact, tgt, built.code or "", built.lib or "",
                       out_idx=call.out_idx if call is not None else None)


def _run_example(ctx: Any, state: CellState, func: Any, artifact: Any, tgt: Any,
                 built: Built, example: Any) -> None:
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


def _plain_reference(ctx: Any, state: CellState, example: Any,
                     promoted: dict[str, Any]) -> dict[str, Any] | None:
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


def compare_outputs(ctx: Any, example: Any, prefix: str, actual: dict[str, Any],
                    expected: dict[str, Any], *, dtype: str, cpu: bool,
                    detail: dict[str, Any], label: str = "") -> tuple[dict[str, Any], list[str]]:
    """A ``tolerance`` signal per checked output (``<prefix>/<output>``), within the
    example's limit for ``dtype``/``cpu``: ``(checks, failure lines)``."""
    checks: dict[str, Any] = {}
    failures = []
    for name in example.outputs:
        limit = example.tolerance(name, dtype=dtype, cpu=cpu)
        sig = ctx.compare(f"{prefix}/{name}", actual[name], expected[name], atol=limit,
                          mask=example.masks.get(name), detail=detail)
        checks[name] = {"value": sig.get("value"), "limit": limit, "passed": sig.get("passed")}
        if not sig.get("passed"):
            failures.append(f"{name}: {label}max |diff| {sig.get('value'):.3g} > {limit:g}")
    return checks, failures


# -- the file's own check ---------------------------------------------------------------------


def _rebuilt(state: CellState, func: Any, call: KernelCall | None,
             config: dict[str, Any]) -> Any:
    """The kernel built again by TileLang itself with pass configuration ``config`` (the pass
    bisection's builds: :mod:`laya_tui.families.tilelang.pass_bisect`)."""
    import tilelang

    from laya_tui.families.tilelang.cell_state import cuda_target_spec

    target: Any = cuda_target_spec() if state.target == "cuda" else state.target
    return tilelang.compile(func, out_idx=call.out_idx if call is not None else None,
                            target=target, pass_configs=config,
                            execution_backend=state.extra.get("execution_backend") or "auto")


def _run_own_check(ctx: Any, state: CellState, kernel: Any, record: Any, params: Any,
                   out_idx: Any, rebuild: Callable[[dict[str, Any]], Any] | None = None
                   ) -> None:
    """Run the built kernel the way the file checks it, with its tolerances: the file's
    reference program on the inputs TileLang's profiler supplies, or each check the file
    made (:mod:`laya_tui.families.tilelang.own_checks`) made again on the kernel's real
    outputs, with the check's own function and options."""
    state.stage = "run"
    t0 = time.perf_counter()
    results: list[tuple[str, Any, str]] = []  # (output, verdict, the check's label)
    try:
        if record.ref_program is not None:
            results = _profiler_check(state, kernel, record, params, out_idx)
        else:
            results = _file_checks(state, kernel, record)
    except Exception as exc:
        state.seconds["run"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/run", state.seconds["run"], detail=tdetail(state))
        raise StageFailed(from_exception(exc, stage="run", target=state.target,
                                         kernel_file=state.file)) from exc
    checks: dict[str, Any] = {}
    failures: list[str] = []
    definition = state.extra.get("definition")
    by = (state.extra.get("built_by") or {}).get("file")  # a test of the project built it:
    check_file = by or state.file  # its checks are that file's lines
    if by:
        results = [(name, v, f"{how} in {os.path.basename(by)}") for name, v, how in results]
    for name, v, how in results:
        key = name if name not in checks else f"{name}@{len(checks)}"
        extra = {"check": how, **v.detail,
                 **({"kernel_site": definition} if definition else {})}
        fields: dict[str, Any] = {"reason": v.note} if v.note else {}
        site = check_site(check_file, how)
        if site:  # the finding is where the file checks the output
            fields["site"] = site
        ctx.tolerance(f"{state.name}/{key}", v.value, v.limit, passed=v.passed,
                      detail={**tdetail(state), **extra}, **fields)
        checks[key] = {"value": v.value, "limit": v.limit, "passed": v.passed, "check": how,
                       **({"note": v.note} if v.note else {})}
        if not v.passed:
            why = "; ".join(x for x in (v.message, v.note) if x)
            failures.append(f"{key}: {why} (the file's check: {how})")
    state.seconds["run"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/run", state.seconds["run"], detail=tdetail(state))
    state.extra["checks"] = checks
    state.extra["reference"] = "the file's own check"
    if failures:
        first = next((how for _, v, how in results if not v.passed), "")
        fix = _bisect(state, record, params, out_idx, rebuild) if rebuild else None
        raise StageFailed(Diagnostic(stage="run", exception="ToleranceExceeded",
                                     line=failures[0], text="\n".join(failures),
                                     site=check_site(check_file, first), fix=fix))
    state.outcome = "ran"


def _bisect(state: CellState, record: Any, params: Any, out_idx: Any,
            rebuild: Callable[[dict[str, Any]], Any]) -> str | None:
    """After a failed check: the pass option whose change makes it pass (the detail's
    ``pass_bisection``), as the finding's fix when there is one."""
    from laya_tui.families.tilelang.pass_bisect import bisect_passes
    from laya_tui.families.tilelang.stages import pass_config

    def passes(config: dict[str, Any]) -> bool:
        kernel = rebuild(config)
        got = (_profiler_check(state, kernel, record, params, out_idx)
               if record.ref_program is not None else _file_checks(state, kernel, record))
        return all(v.passed for _, v, _ in got)

    base = pass_config(None) | dict(state.extra.get("_pass_configs_all") or {})
    found = bisect_passes(base, passes)
    if found is None:
        return None
    state.extra["pass_bisection"] = found.as_detail()
    return found.fix()


def check_site(file: str, how: str) -> dict[str, Any] | None:
    """Where the file makes a check (``torch.testing.assert_close at line 19 (in test(),
    called at line 40)``: line 19 of the kernel file), None when its label names no line."""
    m = re.search(r" at line (\d+)", how)
    return {"file": file, "line": int(m.group(1))} if m else None


def _profiler_check(state: CellState, kernel: Any, record: Any, params: Any,
                    out_idx: Any) -> list[tuple[str, Any, str]]:
    """``profiler.assert_allclose(ref_program)``: the reference on TileLang's inputs."""
    from tilelang.profiler import TensorSupplyType

    from laya_tui.families.tilelang.own_verdict import Verdict

    supply_type = record.supply_type or TensorSupplyType.Auto
    if hasattr(kernel, "get_profiler"):  # a JITKernel: TileLang's own inputs
        ins = kernel.get_profiler(tensor_supply_type=supply_type)._get_inputs()
    else:
        from tilelang.utils.tensor import get_tensor_supply

        supply = get_tensor_supply(supply_type)
        outs = _indices(out_idx, len(params))
        ins = [supply(p).to(state.device) for i, p in enumerate(params) if i not in outs]
    ref = _as_list(record.ref_program(*ins))
    got = _as_list(kernel(*ins))
    _sync(state)
    opts = record.ref_options
    how = "profiler.assert_allclose(ref_program)"
    out = []
    for i, (a, e) in enumerate(zip(got, ref, strict=False)):
        if a is not None and e is not None:
            ok, value, limit, message = close(a, e, opts.get("rtol", 1e-2),
                                              opts.get("atol", 1e-2), how,
                                              opts.get("max_mismatched_ratio"))
            out.append((f"out{i}", Verdict(ok, value, limit, message), how))
    return out


def _file_checks(state: CellState, kernel: Any, record: Any) -> list[tuple[str, Any, str]]:
    """Each check the file made, made again: the kernel run on the inputs of the call the
    check compares (copies: an in-place kernel writes them), the checked expression
    evaluated on its real outputs."""
    import torch

    from laya_tui.families.tilelang.own_checks import Leaf
    from laya_tui.families.tilelang.own_verdict import judge

    runs: dict[int, tuple[list[Any], list[Any]]] = {}

    def leaf_value(leaf: Leaf) -> Any:
        if leaf.call not in runs:
            calls = record.calls or [record.inputs]
            ins = [t.clone() if isinstance(t, torch.Tensor) else t for t in calls[leaf.call]]
            got = _as_list(kernel(*ins))
            _sync(state)
            runs[leaf.call] = (got, ins)
        got, ins = runs[leaf.call]
        return got[leaf.index] if leaf.index >= 0 else ins[-1 - leaf.index]

    out = []
    for c in record.checks:
        actual = c.actual if c.actual is not None else Leaf(
            record, c.call, -1 - c.output if c.in_place else c.output)
        v = judge(c.how, actual, c.expected, c.options or {
            k: x for k, x in (("rtol", c.rtol), ("atol", c.atol)) if x is not None},
                  leaf_value, c.want)
        out.append((f"out{c.output}", v, c.label))
    return out


def _indices(out_idx: Any, n: int) -> set[int]:
    if out_idx is None:
        return set()
    items = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    return {int(i) if int(i) >= 0 else n + int(i) for i in items}


def _sync(state: CellState) -> None:
    if state.device == "cuda":
        import torch

        torch.cuda.synchronize()


def _as_list(out: Any) -> list[Any]:
    if out is None:
        return []
    return list(out) if isinstance(out, (list, tuple)) else [out]


def close(actual: Any, expected: Any, rtol: float | None, atol: float | None,
          how: str = "torch.testing.assert_close", mismatch: float | None = None
          ) -> tuple[bool, float, float, str]:
    """The file's own comparison's verdict (``torch.testing.assert_close`` with its dtype
    defaults when a tolerance is None, ``torch.allclose``, or TileLang's profiler check):
    (passed, max |diff|, the limit at the largest reference value, its first line)."""
    import torch

    e_t = expected if isinstance(expected, torch.Tensor) else torch.as_tensor(expected)
    a, e = actual.detach().cpu(), e_t.detach().cpu()
    r, t = rtol, atol
    message = ""
    try:
        if how.startswith("profiler"):
            from tilelang.utils.tensor import torch_assert_close

            r, t = (1e-2 if r is None else r), (1e-2 if t is None else t)
            torch_assert_close(a.float(), e.float(), rtol=r, atol=t,
                               max_mismatched_ratio=0.01 if mismatch is None else mismatch)
            ok = True
        elif how.startswith("torch.equal"):
            r, t = 0.0, 0.0
            ok = bool(torch.equal(a, e.to(a.dtype)))
            message = "" if ok else "torch.equal is False"
        elif how.startswith("torch.allclose"):
            r, t = (1e-5 if r is None else r), (1e-8 if t is None else t)
            ok = bool(torch.allclose(a, e.to(a.dtype), rtol=r, atol=t))
            message = "" if ok else f"torch.allclose(rtol={r:g}, atol={t:g}) is False"
        else:
            if r is not None and t is not None:
                torch.testing.assert_close(a, e, check_dtype=False, rtol=float(r),
                                           atol=float(t))
            else:
                torch.testing.assert_close(a, e, check_dtype=False)
            ok = True
    except AssertionError as exc:
        ok, message = False, first_line_of(str(exc))
    af, ef = a.float(), e.float()
    diff = float((af - ef).abs().max()) if af.numel() and af.shape == ef.shape else float("nan")
    limit = (1e-5 if t is None else t) + (1.3e-6 if r is None else r) * (
        float(ef.abs().max()) if ef.numel() else 0.0)
    return ok, diff, limit, message


# -- launching ----------------------------------------------------------------------------------


def launch(state: CellState, func: Any, artifact: Any, tgt: Any, built: Built,
           tensors: dict[str, Any]) -> None:
    """Call the built kernel on ``tensors`` (in place; synchronised on a GPU).

    A crash becomes :class:`StageFailed` with the kernel's own device assertion when it
    printed one; a sticky CUDA error marks this worker's context as lost."""
    import torch

    from laya_tui.families.tilelang.build import load_kernel

    state.stage = "run"
    device = state.device
    if device == "cuda" and _CUDA_LOST:
        raise StageFailed(Diagnostic(
            stage="run", exception="CudaContextLost",
            line=f"not run: this worker's CUDA context was lost when {_CUDA_LOST[0]} failed "
                 f"({_CUDA_LOST[1]})",
            text=f"{_CUDA_LOST[0]} hit a sticky CUDA error ({_CUDA_LOST[1]}); every later "
                 "launch in this process fails. Fix that cell, then restart laya-tui or run "
                 "this cell alone.",
            fix="restart laya-tui (a new worker gets a new CUDA context)"))
    log_offset = _stdout_offset()
    try:
        if built.kind == "kernel":
            _call_jit_kernel(built.kernel, tensors)
        else:
            kernel = load_kernel(func, artifact, tgt, built.code or "", built.lib or "")
            kernel(*tensors.values())
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - a crash at run time is this cell's diagnostic
        diag = from_exception(exc, stage="run", target=state.target, kernel_file=state.file)
        if device == "cuda":
            device_lines = _device_messages(log_offset)
            if device_lines:  # the kernel's own assertion beats "device-side assert triggered"
                diag.text = "\n".join(device_lines[:5]) + "\n" + diag.text
                diag.line = device_lines[0][:500]
            if _sticky_cuda_error(str(exc)):
                _mark_cuda_lost(state.name, first_line_of(str(exc)))
        raise StageFailed(diag) from exc


def _call_jit_kernel(kernel: Any, tensors: dict[str, Any]) -> None:
    """A ``JITKernel`` with ``out_idx`` takes the inputs only and returns its outputs (as
    ``tilelang.compile``'s kernels do): they are copied into their tensors of ``tensors``."""
    names = list(tensors)
    outs = sorted(_indices(getattr(kernel, "out_idx", None), len(names)))
    if not outs:
        kernel(*tensors.values())
        return
    got = _as_list(kernel(*[tensors[n] for i, n in enumerate(names) if i not in outs]))
    for i, out in zip(outs, got, strict=False):
        tensors[names[i]].copy_(out)


#: (cell, error) of the failure that left this process's CUDA context unusable.
_CUDA_LOST: tuple[str, str] | None = None
_STICKY = ("device-side assert", "illegal memory access", "unspecified launch failure",
           "misaligned address", "illegal instruction", "launch timed out")


def _sticky_cuda_error(message: str) -> bool:
    low = message.lower()
    return any(s in low for s in _STICKY)


def _mark_cuda_lost(cell: str, error: str) -> None:
    global _CUDA_LOST
    if _CUDA_LOST is None:
        _CUDA_LOST = (cell, error)


def _stdout_offset() -> int | None:
    """Size of the file fd 1 writes to (the probe's log), to read device printf after it."""
    try:
        import stat

        st = os.fstat(1)
        return st.st_size if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return None


def _device_messages(offset: int | None) -> list[str]:
    """Device-side assertion lines the kernel printed since ``offset`` (first ones first)."""
    if offset is None:
        return []
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
        with open("/proc/self/fd/1", encoding="utf-8", errors="replace") as f:
            f.seek(offset)
            text = f.read(1 << 20)
    except OSError:
        return []
    lines = [ln.strip() for ln in text.splitlines() if "Assertion" in ln or "error" in ln.lower()]
    return list(dict.fromkeys(lines))
