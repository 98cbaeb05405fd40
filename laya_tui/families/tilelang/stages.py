"""The trace, lower and build stages of a lowering-matrix cell (worker side).

* trace: a factory is called with its ``example()`` shapes; a plain kernel's PrimFunc is the
  one the file's own run traced, else it is traced with the cell's arguments;
* lower: ``tilelang.lower(..., enable_device_compile=False)`` under TileLang's pass
  instrumentation (:mod:`laya_tui.families.tilelang.passlog`);
* build: with the execution backend the user's own ``tilelang.compile`` would use (the
  table's or the file's choice, else TileLang's default: ``cython`` for ``c``, ``tvm_ffi``
  for ``cuda``). ``cython`` builds the same wrapper with the same command as TileLang,
  output captured (:mod:`laya_tui.families.tilelang.build`); every other backend builds a
  real ``tilelang.JITKernel``, whose compiler errors are parsed from its exception.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.cell_state import (
    SEED,
    CellState,
    KernelCall,
    StageFailed,
    cuda_target_spec,
    has_gpu,
    safe_name,
    tdetail,
)
from laya_tui.families.tilelang.diagnostics import (
    Diagnostic,
    from_compiler,
    from_exception,
)
from laya_tui.families.tilelang.records import (
    FactoryExample,
    KernelArgs,
    PassConfigs,
    ProbeContext,
    SiteDict,
)
from laya_tui.families.tilelang.tl_objects import Artifact, Kernel, OutIdx, PrimFunc, Target

if TYPE_CHECKING:
    from laya_tui.families.tilelang.build import Recorded
    from laya_tui.families.tilelang.passlog import PassLog


@dataclass
class Built:
    """A built kernel: a library over TileLang's cython wrapper, or a ``JITKernel``."""

    kind: str  # "library" | "kernel"
    lib: str | None = None
    code: str | None = None
    kernel: Kernel | None = None


# -- trace ------------------------------------------------------------------------------------


def trace_stage(ctx: ProbeContext, state: CellState, fsite: SiteDict | None,
                factory: str | None, call: KernelCall | None = None
                ) -> tuple[PrimFunc, FactoryExample | None]:
    """The kernel's PrimFunc (and a factory's example): timed as part of ``lower``."""
    from laya_tui.families.tilelang.modules import (
        find_kernel_object,
        import_kernel_file,
        loaded_files,
    )

    t0 = time.perf_counter()
    try:
        if call is not None and call.func is not None:  # traced by the file's own run
            state.stage = "factory"
            state.module = call.module
            return call.func, None
        if call is not None and call.trace_error is not None:  # the file's call raised
            state.stage = "import" if call.module is None and isinstance(
                call.trace_error, ImportError) else "factory"  # (or its import)
            state.module = call.module
            raise call.trace_error
        state.stage = "import"
        mod = state.module = import_kernel_file(state.file)
        if call is not None and call.run_globals:  # what the file's __main__ block set
            vars(mod).update(call.run_globals)
        folder = os.path.dirname(state.file)
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            # A plain folder's modules load by path, out of the worker's import tracking
            # (which covers package folders precisely): depend on what is loaded from it.
            for dep in loaded_files(folder):
                ctx.depends_on(dep)
        state.stage = "factory"
        if state.kind in ("file", "jit", "primfunc", "maker"):
            named = call.obj if call is not None and state.kind != "file" else None
            func, jit = find_kernel_object(mod, named, materialize(call.args) if call else None)
            if jit is not None and call is not None:
                call.pass_configs = {**{
                    str(getattr(k, "value", k)): v
                    for k, v in (getattr(jit, "pass_configs", None) or {}).items()},
                    **call.pass_configs}
                if call.out_idx is None:
                    call.out_idx = getattr(jit, "out_idx", None)
                if call.execution_backend is None:
                    call.execution_backend = getattr(jit, "execution_backend", None)
            if call is not None and call.out_idx is None and func is not None:
                attrs = getattr(func, "attrs", None)
                if attrs is not None and "tilelang_out_idx" in attrs:
                    call.out_idx = [int(i) for i in attrs["tilelang_out_idx"]]
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


def materialize(args: KernelArgs) -> KernelArgs:
    """Arguments as a kernel takes them: ``{"tensor": shape, "dtype": d}`` becomes an empty
    CPU tensor of that shape and dtype (an eager kernel reads shapes and dtypes only)."""
    out: KernelArgs = {}
    for k, v in args.items():
        if isinstance(v, dict) and "tensor" in v and "dtype" in v:
            import torch

            from laya_tui.families.tilelang.capture_stubs import torch_dtype

            out[k] = torch.empty(v["tensor"], dtype=torch_dtype(v["dtype"]) or torch.float32)
        else:
            out[k] = v
    return out


def _example(mod: ModuleType, fn: Callable[..., object]) -> FactoryExample | None:
    """The module's ``example()`` for this factory (``example_<factory>()`` wins)."""
    maker = getattr(mod, f"example_{fn.__name__}", None) or getattr(mod, "example", None)
    if maker is None:
        return None
    ex: FactoryExample = maker(seed=SEED) if "seed" in inspect.signature(maker).parameters \
        else maker()
    return ex


# -- lower ------------------------------------------------------------------------------------


def pass_config(call: KernelCall | None = None) -> PassConfigs:
    """The cell's pass configuration: the kernel's own (``@tilelang.jit(pass_configs=...)``)
    plus ``#line`` directives, so compiler errors name kernel lines."""
    import tilelang

    config: PassConfigs = dict(call.pass_configs) if call else {}
    key = getattr(tilelang.transform.PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
    if key is not None:
        config.setdefault(str(getattr(key, "value", key)), True)
    return config


def execution_backend(target: Target, call: KernelCall | None) -> str:
    """The backend ``tilelang.compile`` picks for ``target`` with the file's (or the
    table's) request, else its default (``TILELANG_EXECUTION_BACKEND``, ``auto``)."""
    from tilelang.backend.module import create_backend_context
    from tilelang.env import env

    requested = (call.execution_backend if call else None) or \
        env.get_default_execution_backend()
    try:
        return str(create_backend_context(target, None, requested).execution_backend.name)
    except Exception:  # noqa: BLE001 - an unknown request: TileLang raises at build time
        return str(requested)


def prepared(func: PrimFunc, target: Target, backend: str, out_idx: OutIdx) -> PrimFunc:
    """The PrimFunc TileLang lowers for ``backend``: tvm_ffi stamps its output ABI first."""
    if backend != "tvm_ffi":
        return func
    try:
        from tilelang.backend.module import create_backend_context
        from tilelang.jit.abi import prepare_tvm_ffi_callee_allocated_outputs

        spec = create_backend_context(target, None, backend).execution_backend
        func, _ = prepare_tvm_ffi_callee_allocated_outputs(
            func, out_idx,
            supports_callee_allocated_outputs=spec.supports_callee_allocated_outputs)
    except Exception:  # noqa: BLE001 - the build stage meets the same problem and says so
        pass
    return func


def lower_stage(ctx: ProbeContext, state: CellState, func: PrimFunc, fsite: SiteDict | None,
                call: KernelCall | None = None) -> tuple[Artifact, Target]:
    """``tilelang.lower(..., enable_device_compile=False)`` under TileLang's pass
    instrumentation: per-pass seconds, and the IR each pass received kept by reference for
    a failure."""
    import tilelang
    from tvm.target import Target

    from laya_tui.families.tilelang.build import cache_root
    from laya_tui.families.tilelang.passlog import PassLog, lowering_session

    state.stage = "lower"
    tgt = Target(cuda_target_spec() if state.target == "cuda" else state.target)
    config = pass_config(call)
    state.extra["pass_configs"] = {k: v for k, v in config.items()
                                   if isinstance(v, (bool, int, float, str))}
    state.extra["_pass_configs_all"] = config  # (not in the detail: values may be objects)
    backend = execution_backend(tgt, call)
    state.extra["execution_backend"] = backend
    log = PassLog()
    session, instruments = lowering_session(state.name, log)
    t0 = time.perf_counter()
    try:
        lowered = prepared(func, tgt, backend, call.out_idx if call else None)
        with session, tilelang.transform.PassContext(opt_level=3, config=config,
                                                     instruments=instruments()), tgt:
            artifact = tilelang.lower(lowered, target=tgt, enable_device_compile=False)
    except Exception as exc:  # noqa: BLE001 - the lowering diagnostic is the result
        state.seconds["lower"] = time.perf_counter() - t0 + state.seconds.get("trace", 0.0)
        ctx.timing(f"{state.name}/lower", state.seconds["lower"], detail=tdetail(state))
        _note_passes(state, log)
        state.extra["_passlog"] = log
        raise StageFailed(from_exception(exc, stage="lower", target=state.target,
                                         kernel_file=state.file, factory_site=fsite,
                                         tracker=log, source_func=func)) from exc
    state.seconds["lower"] = time.perf_counter() - t0 + state.seconds.get("trace", 0.0)
    ctx.timing(f"{state.name}/lower", state.seconds["lower"], detail=tdetail(state))
    _note_passes(state, log)
    state.outcome = "lowered"
    src_dir = os.path.join(cache_root(ctx.options), "src", safe_name(state.kernel))
    os.makedirs(src_dir, exist_ok=True)
    path = os.path.join(src_dir, safe_name(state.label) + (".cu" if state.target == "cuda"
                                                            else ".c"))
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(artifact.kernel_source))
    state.extra["generated_source"] = path
    ctx.artifact(f"{state.name}/source", path,
                 detail={"kind": "generated source", **tdetail(state)})
    return artifact, tgt


def _note_passes(state: CellState, log: PassLog) -> None:
    """Per-pass seconds (TileLang's pass timing) into the cell's detail."""
    timings = log.timings()
    if timings:
        state.extra["passes"] = timings


# -- build ------------------------------------------------------------------------------------


def build_stage(ctx: ProbeContext, state: CellState, func: PrimFunc, artifact: Artifact,
                tgt: Target, call: KernelCall | None = None) -> Built | None:
    """Build with the cell's execution backend; None when there is nothing to run."""
    from laya_tui.families.tilelang.build import compiler_for

    state.stage = "build"
    backend = state.extra.get("execution_backend") or execution_backend(tgt, call)
    if not compiler_for(state.target):
        what = "nvcc" if state.target == "cuda" else "a C++ compiler"
        note = f"build skipped: {what} not found on this machine (lowered only)"
        state.extra["build_skipped"] = note
        state.extra["not_run"] = "no nvcc" if state.target == "cuda" else "no C++ compiler"
        ctx.log(note, subject=state.name)
        return None
    lower_only = os.environ.get("LAYA_TUI_TILELANG_LOWER_ONLY", "")
    if lower_only == "1" or state.target in lower_only.split(","):
        note = f"build skipped: LAYA_TUI_TILELANG_LOWER_ONLY={lower_only} (lowered only)"
        state.extra["build_skipped"] = note
        state.extra["not_run"] = "lowered only (LAYA_TUI_TILELANG_LOWER_ONLY)"
        ctx.log(note, subject=state.name)
        return None
    if backend == "cython":
        return _build_cython(ctx, state, func, artifact, tgt)
    return _build_jit_kernel(ctx, state, func, artifact, tgt, backend, call)


def _build_cython(ctx: ProbeContext, state: CellState, func: PrimFunc, artifact: Artifact,
                  tgt: Target) -> Built | None:
    """The cython wrapper TileLang builds, compiled with its command, output captured."""
    from laya_tui.families.tilelang.build import (
        build_library,
        cache_root,
        can_link_cuda,
        wrap_source,
    )

    link = state.target != "cuda" or can_link_cuda()
    t0 = time.perf_counter()
    try:
        code = wrap_source(func, artifact, tgt)
        result = build_library(code, tgt, cache_root(ctx.options), link=link)
    except Exception as exc:  # noqa: BLE001 - wrapper generation failed: a build diagnostic
        state.seconds["build"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/build", state.seconds["build"], detail=tdetail(state))
        raise StageFailed(from_exception(exc, stage="build", target=state.target,
                                         kernel_file=state.file)) from exc
    state.seconds["build"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/build", state.seconds["build"],
               detail={**tdetail(state), "cached": result.cached})
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
        state.extra["run_skipped"] = no_gpu_reason(linked=False)
        state.extra["not_run"] = "no libcuda" if has_gpu() else "no GPU"
        ctx.log(f"run skipped: {state.extra['run_skipped']}", subject=state.name)
        return None
    return Built("library", lib=str(result.lib_path), code=code)


def _build_jit_kernel(ctx: ProbeContext, state: CellState, func: PrimFunc,
                      artifact: Artifact | None, tgt: Target, backend: str,
                      call: KernelCall | None) -> Built:
    """``tilelang.JITKernel(func, out_idx, execution_backend, target, pass_configs)``: the
    object ``tilelang.compile`` returns, built the same way, from the lower stage's IR
    (:mod:`laya_tui.families.tilelang.jit_from_lowered`) instead of lowering it again."""
    from tilelang.jit.kernel import JITKernel

    from laya_tui.families.tilelang.build import Recorded, cache_root, recorded_commands
    from laya_tui.families.tilelang.jit_from_lowered import kernel_from_lowered, supported

    out_idx = call.out_idx if call else None
    state.extra["built_with"] = (f"tilelang.JITKernel(out_idx={out_idx!r}, "
                                 f"execution_backend={backend!r}, target={str(tgt)!r})")
    reuse = artifact is not None and supported()
    t0 = time.perf_counter()
    ran = Recorded([])
    try:
        with recorded_commands() as ran:
            configs, flags = pass_config(call), call.compile_flags if call else None
            if reuse:
                kernel = kernel_from_lowered(func, artifact, out_idx=out_idx,
                                             execution_backend=backend, target=tgt,
                                             pass_configs=configs, compile_flags=flags)
            else:
                kernel = JITKernel(func, out_idx=out_idx, execution_backend=backend,
                                   target=tgt, pass_configs=configs, compile_flags=flags)
    except Exception as exc:  # noqa: BLE001 - the build diagnostic is the result
        _note_commands(state, ran)
        state.seconds["build"] = time.perf_counter() - t0
        ctx.timing(f"{state.name}/build", state.seconds["build"], detail=tdetail(state))
        raise StageFailed(jit_build_diagnostic(exc, state, cache_root(ctx.options))) from exc
    _note_commands(state, ran)
    state.seconds["build"] = time.perf_counter() - t0
    ctx.timing(f"{state.name}/build", state.seconds["build"], detail=tdetail(state))
    state.outcome = "built"
    return Built("kernel", kernel=kernel)


def _note_commands(state: CellState, ran: Recorded) -> None:
    """nvcc's command, as TileLang ran it; or why none ran (its CUDA binary cache)."""
    if ran.commands:
        state.extra["command"] = " ".join(ran.commands[-1])
    elif ran.cached_binary:
        state.extra["command_note"] = ("nvcc did not run: TileLang's CUDA binary cache held "
                                       "this kernel (TILELANG_DISABLE_CACHE=1 rebuilds it)")


def jit_build_diagnostic(exc: BaseException, state: CellState, root: str) -> Diagnostic:
    """A failed ``JITKernel`` build: nvcc/C++ output parsed like a compiler's (TileLang puts
    ``<source>\\nCompilation error:\\n<output>\\nCommand: <cmd>`` in its exception)."""
    text = str(exc)
    if "Compilation error:" not in text:
        return from_exception(exc, stage="build", target=state.target, kernel_file=state.file)
    source, _, rest = text.partition("\nCompilation error:\n")
    output, _, command = rest.partition("\nCommand: ")
    folder = os.path.join(root, "build")
    os.makedirs(folder, exist_ok=True)
    ext = ".cu" if state.target == "cuda" else ".cpp"
    path = os.path.join(folder, hashlib.sha256(source.encode()).hexdigest()[:20] + ext)
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    state.extra["wrapped_source"] = path
    return from_compiler(output, command.strip().splitlines()[0].split() if command.strip()
                         else [], target=state.target, source_path=path, returncode=1)


def no_gpu_reason(*, linked: bool) -> str:
    """Why a cuda cell was built but not run here."""
    how = ("compiled with nvcc to an object only, no libcuda (NVIDIA driver) to link"
           if not linked else "lowered and built with nvcc")
    if not has_gpu():
        return f"no CUDA device here (torch.cuda.is_available() is False): {how}, not run"
    return f"{how}, not run"
