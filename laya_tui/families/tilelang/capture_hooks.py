"""The interception behind :mod:`laya_tui.families.tilelang.capture` (worker side).

:class:`Recorder` patches, for the length of one capture only, the places every TileLang
build goes through: ``JITImpl.__call__``/``compile``/``get_tir`` (which kernel, with which
arguments, called from where), ``tilelang.jit.cached`` (what ``tilelang.compile`` and every
jit call end in: the PrimFunc, ``out_idx``, target, execution backend, pass configs),
``JITKernel(...)`` and ``tilelang.lower`` (direct builds, answered with stand-ins so the
run goes on to the file's later kernels), ``AutoTuner.run`` (tuning:
with the tiling given, TileLang compiles it as given; without, the first config stands in
for what a GPU would pick), and the file's comparisons. Everything is restored on exit.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.capture_model import (
    AUTOTUNE_SOURCE,
    CHECK_SECONDS,
    Build,
    Capture,
    JitCall,
    MakerCall,
    TracedCall,
    TraceFailure,
    bound_arguments,
    call_site,
    foreign_key,
    gpu_reason,
    run_globals,
    shorten_deadline,
)
from laya_tui.families.tilelang.capture_patches import patches_installed
from laya_tui.families.tilelang.capture_stubs import (
    ModeState,
    StopCapture,
    StubKernel,
    describe,
)
from laya_tui.families.tilelang.capture_types import is_prim_func
from laya_tui.families.tilelang.records import Globals, KernelArgs, Kwargs, TunedDict

if TYPE_CHECKING:
    from laya_tui.families.tilelang.capture_types import (
        AutoTunerLike,
        OutIdx,
        Registry,
        TracedPrimFunc,
    )

_PASS_CONFIGS_KEY = "__pass_configs__"


def _python_function(jit: object) -> object:
    """The Python function behind a jit kernel (or its AutoTuneImpl)."""
    fn = getattr(jit, "jit_impl", jit)
    fn = getattr(fn, "func", fn)
    return getattr(fn, "orig_func", fn)


class _TuneResult:
    """What ``AutoTuner.run`` returns: the kernel and the config standing for the tuned one."""

    def __init__(self, kernel: object, config: Kwargs | None) -> None:
        self.kernel = kernel
        self.config = config
        self.func = getattr(kernel, "prim_func", None)
        self.latency = 1.0  # a file printing TFLOPS divides by it
        self.ref_latency = 1.0
        self.libcode = ""


class Recorder:
    """Records the builds of one file's run into a :class:`Capture`."""

    def __init__(self, path: str, cap: Capture, kernels: set[str], *,
                 stop_when_done: bool) -> None:
        self.path = path
        self.cap = cap
        self.kernels = set(kernels)
        self.stop_when_done = stop_when_done
        self.entry = "the import"
        self.mod: ModuleType | None = None
        self.names: dict[int, str] = {}  # id(kernel object) -> module attribute
        self.traced: dict[int, TracedCall] = {}
        self.keep: list[TracedPrimFunc] = []  # keeps traced PrimFuncs alive (ids are keys)
        self.stack: list[JitCall] = []
        self.registry: Registry = {}
        self.pending_tune: TunedDict | None = None
        self.grace = False  # the file is given CHECK_SECONDS to reach its check
        self.traced_builds: dict[int, Build] = {}  # PrimFuncs the file traced itself
        self.mode_state = ModeState()
        self.foreign: Globals = {}  # "file::name" -> a kernel another file defines
        self.asked_gpu: str | None = None  # where the file asked torch.cuda.is_available()
        self.after_import: Globals = {}  # the module's globals once it imported
        #: the last call of each wrapped kernel maker: (args, kwargs, site), the arguments of
        #: a kernel made deeper inside it (a maker's maker, a closure)
        self.last_calls: dict[str, MakerCall] = {}
        #: maker -> arguments that replace what the run passes it (the pyproject table of a
        #: kernel made inside it)
        self.overrides: dict[str, KernelArgs] = {}

    # -- the file ---------------------------------------------------------------------------
    def load(self) -> ModuleType:
        """Import the file afresh under a private name (package-relative imports work)."""
        from laya_tui.families.tilelang.modules import package_alias

        folder = os.path.dirname(self.path)
        stem = os.path.splitext(os.path.basename(self.path))[0]
        package = package_alias(folder)
        name = f"_laya_capture_{abs(hash(self.path)) % 10**10}_{stem}"
        if package is not None:
            name = f"{package}._laya_capture_{stem}"
        elif folder not in sys.path:
            sys.path.append(folder)
        spec = importlib.util.spec_from_file_location(name, self.path)
        if spec is None or spec.loader is None:
            raise ImportError(f"not an importable Python file: {self.path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        self.mod = mod  # kernels built while it imports are named from it as it goes
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.modules.pop(name, None)
        self._index(mod)
        self.after_import = dict(vars(mod))
        return mod

    def name_of(self, obj: object) -> str | None:
        """The module attribute holding ``obj`` (a jit kernel, its AutoTuneImpl, a PrimFunc)."""
        name = self.names.get(id(obj))
        if name is None and self.mod is not None:
            self._index(self.mod)
            name = self.names.get(id(obj))
        return name

    def home_key(self, jit: object) -> str | None:
        """``/path/lib.py::name`` when ``jit`` (a jit kernel or its AutoTuneImpl) is defined
        in another file than the one running, else None (its builds are that file's)."""
        fn = _python_function(jit)
        code, name = getattr(fn, "__code__", None), getattr(fn, "__name__", None)
        if code is None or not name:
            return None
        file = os.path.realpath(code.co_filename)
        if file == self.path or not os.path.isfile(file):
            return None
        qualname = getattr(fn, "__qualname__", "") or ""
        if "<locals>" in qualname:  # made inside a top-level maker: named after it, as
            name = qualname.split(".")[0]  # that file's cells are
        key = foreign_key(file, name)
        self.foreign.setdefault(key, jit)
        return key

    def _jit(self, obj: str | None) -> object:
        """The kernel object behind a build's name (the file's attribute, or another
        file's kernel)."""
        if obj is None:
            return None
        jit = self.foreign.get(obj) if "::" in obj else getattr(self.mod, obj, None)
        return getattr(jit, "jit_impl", jit)

    def _index(self, mod: ModuleType) -> None:
        for name, value in vars(mod).items():
            self.names.setdefault(id(value), name)
            inner = getattr(value, "jit_impl", None)
            if inner is not None:
                self.names.setdefault(id(inner), name)

    def wrap_makers(self, mod: ModuleType, tree: ast.Module) -> None:
        """Record the PrimFuncs the file's makers (functions returning a nested
        ``@T.prim_func``) return, so ``tilelang.compile(make(...))`` names its kernel."""
        for name in self.kernels:
            fn = getattr(mod, name, None)
            if not inspect.isfunction(fn) or getattr(fn, "__module__", None) != mod.__name__:
                continue
            setattr(mod, name, self._maker(name, fn))

    def _maker(self, name: str, fn: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object, **kwargs: object) -> object:
            site, _ = call_site(self.path)
            if name in self.overrides:
                bound = inspect.signature(fn).bind_partial(*args, **kwargs)
                bound.arguments.update(self.overrides[name])
                args, kwargs = bound.args, bound.kwargs
            self.last_calls[name] = MakerCall(args, kwargs, site)
            out = fn(*args, **kwargs)
            if is_prim_func(out):
                self.traced[id(out)] = TracedCall(name, "maker", args, kwargs, site)
                self.keep.append(out)
            return out

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    def done(self) -> bool:
        built = {b.obj for b in self.cap.builds}
        return bool(self.kernels) and self.kernels <= built | set(self.cap.failures)

    # -- builds -----------------------------------------------------------------------------
    def _kernel_entry(self, jit: object, args: tuple[object, ...], kwargs: Kwargs
                      ) -> JitCall:
        kwargs = dict(kwargs)
        kwargs.update(kwargs.pop("__tune_params", {}) or {})
        kwargs.pop("__return_compile_arguments", None)
        site, _ = call_site(self.path)
        key = self.home_key(jit)
        if key is not None and site is not None:  # whose call: this file's, not the kernel's
            site = f"{os.path.basename(self.path)}: {site}"
        return JitCall(key or self.name_of(jit), args, kwargs, site)

    def _describe_call(self, obj: str | None, jit: object, args: tuple[object, ...],
                       kwargs: Kwargs,
                       site: str | None) -> tuple[KernelArgs, dict[str, str]]:
        sig = getattr(jit, "signature", None)
        if sig is None and callable(jit):  # (another object has no signature either)
            try:
                sig = inspect.signature(jit)
            except (TypeError, ValueError):
                sig = None
        if sig is None:
            values, given = dict(kwargs), set(kwargs)
        else:
            values, given = bound_arguments(sig, args, kwargs)
        tuned_config = self.pending_tune["config"] if self.pending_tune else {}
        out = {k: describe(v) for k, v in values.items()}
        sources = {}
        refined = self._static_sources(obj, site)
        for k in out:
            if k in (tuned_config or {}):
                sources[k] = AUTOTUNE_SOURCE
            elif k in given:
                sources[k] = refined.get(k) or site or "the file's call"
            else:
                sources[k] = "default"
        return out, sources

    def _static_sources(self, obj: str | None, site: str | None) -> dict[str, str]:
        """The static reading of the call at ``site``: it knows "argparse default --M"."""
        if obj is None or site is None or "::" in obj:
            return {}
        try:
            from laya_tui.families.tilelang.static_provenance import call_sources

            return call_sources(self.path, obj, site)
        except Exception:  # noqa: BLE001 - a source label must never stop the capture
            return {}

    def on_build(self, func: TracedPrimFunc, out_idx: OutIdx, *, target: object = None,
                 execution_backend: str | None = None,
                 pass_configs: Mapping[object, object] | None = None,
                 compile_flags: list[str] | str | None = None, traced_only: bool = False,
                 **_: object) -> StubKernel:
        earlier = self.traced_builds.get(id(func))
        if earlier is not None:  # traced by the file's own get_tir, now compiled
            earlier.out_idx, earlier.target = out_idx, describe(target)
            earlier.execution_backend = execution_backend
            earlier.pass_configs = {str(getattr(k, "value", k)): v
                                    for k, v in dict(pass_configs or {}).items()}
            earlier.compile_flags = compile_flags
            return StubKernel(func, out_idx, earlier.call, self.registry)
        info = self.traced.get(id(func))
        if info is None and self.stack and self.stack[0][0] is not None:
            obj0, a0, k0, s0 = self.stack[0]
            info = TracedCall(obj0, "jit", a0, k0, s0)
        if info is None or info[0] is None:  # not a module attribute: where it was made
            info = self._made_inside(func) or info
        if info is None:
            info = TracedCall(self.name_of(func), "primfunc", (), {}, call_site(self.path)[0])
        obj, kind, args, kwargs, site = info
        jit = self._jit(obj)
        if kind == "maker" and jit is not None:
            jit = getattr(jit, "__wrapped__", jit)
        values, sources = (self._describe_call(obj, jit, args, kwargs, site)
                           if kind != "primfunc" and (kind != "nested" or args or kwargs)
                           else ({}, {}))
        build = Build(obj=obj, kind=kind, func=func, args=values, sources=sources,
                      out_idx=out_idx, target=describe(target),
                      execution_backend=execution_backend, pass_configs={
                          str(getattr(k, "value", k)): v
                          for k, v in dict(pass_configs or {}).items()},
                      compile_flags=compile_flags, site=site, entry=self.entry,
                      raw=(tuple(args), dict(kwargs)), tuned=self.pending_tune,
                      index=len(self.cap.builds), module=self._home_module(obj, jit),
                      run_globals=self._run_globals(obj, jit))
        self.pending_tune = None
        build.call.maker = obj or ""  # what messages call it ("main" is every PrimFunc's name)
        iket = sys.modules.get("tilelang.tools.cuda.iket.session")
        if iket is not None and iket.is_enabled():  # built inside `with iket.session():`
            build.call.session = "iket"
        self.cap.builds.append(build)
        if traced_only:
            self.traced_builds[id(func)] = build
        stub = StubKernel(func, out_idx, build.call, self.registry,
                          config=build.tuned["config"] if build.tuned else None)
        if self.stop_when_done and self.done() and not self.grace:
            self.grace = self.cap.stopped_when_done = True
            done = "every kernel of the file is built"
            if CHECK_SECONDS <= 0 or not shorten_deadline(
                    CHECK_SECONDS, f"{done}; the file did not reach its check within "
                                   f"{CHECK_SECONDS:g} s"):
                raise StopCapture(done)
        return stub

    def _made_inside(self, func: TracedPrimFunc) -> TracedCall | None:
        """``(top-level name, "nested", args, kwargs, site)`` for a PrimFunc whose
        ``@T.prim_func`` is defined inside one of this file's top-level functions or classes
        (TileLang keeps the Python function as ``orig_func``): a maker's maker, a closure,
        a module's ``__init__``. Named after that top-level definition, as the static
        reading names it; None for a PrimFunc defined at module level or in another file."""
        fn = getattr(func, "orig_func", None)
        code, qualname = getattr(fn, "__code__", None), getattr(fn, "__qualname__", "")
        if code is None or "<locals>" not in qualname \
                or os.path.realpath(code.co_filename) != self.path:
            return None
        top = qualname.split(".")[0]
        made = self.last_calls.get(top, MakerCall((), {}, None))
        return TracedCall(top, "nested", made.args, made.kwargs,
                          made.site or call_site(self.path)[0])

    def on_trace_error(self, exc: BaseException) -> None:
        if not self.stack:
            return
        obj, args, kwargs, site = self.stack[0]
        if obj is None or obj in self.cap.failures or isinstance(exc, StopCapture):
            return
        jit = self._jit(obj)
        values, sources = self._describe_call(obj, jit, args, kwargs, site)
        self.cap.failures[obj] = TraceFailure(obj=obj, args=values, sources=sources,
                                              raw=(tuple(args), dict(kwargs)), site=site,
                                              error=exc, gpu=gpu_reason(exc, self.path),
                                              module=self._home_module(obj, jit),
                                              run_globals=self._run_globals(obj, jit))

    def _run_globals(self, obj: str | None, jit: object) -> Globals:
        """The globals the file's run set that the file's own kernel ``obj`` reads."""
        if obj is None or "::" in obj or jit is None:
            return {}
        return run_globals(_python_function(jit), self.mod, self.after_import)

    def _home_module(self, obj: str | None, jit: object) -> ModuleType | None:
        """The module defining another file's kernel, as this run imported it (its
        ``ref_program``); None for the file's own kernels (the capture's module)."""
        if obj is None or "::" not in obj or jit is None:
            return None
        return inspect.getmodule(_python_function(jit))

    # -- the patches ------------------------------------------------------------------------
    def installed(self, *, cuda_on_cpu: bool) -> contextlib.AbstractContextManager[None]:
        """The capture's patches (:mod:`laya_tui.families.tilelang.capture_patches`),
        reporting to this recorder; restored on exit."""
        return patches_installed(self, cuda_on_cpu=cuda_on_cpu)

    def tune(self, tuner: AutoTunerLike) -> _TuneResult:
        """``AutoTuner.run`` during the capture: tiling given -> TileLang's own direct
        compile; else the first config (TileLang would benchmark them all on a GPU)."""
        compile_func, _ = tuner._ensure_jit_functions()
        given = tuner.configs
        if callable(given):
            kargs, kkwargs = tuner._kernel_parameters or ((), ())
            given = given(*kargs, **dict(kkwargs))
        configs = [dict(c) for c in (given or [])]
        params = list(inspect.signature(tuner.fn).parameters)
        if tuner._kernel_parameters is not None and configs:
            key_args, key_kwargs = tuner._kernel_parameters
            tiling = [k for k in configs[0] if k != "pass_configs"]
            fparams = list(getattr(tuner, "_function_parameters", {}) or params)
            if any(k in configs[0] for k, _ in key_kwargs) or any(
                    k in fparams and fparams.index(k) < len(key_args) for k in tiling):
                return _TuneResult(compile_func(), None)
        if not configs:
            raise StopCapture("@autotune has no configs")
        top = configs[0]
        arg = {k: v for k, v in top.items() if k in params}
        arg[_PASS_CONFIGS_KEY] = top.get("pass_configs")
        self.pending_tune = {"configs": len(configs), "config": {
            k: describe(v) for k, v in top.items()}}
        return _TuneResult(compile_func(**arg), top)
