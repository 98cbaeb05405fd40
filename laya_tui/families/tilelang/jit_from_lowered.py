"""A ``tilelang.JITKernel`` built from the IR the lower stage already lowered (worker side).

``JITKernel(func, ...)`` lowers ``func`` from scratch before it compiles the device code.
The cell's lower stage has just run that same lowering (same target, pass configs and
ABI stamping: :func:`laya_tui.families.tilelang.stages.prepared`), under TileLang's
instrumentation, so building with a plain ``JITKernel`` lowered every ``cuda`` cell twice
(about 15 CPU-s of the cold demo, issue 45). Here the kernel's own ``_compile_artifact``
(TileLang's private step between lowering and the adapter) is answered with the lower
stage's host and device modules, and only the rest of what it does runs: device codegen
with the compile, host codegen, the runtime module, then TileLang's own adapter.

This is the one place laya-tui leans on that private step. :func:`supported` checks it
is there as this code expects; when it is not (another TileLang), the caller builds a plain
``JITKernel`` (a second lowering, the same kernel), so a TileLang change costs time, never
a wrong build. ``tests/test_tilelang_jit_reuse.py`` fails if the installed TileLang stops
taking this path.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilelang.engine.param import CompiledArtifact
    from tilelang.jit.kernel import JITKernel
    from tvm.target import Target
    from tvm.tirx import PrimFunc

    from laya_tui.families.tilelang.tl_objects import OutIdx

#: ``JITKernel._compile_artifact``'s parameters in the TileLang this code follows (0.1.15).
_EXPECTED = ("self", "tilelang_func", "pass_configs", "compile_metadata")


@functools.cache  # asked per cuda cell; the installed TileLang does not change under it
def supported() -> bool:
    """True when the installed TileLang has the step :func:`kernel_from_lowered` answers."""
    try:  # (``tilelang.engine.lower`` the attribute is the function, not the module)
        engine_lower = importlib.import_module("tilelang.engine.lower")
        from tilelang.jit.kernel import JITKernel
    except ImportError:
        return False
    step = getattr(JITKernel, "_compile_artifact", None)
    if step is None or not all(hasattr(engine_lower, n) for n in (
            "device_codegen", "device_codegen_without_compile", "host_codegen")):
        return False
    return tuple(inspect.signature(step).parameters) == _EXPECTED


def kernel_from_lowered(func: PrimFunc, lowered: CompiledArtifact, *,
                        out_idx: OutIdx, execution_backend: str,
                        target: Target, pass_configs: dict[str, object] | None,
                        compile_flags: list[str] | str | None) -> JITKernel:
    """``JITKernel(func, out_idx, execution_backend, target, pass_configs, compile_flags)``
    whose lowering is ``lowered`` (``tilelang.lower(..., enable_device_compile=False)`` of
    the same function for the same target): what the constructor would lower itself."""
    from tilelang import tvm
    from tilelang.engine.lower import device_codegen, device_codegen_without_compile, host_codegen
    from tilelang.engine.param import CompiledArtifact
    from tilelang.jit.kernel import JITKernel

    class _FromLowered(JITKernel):  # type: ignore[misc]  # TileLang ships no types
        def _compile_artifact(self, tilelang_func: PrimFunc, pass_configs: dict[str, object],
                              compile_metadata: dict[str, object]) -> CompiledArtifact:
            # What TileLang's _lower_with_context_impl does after lowering, under the
            # PassContext its _compile_artifact opens (the compile flags live there).
            spec = self.execution_backend_spec
            context = self.backend_context
            with tvm.transform.PassContext(opt_level=3, config=pass_configs), self.target:
                codegen = (device_codegen if spec.enable_device_compile
                           else device_codegen_without_compile)
                codegen_mod = codegen(lowered.device_mod, context)
                source = codegen_mod.inspect_source()
                if not spec.enable_host_codegen:
                    return CompiledArtifact(lowered.host_mod, lowered.device_mod,
                                            lowered.params, source, target=context.target,
                                            target_host=context.target_host)
                host_mod = host_codegen(lowered.host_mod, context)
                host_mod.import_module(codegen_mod)
            return CompiledArtifact(host_mod, lowered.device_mod, lowered.params, source,
                                    rt_mod=host_mod, target=context.target,
                                    target_host=context.target_host)

    kernel: JITKernel = _FromLowered(func, out_idx=out_idx, execution_backend=execution_backend,
                                     target=target, pass_configs=pass_configs,
                                     compile_flags=compile_flags)
    return kernel
