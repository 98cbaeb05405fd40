"""Launching a built TileLang kernel in the worker: the call (a ``JITKernel``'s outputs
copied back into their tensors), the kernel's own device assertions read back from the
probe's log, and a sticky CUDA error marking this worker's context as lost."""

from __future__ import annotations

import os

from laya_tui.families.tilelang.cell_state import CellState, StageFailed, first_line_of
from laya_tui.families.tilelang.diagnostics import Diagnostic, from_exception
from laya_tui.families.tilelang.records import Tensors
from laya_tui.families.tilelang.stages import Built
from laya_tui.families.tilelang.tl_objects import Artifact, Kernel, OutIdx, PrimFunc, Target

__all__ = ["as_list", "launch", "out_indices", "sync"]


def out_indices(out_idx: OutIdx, n: int) -> set[int]:
    if out_idx is None:
        return set()
    items = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    return {int(i) if int(i) >= 0 else n + int(i) for i in items}


def sync(state: CellState) -> None:
    if state.device == "cuda":
        import torch

        torch.cuda.synchronize()


def as_list(out: object) -> list[object]:
    if out is None:
        return []
    return list(out) if isinstance(out, (list, tuple)) else [out]



def launch(state: CellState, func: PrimFunc, artifact: Artifact, tgt: Target, built: Built,
           tensors: Tensors) -> None:
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
        if built.kernel is not None:  # (kind "kernel")
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


def _call_jit_kernel(kernel: Kernel, tensors: Tensors) -> None:
    """A ``JITKernel`` with ``out_idx`` takes the inputs only and returns its outputs (as
    ``tilelang.compile``'s kernels do): they are copied into their tensors of ``tensors``."""
    import torch

    names = list(tensors)
    outs = sorted(out_indices(getattr(kernel, "out_idx", None), len(names)))
    if not outs:
        kernel(*tensors.values())
        return
    got = as_list(kernel(*[tensors[n] for i, n in enumerate(names) if i not in outs]))
    for i, out in zip(outs, got, strict=False):
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"the kernel returned a {type(out).__name__} for output "
                            f"{names[i]!r}, not a tensor")
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
