"""Which ATen ops compiled code really calls when it runs, and how Inductor chose them.

An op counts as called by compiled code only when the frame that called it is a line of an
Inductor output module, reached through nothing but the dispatcher's own plumbing
(``torch/_ops.py``, the ``torch._disable_dynamo`` wrapper) and other dispatch modes that
pass the same op on. An op a dispatch mode calls for its own work is torch's machinery, not
the compiled code: on the first call after a compile, AOTAutograd's
``_AnalyzeCustomOpInputOutputMode`` reads ``param.data`` (an ``aten::detach`` per parameter
input) around every kernel, which is where the false "fallback" detaches came from. Work done
while Dynamo/Inductor compile is not looked at (the region pauses during a compile).

The output line says what Inductor chose: ``extern_kernels.addmm(..., out=buf0)`` is an
extern kernel (a GEMM/convolution library call Inductor prefers to generating code),
``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(...)`` a fallback kernel
(no lowering). Both are eager ATen kernels, which is what the profiler counts inside
``## Call CompiledFxGraph ... ##``; only the second is a fallback. An op outside ``aten``/
``prims`` (a ``torch.library.custom_op`` the output calls as ``torch.ops.ns.op.default``) is
CUSTOM: counted, reached through the custom op's own autograd layer, never a fallback
finding (Inductor cannot generate the user's op). Worker side.
"""

from __future__ import annotations

import linecache
import os
from types import CodeType, FrameType

from laya_tui.families.explain.sites import INDUCTOR, INTERNAL, code_kind

EXTERN, FALLBACK, CUSTOM = "extern", "fallback", "custom"
#: Namespaces of torch's own ops; any other is a custom op.
TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_c10d_functional"})
#: How many frames of dispatch plumbing may sit between an op and the line that called it
#: (a custom op under AOTAutograd's first-call mode takes 9).
MAX_HOPS = 12
_PLUMBING_TAILS = (os.sep + os.path.join("torch", "_ops.py"),
                   os.sep + os.path.join("torch", "_compile.py"),
                   os.sep + os.path.join("torch", "_dynamo", "eval_frame.py"),
                   os.sep + os.path.join("torch", "_library", "autograd.py"))
_plumbing: dict[CodeType, bool] = {}
_lines: dict[tuple[CodeType, int], str] = {}


def _is_plumbing(code: CodeType) -> bool:
    got = _plumbing.get(code)
    if got is None:
        got = _plumbing[code] = code.co_filename.endswith(_PLUMBING_TAILS)
    return got


def kernel_frame(caller: FrameType | None, func: object) -> FrameType | None:
    """The Inductor output frame that called ``func``, or None (see the module docstring)."""
    f, hops = caller, 0
    while f is not None and hops < MAX_HOPS:
        code = f.f_code
        kind = code_kind(code)
        if kind == INDUCTOR:
            return f
        if kind != INTERNAL:
            return None
        if code.co_name == "__torch_dispatch__":
            try:
                passed_on = f.f_locals.get("func") is func
            except Exception:  # noqa: BLE001 - a frame we cannot read is not the op's caller
                return None
            if not passed_on:
                return None  # an op the mode itself called
        elif not _is_plumbing(code):
            return None
        f = f.f_back
        hops += 1
    return None


def call_kind(frame: FrameType, func: object = None) -> str:
    """CUSTOM for a custom op, EXTERN for an ``extern_kernels.*`` line, else FALLBACK."""
    ns = getattr(func, "namespace", None)
    if ns is not None and ns not in TORCH_NAMESPACES:
        return CUSTOM
    key = (frame.f_code, frame.f_lineno)
    text = _lines.get(key)
    if text is None:
        text = _lines[key] = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return EXTERN if "extern_kernels." in text else FALLBACK
