"""A cell's run against the file's own check, as its run made it (recorded by the capture):
the reference program it gave ``profiler.assert_allclose`` (on TileLang's profiler inputs,
compared as TileLang compares), or each check it made on an expression of the kernel's
outputs (:mod:`laya_tui.families.tilelang.own_checks`) made again on the real outputs; a
failed check bisects the pass options (:mod:`laya_tui.families.tilelang.pass_bisect`)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.cell_state import (
    CellState,
    KernelCall,
    StageFailed,
    first_line_of,
    tdetail,
)
from laya_tui.families.tilelang.diagnostics import Diagnostic, from_exception
from laya_tui.families.tilelang.kernel_launch import as_list, out_indices, sync
from laya_tui.families.tilelang.records import (
    CheckDict,
    PassConfigs,
    ProbeContext,
    SignalFields,
    SiteDict,
)
from laya_tui.families.tilelang.tl_objects import Kernel, OutIdx, PrimFunc

if TYPE_CHECKING:

    from laya_tui.families.tilelang.capture_stubs import KernelCallRecord
    from laya_tui.families.tilelang.own_verdict import Verdict

__all__ = ["check_site", "close", "rebuilt", "run_own_check"]


def rebuilt(state: CellState, func: PrimFunc, call: KernelCall | None,
            config: PassConfigs) -> Kernel:
    """The kernel built again by TileLang itself with pass configuration ``config`` (the pass
    bisection's builds: :mod:`laya_tui.families.tilelang.pass_bisect`)."""
    import tilelang

    from laya_tui.families.tilelang.cell_state import cuda_target_spec

    target: dict[str, str] | str = cuda_target_spec() if state.target == "cuda" \
        else state.target
    kernel: Kernel = tilelang.compile(func, out_idx=call.out_idx if call is not None else None,
                            target=target, pass_configs=config,
                            execution_backend=state.extra.get("execution_backend") or "auto")
    return kernel


def run_own_check(ctx: ProbeContext, state: CellState, kernel: Kernel,
                  record: KernelCallRecord, params: Sequence[object], out_idx: OutIdx,
                  rebuild: Callable[[PassConfigs], Kernel] | None = None) -> None:
    """Run the built kernel the way the file checks it, with its tolerances: the file's
    reference program on the inputs TileLang's profiler supplies, or each check the file
    made (:mod:`laya_tui.families.tilelang.own_checks`) made again on the kernel's real
    outputs, with the check's own function and options."""
    state.stage = "run"
    t0 = time.perf_counter()
    results: list[tuple[str, Verdict, str]] = []  # (output, verdict, the check's label)
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
    checks: dict[str, CheckDict] = {}
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
        fields: SignalFields = {"reason": v.note} if v.note else {}
        site = check_site(check_file, how)
        if site:  # the finding is where the file checks the output
            fields["site"] = site
        ctx.tolerance(f"{state.name}/{key}", v.value, v.limit, passed=v.passed,
                      detail={**tdetail(state), **extra}, **fields)
        check: CheckDict = {"value": v.value, "limit": v.limit, "passed": v.passed,
                            "check": how}
        if v.note:
            check["note"] = v.note
        checks[key] = check
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


def _bisect(state: CellState, record: KernelCallRecord, params: Sequence[object],
            out_idx: OutIdx, rebuild: Callable[[PassConfigs], Kernel]) -> str | None:
    """After a failed check: the pass option whose change makes it pass (the detail's
    ``pass_bisection``), as the finding's fix when there is one."""
    from laya_tui.families.tilelang.pass_bisect import bisect_passes
    from laya_tui.families.tilelang.stages import pass_config

    def passes(config: PassConfigs) -> bool:
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


def check_site(file: str, how: str) -> SiteDict | None:
    """Where the file makes a check (``torch.testing.assert_close at line 19 (in test(),
    called at line 40)``: line 19 of the kernel file), None when its label names no line."""
    m = re.search(r" at line (\d+)", how)
    return {"file": file, "line": int(m.group(1))} if m else None


def _profiler_check(state: CellState, kernel: Kernel, record: KernelCallRecord,
                    params: Sequence[object], out_idx: OutIdx
                    ) -> list[tuple[str, Verdict, str]]:
    """``profiler.assert_allclose(ref_program)``: the reference on TileLang's inputs."""
    from tilelang.profiler import TensorSupplyType

    from laya_tui.families.tilelang.own_verdict import Verdict

    supply_type = record.supply_type or TensorSupplyType.Auto
    if hasattr(kernel, "get_profiler"):  # a JITKernel: TileLang's own inputs
        ins = kernel.get_profiler(tensor_supply_type=supply_type)._get_inputs()
    else:
        from tilelang.utils.tensor import get_tensor_supply

        supply = get_tensor_supply(supply_type)
        outs = out_indices(out_idx, len(params))
        ins = [supply(p).to(state.device) for i, p in enumerate(params) if i not in outs]
    ref = as_list(record.ref_program(*ins)) if record.ref_program is not None else []
    got = as_list(kernel(*ins))
    sync(state)
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


def _file_checks(state: CellState, kernel: Kernel, record: KernelCallRecord
                 ) -> list[tuple[str, Verdict, str]]:
    """Each check the file made, made again: the kernel run on the inputs of the call the
    check compares (copies: an in-place kernel writes them), the checked expression
    evaluated on its real outputs."""
    import torch

    from laya_tui.families.tilelang.own_checks import Leaf
    from laya_tui.families.tilelang.own_verdict import judge

    runs: dict[int, tuple[list[object], list[object]]] = {}

    def leaf_value(leaf: Leaf) -> object:
        if leaf.call not in runs:
            calls = record.calls or [record.inputs]
            ins = [t.clone() if isinstance(t, torch.Tensor) else t for t in calls[leaf.call]]
            got = as_list(kernel(*ins))
            sync(state)
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



def close(actual: object, expected: object, rtol: float | None, atol: float | None,
          how: str = "torch.testing.assert_close", mismatch: float | None = None
          ) -> tuple[bool, float, float, str]:
    """The file's own comparison's verdict (``torch.testing.assert_close`` with its dtype
    defaults when a tolerance is None, ``torch.allclose``, or TileLang's profiler check):
    (passed, max |diff|, the limit at the largest reference value, its first line)."""
    import torch

    if not isinstance(actual, torch.Tensor):
        raise TypeError(f"the kernel's output is a {type(actual).__name__}, not a tensor")
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

