"""What one lowering-matrix cell knows while it runs, and small shared helpers (worker side).

:class:`CellState` becomes the cell's ``lowering`` signal detail; :class:`KernelCall` says
how a plain kernel is built (its module attribute, arguments and where each came from, pass
configs, ``out_idx``, execution backend); :class:`StageFailed` ends a stage with its
diagnostic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.data_dtype import label
from laya_tui.families.tilelang.diagnostics import Diagnostic
from laya_tui.families.tilelang.discover import cell_label
from laya_tui.families.tilelang.records import (
    CellExtra,
    Detail,
    Globals,
    KernelArgs,
    KernelDetail,
    PassConfigs,
    SiteDict,
)

if TYPE_CHECKING:
    from laya_tui.families.tilelang.capture_stubs import KernelCallRecord
    from laya_tui.families.tilelang.tl_objects import OutIdx, PrimFunc

SEED = 1234
DEFAULT_CUDA_ARCH = "sm_90a"
INSTALL_HINT = "pip install 'laya-tui[tilelang]'"
#: Outcome of a cell that could not be examined (the probe ends with status ``error``).
NOT_EXAMINED = "not-examined"


class StageFailed(Exception):
    """A stage ended the cell with a diagnostic."""

    def __init__(self, diag: Diagnostic) -> None:
        super().__init__(diag.line)
        self.diag = diag


@dataclass
class KernelCall:
    """How a plain kernel is built: the module attribute, its arguments, its pass configs."""

    obj: str
    args: KernelArgs = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    dtype_arg: str | None = None
    pass_configs: PassConfigs = field(default_factory=dict)
    out_idx: OutIdx = None
    execution_backend: str | None = None  # as the file or the table asks (None: default)
    compile_flags: list[str] | str | None = None  # tilelang.compile's, as the file gave them
    func: PrimFunc | None = None  # the PrimFunc the file's own run traced (None: trace
    # with args)
    record: KernelCallRecord | None = None  # the file's calls of the built kernel
    module: ModuleType | None = None  # the module the file's run imported (its ref_program)
    trace_error: BaseException | None = None  # the file's own call of the kernel raised
    run_globals: Globals = field(default_factory=dict)  # globals the file's run set


def dtype_label(dtype: str) -> str:
    """``fp16`` for ``float16``, ``fp8e4m3`` for ``float8_e4m3fn``, ``bf16-fp8e4m3`` for
    ``bfloat16-float8_e4m3fn`` (:func:`laya_tui.families.tilelang.data_dtype.label`)."""
    return label(dtype)


@dataclass
class CellState:
    """What a cell learnt so far; becomes the lowering signal's detail."""

    kernel: str
    target: str
    dtype: str
    spec: str | None
    file: str
    kind: str
    stage: str = "import"
    outcome: str = "lower-failed"
    seconds: dict[str, float] = field(default_factory=dict)
    extra: CellExtra = field(default_factory=lambda: CellExtra())
    diag: Diagnostic | None = None
    module: ModuleType | None = None  # the imported kernel module (not reported)
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

    def detail(self) -> Detail:
        d = self.diag
        out: Detail = {
            "kernel": self.kernel, "target": self.target, "dtype": dtype_label(self.dtype),
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


def has_gpu() -> bool:
    """Whether torch sees a CUDA device here."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def factory_site(path: str, line: int | None, func: str | None) -> SiteDict | None:
    if not line:
        return None
    site: SiteDict = {"file": os.path.realpath(path), "line": int(line)}
    if func:
        site["func"] = func
    return site


def tdetail(state: CellState) -> KernelDetail:
    """The kernel/target/dtype/spec part of every signal's detail."""
    return {"kernel": state.kernel, "target": state.target,
            "dtype": dtype_label(state.dtype), "spec": state.spec}


def safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in text)


def first_line_of(text: str) -> str:
    """First non-empty line of ``text``."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())[:300]
