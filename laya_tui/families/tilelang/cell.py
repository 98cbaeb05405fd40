"""One lowering-matrix cell: import, trace, lower, build, run and compare one kernel (worker side).

Signals per cell (the dashboard's lowering matrix reads them):

* exactly one ``lowering`` signal summarising the cell (``subject`` = ``gemm_kernel[c,bf16,gpu]``,
  ``passed``, ``reason`` = first diagnostic line, ``site``/``fix`` on failure, ``detail`` with
  kernel/target/dtype/spec/outcome/stage/diagnostic/... and per-stage seconds; a cell
  lowered or built but not run says why in a few words in ``not_run``: ``no GPU``...);
* a ``timing`` signal per stage attempted (``<cell>/lower``, ``/build``, ``/run``);
* a ``tolerance`` signal per checked output (``<cell>/<output>``);
* an ``artifact`` signal for the generated source, and ``log`` notes (why a run was skipped);
* for a failed cell, ``artifact`` signals for ``ir_before.py`` (the IR the failing pass
  received), ``last_pass.diff`` and ``repro.py``, all in ``<out>/tilelang/cells/<kernel>/
  <cell>/``; every lowered cell's detail has ``passes`` (TileLang's per-pass seconds).

A cell that cannot be examined (a jit kernel's arguments unknown, a kernel file that does
not import, a factory that raises, a jit kernel refusing its arguments) ends with
``ctx.error`` (status ``error``), after a ``lowering`` signal with outcome
``not-examined`` carrying the import diagnostic where there is one.
"""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field
from typing import Any

from laya_tui.families.tilelang.diagnostics import Diagnostic, from_compiler, from_exception
from laya_tui.families.tilelang.discover import DTYPES, cell_label

SEED = 1234
DEFAULT_CUDA_ARCH = "sm_90a"
INSTALL_HINT = "pip install 'laya-tui[tilelang]'"


class StageFailed(Exception):
    """A stage ended the cell with a diagnostic."""

    def __init__(self, diag: Diagnostic) -> None:
        super().__init__(diag.line)
        self.diag = diag


@dataclass
class CellState:
    """What a cell learnt so far; becomes the lowering signal's detail."""

    kernel: str
    target: str
    dtype: str
    spec: str
    file: str
    kind: str
    stage: str = "import"
    outcome: str = "lower-failed"
    seconds: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    diag: Diagnostic | None = None
    module: Any = None  # the imported kernel module (not reported)
    no_reference: str = ""  # why a plain kernel has nothing to compare with

    @property
    def label(self) -> str:
        return cell_label(self.target, self.dtype, self.spec)

    @property
    def name(self) -> str:
        return f"{self.kernel}[{self.label}]"

    @property
    def device(self) -> str:
        """Where the built kernel runs: ``cuda`` for the cuda target, else ``cpu``."""
        return "cuda" if self.target == "cuda" else "cpu"

    def detail(self) -> dict[str, Any]:
        d = self.diag
        out: dict[str, Any] = {
            "kernel": self.kernel, "target": self.target, "dtype": DTYPES.get(self.dtype,
                                                                                self.dtype),
            "spec": self.spec, "outcome": self.outcome, "stage": self.stage,
            "exception": d.exception if d else None,
            "diagnostic": d.text if d else None,
            "source_excerpt": d.source_excerpt if d else None,
            "kernel_site": ({k: v for k, v in d.site.items() if k in ("file", "line")}
                            if d and d.site else None),
            "pass": d.pass_name if d else None,
            "command": d.command if d and d.command else self.extra.get("command"),
            "generated_source": self.extra.get("generated_source"),
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
            "file": self.file, "kind": self.kind,
        }
        if d and d.buffers:
            out["buffers"] = d.buffers
        out.update({k: v for k, v in self.extra.items()
                    if k not in ("command", "generated_source") and not k.startswith("_")})
        return out


def cuda_target_spec() -> dict[str, str]:
    """The CUDA target: the local GPU's arch when there is one (``sm_90a`` on Hopper: the
    wgmma/TMA instructions need the arch-specific target), else ``sm_90a`` (H100/H200)."""
    try:
        import torch
        from tilelang.contrib.nvcc import get_target_arch

        if torch.cuda.is_available():
            return {"kind": "cuda",
                    "arch": f"sm_{get_target_arch(torch.cuda.get_device_capability())}"}
    except Exception:  # noqa: BLE001 - no usable torch.cuda
        pass
    return {"kind": "cuda", "arch": DEFAULT_CUDA_ARCH}


def factory_site(path: str, line: int | None, func: str | None) -> dict[str, Any] | None:
    if not line:
        return None
    site: dict[str, Any] = {"file": os.path.realpath(path), "line": int(line)}
    if func:
        site["func"] = func
    return site


#: Outcome of a cell that could not be examined (the probe ends with status ``error``).
NOT_EXAMINED = "not-examined"


def run_cell(ctx: Any, *, kernel: str, file: str, kind: str, target: str, dtype: str,
             spec: str, factory: str | None = None, line: int | None = None,
             obj: str | None = None, args: dict[str, Any] | None = None,
             arg_sources: dict[str, str] | None = None, missing: list[str] | None = None,
             key: str | None = None, dtype_arg: str | None = None,
             pass_configs: dict[str, Any] | None = None) -> None:
    """Probe one cell and report it through ``ctx`` (see the module docstring).

    A cell that cannot be examined (its kernel's arguments unknown, its file not importable,
    a factory that raises, a jit kernel refusing its arguments) ends with ``ctx.error``.
    """
    state = CellState(kernel=kernel, target=target, dtype=dtype, spec=spec, file=file,
                      kind=kind)
    ctx.depends_on(file)
    if kind == "factory" and spec == "cpu" and dtype != "float32":
        dl = DTYPES.get(dtype, dtype)
        ctx.skip(f"cpu=True is the fp32 specialization: {dl} is not one of its dtypes "
                 f"(the gpu specialization covers {dl})")
    call = KernelCall(obj=obj or factory or kernel, args=dict(args or {}),
                      sources=dict(arg_sources or {}), dtype_arg=dtype_arg,
                      pass_configs=dict(pass_configs or {}))
    if kind == "jit":
        if dtype_arg:
            call.args[dtype_arg] = dtype
            call.sources[dtype_arg] = "the cell's dtype"
        state.extra["args"] = call.args
        state.extra["arg_sources"] = call.sources
        if missing:
            from laya_tui.families.tilelang.kernel_args import missing_message

            ctx.error(missing_message(call.obj, key or f"{file}::{call.obj}", list(missing),
                                      ctx.options.get("workspace")))
    try:
        import tilelang  # noqa: F401 - the probe's one heavy import
    except ImportError as exc:
        ctx.skip(f"tilelang is not importable ({exc}): {INSTALL_HINT}")
    if target == "cuda":
        from tilelang.tools.compile_only import cuda_codegen_available

        if not cuda_codegen_available():
            ctx.skip("this TileLang build has no CUDA codegen (a Metal/CPU wheel)")
    fsite = factory_site(file, line, factory or (obj if kind == "jit" else None))
    func = None
    try:
        func, example = trace_stage(ctx, state, fsite, factory, call)
        artifact, tgt = lower_stage(ctx, state, func, fsite, call)
        built = build_stage(ctx, state, func, artifact, tgt)
        if built is not None:
            if example is None and kind in ("jit", "primfunc"):
                from laya_tui.families.tilelang.reference import reference_example

                example, state.no_reference = reference_example(state.module, func, SEED)
            _run(ctx, state, func, artifact, tgt, built, example)
    except StageFailed as failed:
        state.diag = failed.diag
        if _unexamined(state, failed):
            state.outcome = NOT_EXAMINED
            _emit_summary(ctx, state)
            what = "import" if state.stage == "import" else "build the kernel object of"
            ctx.error(f"could not {what} {os.path.basename(file)}: {failed.diag.exception}: "
                      f"{failed.diag.line}")
        state.outcome = {"import": "lower-failed", "factory": "lower-failed",
                         "lower": "lower-failed", "build": "build-failed",
                         "run": "run-failed"}[state.stage]
        _failure_files(ctx, state, call)
    _emit_summary(ctx, state)


def _unexamined(state: CellState, failed: StageFailed) -> bool:
    """The file did not import, a factory raised, or a jit kernel refused its arguments."""
    if state.stage == "import":
        return True
    if state.stage != "factory":
        return False
    if state.kind == "factory" or failed.diag.exception == "LookupError":
        return True  # a factory raised, or the kernel is gone from its file
    return failed.diag.exception == "TypeError" and "argument" in failed.diag.line


def _failure_files(ctx: Any, state: CellState, call: KernelCall) -> None:
    """The IR before the failing pass, the last pass's diff and ``repro.py`` of a failed
    cell, in ``<out>/tilelang/cells/<kernel>/<label>/``."""
    from laya_tui.families.tilelang.build import cache_root
    from laya_tui.families.tilelang.repro import write_repro

    folder = os.path.join(cache_root(ctx.options), "cells", _safe(state.kernel),
                          _safe(state.label))
    files: dict[str, Any] = {}
    log = state.extra.pop("_passlog", None)
    try:
        if log is not None and state.stage == "lower":
            from laya_tui.families.tilelang.passlog import write_failure_artifacts

            files.update(write_failure_artifacts(
                log, folder, failing_pass=state.diag.pass_name if state.diag else None,
                message=state.diag.text if state.diag else ""))
        files["repro"] = write_repro(folder, state, call, cuda_target_spec()
                                     if state.target == "cuda" else None)
    except Exception as exc:  # noqa: BLE001 - artifacts must never hide the diagnostic
        ctx.log(f"could not write the failure artifacts of {state.name}: {exc}",
                subject=state.name)
    for k, v in files.items():
        state.extra[k] = v
        if k in ("ir_before", "last_pass_diff", "repro") and isinstance(v, str):
            ctx.artifact(f"{state.name}/{k}", v, detail={"kind": k.replace("_", " "),
                                                         **_tdetail(state)})


@dataclass
class KernelCall:
    """How a plain kernel is built: the module attribute, its arguments, its pass configs."""

    obj: str
    args: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    dtype_arg: str | None = None
    pass_configs: dict[str, Any] = field(default_factory=dict)


# -- stages ---------------------------------------------------------------------------------


def trace_stage(ctx: Any, state: CellState, fsite: dict[str, Any] | None,
                factory: str | None, call: KernelCall | None = None) -> tuple[Any, Any]:
    """Import the kernel file and build its PrimFunc (timed as part of ``lower``)."""
    from laya_tui.families.tilelang.modules import (
        find_kernel_object,
        import_kernel_file,
        loaded_files,
    )

    t0 = time.perf_counter()
    try:
        state.stage = "import"
        mod = state.module = import_kernel_file(state.file)
        folder = os.path.dirname(state.file)
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            # A plain folder's modules load by path, out of the worker's import tracking
            # (which covers package folders precisely): depend on what is loaded from it.
            for dep in loaded_files(folder):
                ctx.depends_on(dep)
        state.stage = "factory"
        if state.kind in ("file", "jit", "primfunc"):
            named = call.obj if call is not None and state.kind != "file" else None
            func, jit = find_kernel_object(mod, named, call.args if call else None)
            if jit is not None and call is not None:
                call.pass_configs = {**call.pass_configs, **{
                    str(getattr(k, "value", k)): v
                    for k, v in (getattr(jit, "pass_configs", None) or {}).items()}}
            return func, None
        fn = getattr(mod, factory or state.kernel, None)
        if fn is None:
            raise LookupError(f"{state.file} no longer defines {factory or state.kernel}()")
        if fsite is None or fsite.get("line") is None:
            try:
                fsite = {"file": state.file, "line": inspect.getsourcelines(fn)[1],
                         "func": fn.__name__}
            except (OSError, TypeError):
                pass
        example = _example(mod, fn)
        args = example.args if example is not None else ()
        kwargs = dict(example.kwargs) if example is not None else {}
        func = fn(*args, **kwargs, dtype=state.dtype, cpu=state.spec == "cpu")
        return func, example
    except Exception as exc:  # noqa: BLE001 - a broken kernel is this cell's diagnostic
        diag = from_exception(exc, stage=state.stage, target=state.target,
                              kernel_file=state.file, factory_site=fsite)
        if state.stage == "factory" and state.kind == "factory" and isinstance(exc, TypeError):
            diag.fix = ("a factory takes shapes, dtype= and cpu=; give its module an "
                        "example() returning kernels.common.Example")
        raise StageFailed(diag) from exc
    finally:
        state.seconds["trace"] = time.perf_counter() - t0


def _example(mod: Any, fn: Any) -> Any:
    """The module's ``example()`` for this factory (``example_<factory>()`` wins)."""
    maker = getattr(mod, f"example_{fn.__name__}", None) or getattr(mod, "example", None)
    if maker is None:
        return None
    ex = maker(seed=SEED) if "seed" in inspect.signature(maker).parameters else maker()
    return ex


def pass_config(call: KernelCall | None = None) -> dict[str, Any]:
    """The cell's pass configuration: the kernel's own (``@tilelang.jit(pass_configs=...)``)
    plus ``#line`` directives, so compiler errors name kernel lines."""
    import tilelang

    config: dict[str, Any] = dict(call.pass_configs) if call else {}
    key = getattr(tilelang.transform.PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
    if key is not None:
        config.setdefault(str(getattr(key, "value", key)), True)
    return config


def lower_stage(ctx: Any, state: CellState, func: Any, fsite: dict[str, Any] | None,
                call: KernelCall | None = None) -> tuple[Any, Any]:
    """``tilelang.lower(..., enable_device_compile=False)`` under TileLang's pass
    instrumentation (:mod:`laya_tui.families.tilelang.passlog`): per-pass seconds, and the IR each
    pass received kept by reference for a failure."""
    import tilelang
    from tvm.target import Target

    from laya_tui.families.tilelang.build import cache_root
    from laya_tui.families.tilelang.passlog import PassLog, lowering_session

    state.stage = "lower"
    tgt = Target(cuda_target_spec() if state.target == "cuda" else state.target)
    config = pass_config(call)
    state.extra["pass_configs"] = {k: v for k, v in config.items()
                                   if isinstance(v, (bool, int, float, str))}
    log = PassLog()
    session, instruments = lowering_session(state.name, log)
    t0 = time.perf_counter()
    try:
        with session, tilelang.transform.PassContext(opt_level=3, config=config,
                                                     instruments=instruments()), tgt:
            artifact = tilelang.lower(func, target=tgt, enable_device_compile=False)
    except Exception as exc:  # noqa: BLE001 - the lowering diagnostic is the result
        state.seconds["lower"] = time.perf_counter() - t0 + state.seconds.get("trace", 0.0)
        ctx.timing(f"{state.name}/lower", state.seconds["lower"], detail=_tdetail(state))
        _note_passes(state, log)
        state.extra["_passlog"] = log
        raise StageFailed(from_exception(exc, stage="lower", target=state.target,
                                         kernel_file=state.file, factory_site=fsite,
                                         tracker=log, source_func=func)) from exc
    state.seconds["lower"] = time.perf_counter() - t0 + state.seconds.get("trace", 0.0)
    ctx.timing(f"{state.name}/lower", state.seconds["lower"], detail=_tdetail(state))
    _note_passes(state, log)
    state.outcome = "lowered"
    src_dir = os.path.join(cache_root(ctx.options), "src", _safe(state.kernel))
    os.makedirs(src_dir, exist_ok=True)
    path = os.path.join(src_dir, _safe(state.label) + (".cu" if state.target == "cuda" else ".c"))
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(artifact.kernel_source))
    state.extra["generated_source"] = path
    ctx.artifact(f"{state.name}/source", path,
                 detail={"kind": "generated source", **_tdetail(state)})
    return artifact, tgt


def _note_passes(state: CellState, log: Any) -> None:
    """Per-pass seconds (TileLang's pass timing) into the cell's detail."""
    timings = log.timings()
    if timings:
        state.extra["passes"] = timings


def build_stage(ctx: Any, state: CellState, func: Any, artifact: Any,
                tgt: Any) -> tuple[str, str] | None:
    """Compile the wrapped source (C++ for c, nvcc for cuda): ``(library, source)`` or None
    when there is nothing to run."""
    from laya_tui.families.tilelang.build import (
        build_library,
        cache_root,
        can_link_cuda,
        compiler_for,
        wrap_source,
    )

    state.stage = "build"
    if not compiler_for(state.target):
        what = "nvcc" if state.target == "cuda" else "a C++ compiler"
        note = f"build skipped: {what} not found on this machine (lowered only)"
        state.extra["build_skipped"] = note
        state.extra["not_run"] = "no nvcc" if state.target == "cuda" else "no C++ compiler"
        ctx.log(note, subject=state.name)
        return None
    link = state.target != "cuda" or can_link_cuda()
    t0 = time.perf_counter()
    try:
        code = wrap_source(func, artifact, tgt)
        result = build_library(code, tgt, cache_root(ctx.options), link=link)
    except Exception as exc:  # noqa: BLE001 - wrapper generation failed: a build diagnostic
        state.seconds["build"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/build", state.seconds["build"], detail=_tdetail(state))
        raise StageFailed(from_exception(exc, stage="build", target=state.target,
                                         kernel_file=state.file)) from exc
    state.seconds["build"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/build", state.seconds["build"],
               detail={**_tdetail(state), "cached": result.cached})
    state.extra["command"] = " ".join(result.command)
    state.extra["build_cached"] = result.cached
    state.extra["wrapped_source"] = result.source_path
    if not result.ok:
        raise StageFailed(from_compiler(result.output, result.command, target=state.target,
                                        source_path=result.source_path,
                                        returncode=result.returncode))
    state.outcome = "built"
    if not result.linked:
        state.extra["linked"] = False
        state.extra["run_skipped"] = _no_gpu_reason(linked=False)
        state.extra["not_run"] = _no_gpu_cause()
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return None
    return str(result.lib_path), code


def _no_gpu_cause() -> str:
    """``detail.not_run`` of a cuda cell built, not linked: no GPU, or no driver to link."""
    try:
        import torch

        return "no libcuda" if torch.cuda.is_available() else "no GPU"
    except Exception:  # noqa: BLE001
        return "no GPU"


def _no_gpu_reason(*, linked: bool) -> str:
    """Why a cuda cell was built but not run here."""
    how = ("compiled with nvcc to an object only, no libcuda (NVIDIA driver) to link"
           if not linked else "lowered and built with nvcc")
    try:
        import torch

        gpu = torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        gpu = False
    if not gpu:
        return f"no CUDA device here (torch.cuda.is_available() is False): {how}, not run"
    return f"{how}, not run"


def _run(ctx: Any, state: CellState, func: Any, artifact: Any, tgt: Any,
         built: tuple[str, str], example: Any) -> None:
    """Run on the CPU (c) or the GPU (cuda) and compare every output with the reference."""
    import torch

    if example is None:
        why = (state.no_reference or "a plain TileLang file has no example() giving inputs "
               "and a reference") if state.kind != "factory" else "the module defines no example()"
        state.extra["run_skipped"] = f"{why}: lowered and built only"
        state.extra["not_run"] = "no reference to compare with"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    if state.target == "cuda" and not torch.cuda.is_available():
        state.extra["run_skipped"] = _no_gpu_reason(linked=True)
        state.extra["not_run"] = "no GPU"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return
    state.stage = "run"
    device = state.device
    dl = DTYPES.get(state.dtype, state.dtype)
    t0 = time.perf_counter()
    try:
        torch.manual_seed(SEED)
        tensors, promoted = example.materialize(state.dtype, device)
        expected = example.expected(promoted, state.dtype)
        launch(state, func, artifact, tgt, built, tensors)
        actual = example.actual(tensors)
    except Exception as exc:
        state.seconds["run"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/run", state.seconds["run"], detail=_tdetail(state))
        if isinstance(exc, StageFailed):
            raise
        raise StageFailed(from_exception(exc, stage="run", target=state.target,
                                         kernel_file=state.file)) from exc
    checks, failures = compare_outputs(
        ctx, example, state.name, actual, expected, dtype=state.dtype, cpu=state.spec == "cpu",
        detail={"dtype": dl, "target": state.target, "spec": state.spec,
                "kernel": state.kernel, "seed": SEED})
    state.seconds["run"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/run", state.seconds["run"], detail=_tdetail(state))
    state.extra["checks"] = checks
    if failures:
        raise StageFailed(Diagnostic(stage="run", exception="ToleranceExceeded",
                                     line=failures[0], text="\n".join(failures)))
    state.outcome = "ran"


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


def launch(state: CellState, func: Any, artifact: Any, tgt: Any, built: tuple[str, str],
           tensors: dict[str, Any]) -> None:
    """Load the built kernel and call it on ``tensors`` (in place; synchronised on a GPU).

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
        kernel = load_kernel(func, artifact, tgt, built[1], built[0])
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


# -- CUDA failures -----------------------------------------------------------------------------

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


def first_line_of(text: str) -> str:
    """First non-empty line of ``text``."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())[:300]


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


# -- the summary signal ----------------------------------------------------------------------


def _emit_summary(ctx: Any, state: CellState) -> None:
    failed = state.outcome in ("lower-failed", "build-failed", "run-failed", NOT_EXAMINED)
    d = state.diag
    total = sum(v for k, v in state.seconds.items() if k != "trace")
    ctx.lowering(state.name, passed=not failed, reason=d.line if (failed and d) else None,
                 site=d.site if (failed and d and d.site) else None,
                 fix=d.fix if (failed and d) else None,
                 seconds=round(total, 6), detail=state.detail())


def _tdetail(state: CellState) -> dict[str, Any]:
    return {"kernel": state.kernel, "target": state.target,
            "dtype": DTYPES.get(state.dtype, state.dtype), "spec": state.spec}


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in text)
