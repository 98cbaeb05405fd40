"""The patches a capture installs (worker side), for :class:`Recorder` in
:mod:`laya_tui.families.tilelang.capture_hooks`: ``JITImpl.__call__``/``compile``/``get_tir``,
``tilelang.jit.cached``, ``JITKernel(...)``, ``tilelang.lower``, ``AutoTuner.run``, the file's
comparisons and ``do_bench``; without a GPU, the CUDA answers a GPU run would get. Everything
is restored on exit."""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from laya_tui.families.tilelang.capture_model import TracedCall, call_site, record_check
from laya_tui.families.tilelang.capture_stubs import (
    StubArtifact,
    StubKernel,
    capture_mode,
    cpu_generator,
    stand_in_bench,
)
from laya_tui.families.tilelang.capture_types import is_prim_func

if TYPE_CHECKING:
    from laya_tui.families.tilelang.capture_hooks import Recorder
    from laya_tui.families.tilelang.capture_types import AutoTunerLike, OutIdx, TracedPrimFunc

__all__ = ["patches_installed"]

_DETECTOR = "laya-tui-capture"  # the target detector a capture without a GPU adds
_ARCH = "9.0"  # the compute capability it answers (an H100/H200: sm_90a)


_STUB_SUBCLASSES: dict[type, type] = {}


def _own_field(name: str) -> Callable[[object], object]:
    def get(self: object) -> object:
        return self.__dict__[name]

    return get


def _stub_subclass(base: type, fields: Iterable[str]) -> type:
    """A subclass of ``base`` (``JITKernel``) that behaves as :class:`StubKernel`: what a
    ``JITKernel(...)`` object the file constructs becomes (its layout is ``base``'s; the
    stand-in's own fields shadow ``base``'s properties such as ``out_idx``)."""
    cls = _STUB_SUBCLASSES.get(base)
    if cls is None:
        ns: dict[str, object] = {k: v for k, v in vars(StubKernel).items()
                                 if k not in ("__dict__", "__weakref__", "__init__")}
        for name in fields:
            if name not in ns and isinstance(inspect.getattr_static(base, name, None),
                                             property):
                ns[name] = property(_own_field(name))
        cls = _STUB_SUBCLASSES[base] = type(f"Stub{base.__name__}", (base,), ns)
    return cls



@contextlib.contextmanager
def patches_installed(rec: Recorder, *, cuda_on_cpu: bool) -> Iterator[None]:
    """Every patch of one capture, reporting to ``rec``; restored on exit."""
    import tilelang
    import torch
    from tilelang.autotuner.tuner import AutoTuner
    from tilelang.jit import JITImpl
    from tilelang.jit.kernel import JITKernel

    jit_mod = sys.modules["tilelang.jit"]
    saved: list[tuple[object, str, object]] = []

    def patch(owner: object, name: str, value: object) -> None:
        if owner is None or not hasattr(owner, name):
            return
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    orig_call, orig_compile, orig_get_tir = JITImpl.__call__, JITImpl.compile, \
        JITImpl.get_tir

    def around(orig: Callable[..., object]) -> Callable[..., object]:
        def wrapped(jit: object, *args: object, **kwargs: object) -> object:
            rec.stack.append(rec._kernel_entry(jit, args, kwargs))
            try:
                out = orig(jit, *args, **kwargs)
            except BaseException as exc:
                rec.on_trace_error(exc)
                raise
            finally:
                entry = rec.stack.pop()
            if orig is orig_get_tir and is_prim_func(out):
                obj, a, k, site = entry
                rec.traced.setdefault(id(out), TracedCall(obj, "jit", a, k, site))
                rec.keep.append(out)
                if not rec.stack and id(out) not in rec.traced_builds:
                    # the file traced the kernel itself (get_tir): what it builds
                    rec.on_build(out, getattr(jit, "out_idx", None),
                                 target=getattr(jit, "target", None),
                                 execution_backend=getattr(jit, "execution_backend",
                                                           None),
                                 pass_configs=getattr(jit, "pass_configs", None),
                                 compile_flags=getattr(jit, "compile_flags", None),
                                 traced_only=True)
            return out
        return wrapped

    # TileLang calls these with its own values (untyped: its PrimFunc, out_idx, target,
    # pass configs...), handed on to the recorder as they are
    def cached(func: Any = None, out_idx: OutIdx = None, *args: object, **kwargs: Any
               ) -> StubKernel:
        return rec.on_build(func, out_idx, **kwargs)

    def kernel_init(kernel: object, func: Any = None, out_idx: OutIdx = None, *a: object,
                    **kw: Any) -> None:
        # ``tilelang.JITKernel(prim, out_idx=..., target=...)``: the file's own build;
        # the new object becomes the stand-in (patching __new__ instead leaves CPython's
        # type slot behind once restored)
        stub = rec.on_build(func, out_idx, **kw)
        kernel.__class__ = _stub_subclass(type(kernel), vars(stub))
        kernel.__dict__.update(vars(stub))

    def lower(func: TracedPrimFunc, *args: object, **kwargs: object) -> StubArtifact:
        target = kwargs.get("target", args[0] if args else None)
        return StubArtifact(rec.on_build(func, None, target=target))

    def tune(tuner: AutoTunerLike, *args: object, **kwargs: object) -> object:
        return rec.tune(tuner)

    def compare(how: str, orig: Callable[..., object]) -> Callable[..., object]:
        """The file's comparison ``how`` (its real name): recorded when a side derives
        from a kernel's output, else the original answers."""
        def check(*args: object, **kwargs: object) -> object:
            got = record_check(rec.registry, how, args, kwargs, rec.path, rec.mode_state)
            if got is NotImplemented:
                try:
                    return orig(*args, **kwargs)
                except AssertionError:
                    # tensors the file computed from stand-in outputs some other way:
                    # its comparison means nothing here, and the run goes on to the
                    # kernels a GPU run builds after it
                    rec.cap.unchecked += 1
            return None
        return check

    patch(JITImpl, "__call__", around(orig_call))
    patch(JITImpl, "compile", around(orig_compile))
    patch(JITImpl, "get_tir", around(orig_get_tir))
    patch(jit_mod, "cached", cached)
    patch(JITKernel, "__init__", kernel_init)
    patch(tilelang, "lower", lower)
    patch(sys.modules.get("tilelang.engine"), "lower", lower)
    patch(AutoTuner, "run", tune)
    patch(torch.testing, "assert_close", compare("torch.testing.assert_close",
                                                 torch.testing.assert_close))
    with contextlib.suppress(ImportError):  # its name stays the one the file imports
        import tilelang.testing  # noqa: F401
    for modname in ("tilelang.testing", "tilelang.utils.tensor", "tilelang.utils"):
        owner = sys.modules.get(modname)
        if owner is not None and hasattr(owner, "torch_assert_close"):
            patch(owner, "torch_assert_close", compare(
                f"{modname}.torch_assert_close", owner.torch_assert_close))
    patch(sys.modules.get("tilelang.testing"), "main", lambda *a, **k: None)
    with contextlib.suppress(ImportError):
        import tilelang.profiler.bench
    for modname in ("tilelang.profiler", "tilelang.profiler.bench"):
        patch(sys.modules.get(modname), "do_bench", stand_in_bench)
    detectors: dict[str, object] = {}  # TileLang's target detectors by name
    if cuda_on_cpu:
        patch(torch.cuda, "synchronize", lambda *a, **k: None)
        patch(torch.cuda, "init", lambda *a, **k: None)  # (its tensors live on the CPU)
        patch(torch, "Generator", cpu_generator())
        available = torch.cuda.is_available

        def is_available() -> bool:
            caller = sys._getframe(1).f_code.co_filename
            if rec.asked_gpu is None and os.path.realpath(caller) == rec.path:
                rec.asked_gpu = call_site(rec.path)[0]
            return available()

        patch(torch.cuda, "is_available", is_available)
        # what the detector below answers, asked of nvcc's helper directly
        with contextlib.suppress(ImportError):
            import tilelang.contrib.nvcc
        patch(sys.modules.get("tilelang.contrib.nvcc"), "get_target_compute_version",
              lambda *a, **k: _ARCH)
        # target="auto" on a machine without a GPU: what a GPU run would detect
        from tilelang.backend import target as targets

        detectors = getattr(targets, "_TARGET_DETECTORS", {})
        targets.register_target_detector(_DETECTOR, lambda: {
            "kind": "cuda", "arch": f"sm_{_ARCH.replace('.', '')}a"}, override=True)
    mode = capture_mode(cuda_on_cpu=cuda_on_cpu, state=rec.mode_state,
                        on_compare=lambda how, a, k: record_check(
                            rec.registry, how, a, k, rec.path, rec.mode_state))
    try:
        with mode:
            yield
    finally:
        for patched, name, value in reversed(saved):
            setattr(patched, name, value)
        detectors.pop(_DETECTOR, None)
