"""Stand-ins the capture hands a kernel file instead of compiled kernels (worker side).

While :mod:`laya_tui.families.tilelang.capture` runs a file's own entry point, every kernel
the file builds is recorded and replaced by a :class:`StubKernel`: calling it records the
tensors the file passes and returns zero tensors shaped like the kernel's outputs, so the
file goes on to its own check, which is recorded instead of run (``torch.testing.assert_close``
and ``torch.allclose`` against a stub output, ``profiler.assert_allclose(ref_program)``).
Nothing is compiled and nothing runs on a device. On a machine without a GPU, the capture's
torch mode (:mod:`laya_tui.families.tilelang.capture_torch_mode`, re-exported here) lets the
file build its ``.cuda()`` tensors on the CPU, within the memory limits kept here.

torch and TileLang are imported inside the functions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from laya_tui.families.tilelang.capture_torch_mode import (
    HEAVY_ELEMENTS,
    HEAVY_OPS,
    ModeState,
    OnCuda,
    capture_mode,
    cpu_generator,
    stand_in_bench,
)
from laya_tui.families.tilelang.records import Kwargs

if TYPE_CHECKING:
    import torch

    from laya_tui.families.tilelang.capture_types import (
        Described,
        KernelParam,
        OutIdx,
        Registry,
        TracedPrimFunc,
    )
    from laya_tui.families.tilelang.own_checks import Leaf

__all__ = ["HEAVY_ELEMENTS", "HEAVY_OPS", "MAX_CALLS", "MEMORY_SHARE", "STAND_IN_MAX_BYTES",
           "Check", "KernelCallRecord", "ModeState", "OnCuda", "StopCapture", "StubArtifact",
           "StubKernel", "StubProfiler", "capture_mode", "cpu_generator", "describe",
           "memory_budget", "resident_bytes", "stand_in_bench", "too_big", "torch_dtype"]


class StopCapture(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Ends the file's entry point (time is up, every kernel is built, a stub cannot go on).

    A ``BaseException``, so the file's own ``except Exception`` cannot swallow it."""


@dataclass
class Check:
    """One comparison the file makes against a kernel's output (see
    :mod:`laya_tui.families.tilelang.own_checks`)."""

    output: int  # index into the kernel's outputs (or its call arguments for in-place ones)
    expected: object  # the tensor the file compares with (a node when derived from outputs)
    rtol: float | None
    atol: float | None
    line: int | None  # where the file compares
    how: str  # the check's real name: "torch.testing.assert_close" | "torch.allclose" | ...
    in_place: bool = False  # the output is one of the call's arguments
    trusted: bool = True  # False: the expected tensor may come from a faked heavy op
    actual: object = None  # the compared kernel value: a node over the kernel's outputs
    call: int = 0  # which of the file's distinct calls of the kernel it checks
    options: Kwargs = field(default_factory=dict)  # as the file passed them
    where: str = ""  # " (in check_close(), called at line 27)" for a helper's check
    want: bool = True  # a plain assert: the truth the file's run needs

    @property
    def label(self) -> str:
        """``torch.allclose at line 22 (in check_close(), called at line 27)``."""
        return f"{self.how} at line {self.line}{self.where}"


#: distinct calls of one kernel whose inputs a capture keeps (its checks replay them)
MAX_CALLS = 4


@dataclass
class KernelCallRecord:
    """The calls the file makes to a built kernel: their tensors and outputs."""

    inputs: list[object] = field(default_factory=list)  # the first call's arguments
    outputs: list[torch.Tensor] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    ref_program: Callable[..., object] | None = None  # profiler.assert_allclose's reference
    ref_options: Kwargs = field(default_factory=dict)
    supply_type: object = None  # TileLang's TensorSupplyType the file asked for
    kernel: str = ""  # the kernel's function name
    maker: str = ""  # the file's name for it (jit function, maker, PrimFunc variable)
    #: a TileLang tool whose session the file built the kernel in ("iket": its events need
    #: the session's codegen); the cell builds it in one too
    session: str | None = None
    #: the kernel whose stand-in produced one of this call's inputs (its numbers are not the
    #: file's: nothing may be compared on them)
    inputs_from: str | None = None
    #: the inputs of each distinct call (up to :data:`MAX_CALLS`; the first is ``inputs``)
    calls: list[list[object]] = field(default_factory=list)


def torch_dtype(name: str) -> torch.dtype | None:
    """The torch dtype of a TileLang dtype name (``float8_e4m3`` -> ``torch.float8_e4m3fn``;
    None for a name torch has no dtype of)."""
    import torch

    alias = {"float8_e4m3": "float8_e4m3fn", "float": "float32", "half": "float16",
             "bool": "bool"}
    found = getattr(torch, alias.get(name, name), None)
    return found if isinstance(found, torch.dtype) else None


def describe(value: object) -> Described:
    """A JSON-able form of an argument: tensors as ``{"tensor": shape, "dtype": name}``,
    dtypes as their names, sequences item by item; ``repr`` for anything else."""
    try:
        import torch

        if isinstance(value, torch.Tensor):
            return {"tensor": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
        if isinstance(value, torch.dtype):
            return str(value).removeprefix("torch.")
    except ImportError:
        pass
    if value is None:
        return None
    # as the plain type (TileLang's dtypes are a str subclass)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    mod = type(value).__module__ or ""
    if mod.startswith(("tvm", "tilelang")) and str(value) and "(" not in str(value):
        return str(value)  # a TileLang/TVM dtype or IntImm
    return {"repr": repr(value)[:200]}


class StubArtifact:
    """What ``tilelang.lower`` returns during a capture: the build is recorded, the sources
    are empty, and a kernel made from it is the stand-in."""

    def __init__(self, kernel: StubKernel) -> None:
        self.kernel = kernel
        self.params = kernel.params
        self.kernel_source = ""
        self.host_source = ""

    def __getattr__(self, name: str) -> NoReturn:
        raise StopCapture(f"the file uses tilelang.lower(...).{name} (the capture stops there)")


def _storage(t: object) -> int:
    """The address of a tensor's storage (0 for none): views of one buffer share it."""
    try:
        return int(getattr(t, "untyped_storage")().data_ptr())  # noqa: B009 - any object
    except (AttributeError, RuntimeError):
        return 0


def _tag_base(view: torch.Tensor, leaf: Leaf) -> None:
    """An in-place kernel given a whole-buffer view (``out.reshape(-1)``, ``out.view(n)``)
    writes its base too: the file checks ``out``, which is the written argument reshaped."""
    import torch

    from laya_tui.families.tilelang.own_checks import Op, node_of, tag

    with torch._C.DisableTorchFunction():  # read past the capture's mode: no derived node
        base = getattr(view, "_base", None)
        if base is None or node_of(base) is not None or base.numel() != view.numel() \
                or view.storage_offset() != base.storage_offset() \
                or not (view.is_contiguous() and base.is_contiguous()):
            return
        shape = tuple(base.shape)
    tag(base, Op(torch.reshape, (leaf, shape), {}))


class StubKernel:
    """What the file gets instead of a compiled kernel while it is being captured."""

    def __init__(self, func: TracedPrimFunc, out_idx: OutIdx, record: KernelCallRecord,
                 registry: Registry, config: Kwargs | None = None) -> None:
        self.prim_func = func
        self.out_idx = out_idx
        self._record = record
        self._registry = registry
        self.config = config
        self.latency = 1.0  # a file printing TFLOPS divides by it
        self.ref_latency = 1.0
        if not record.kernel:
            attrs = getattr(func, "attrs", None)
            record.kernel = str(attrs["global_symbol"]) if attrs is not None and \
                "global_symbol" in attrs else str(getattr(func, "__name__", "a kernel"))

    # -- the calls a file makes on a kernel -----------------------------------------------
    def __call__(self, *tensors: object, **kwargs: object
                 ) -> torch.Tensor | list[torch.Tensor] | None:
        import torch

        from laya_tui.families.tilelang.own_checks import Leaf, tag

        rec = self._record
        if not rec.inputs:
            rec.inputs = list(tensors)
            for t in tensors:  # made by another kernel's stand-in: zeros, not the file's data
                hit = self._registry.get(id(t))
                # (an argument another kernel only read is the file's data: an argument
                # counts as written in place only by a kernel that returns nothing)
                if hit is not None and hit[2] is t and hit[0] is not rec \
                        and (hit[1] >= 0 or not hit[0].outputs):
                    rec.inputs_from = hit[0].maker or hit[0].kernel or "another kernel"
                    break
                # a view of memory an in-place kernel wrote (it got ``buf.squeeze(0)``,
                # this one ``buf``): the same storage, another tensor object
                hit = self._registry.get(-_storage(t)) if _storage(t) else None
                if hit is not None and hit[0] is not rec and not hit[0].outputs:
                    rec.inputs_from = hit[0].maker or hit[0].kernel or "another kernel"
                    break
        call = next((n for n, ins in enumerate(rec.calls) if len(ins) == len(tensors) and all(
            a is b for a, b in zip(ins, tensors, strict=True))), None)
        if call is None and len(rec.calls) < MAX_CALLS:
            rec.calls.append(list(tensors))
            call = len(rec.calls) - 1
        outs = self._outputs(tensors)
        for i, t in enumerate(outs):
            self._registry[id(t)] = (rec, i, t)
            if call is not None:  # its checks are made again with the real kernel
                tag(t, Leaf(rec, call, i))
        for i, t in enumerate(tensors):  # an in-place kernel writes its arguments
            if isinstance(t, torch.Tensor):
                self._registry.setdefault(id(t), (rec, -1 - i, t))
                if not outs and _storage(t):  # keyed by minus its storage's address
                    self._registry.setdefault(-_storage(t), (rec, -1 - i, t))
                if call is not None and not outs:
                    tag(t, Leaf(rec, call, -1 - i))
                    if i in self._written():
                        _tag_base(t, Leaf(rec, call, -1 - i))
        if not rec.outputs:
            rec.outputs = outs
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def _written(self) -> set[int]:
        """The argument positions the kernel writes (read once from its PrimFunc)."""
        known: set[int] | None = self.__dict__.get("_written_params")  # (no __getattr__)
        if known is None:
            from laya_tui.families.tilelang.capture_model import written_params

            known = self.__dict__["_written_params"] = written_params(self.prim_func) or set()
        return known

    def get_profiler(self, *args: object, **kwargs: object) -> StubProfiler:
        supply = kwargs.get("tensor_supply_type", args[0] if args else None)
        self._record.supply_type = supply
        return StubProfiler(self._record, self)

    @property
    def params(self) -> list[KernelParam]:
        """TileLang's own reading of the PrimFunc's parameters (``kernel.params``)."""
        from tilelang.engine.lower import extrac_params

        return list(extrac_params(self.prim_func))

    @property
    def kernel_source(self) -> str:
        return ""

    @property
    def host_source(self) -> str:
        return ""

    def get_kernel_source(self, *args: object, **kwargs: object) -> str:
        return ""

    def get_host_source(self, *args: object, **kwargs: object) -> str:
        return ""

    def show_source(self, *args: object, **kwargs: object) -> None:
        return None

    def export_library(self, *args: object, **kwargs: object) -> None:
        return None

    def __getattr__(self, name: str) -> NoReturn:
        raise StopCapture(f"the file uses kernel.{name} (the capture stops there)")

    # -- outputs --------------------------------------------------------------------------
    def _outputs(self, tensors: tuple[object, ...]) -> list[torch.Tensor]:
        import torch

        func = self.prim_func
        idx = self.out_idx
        if idx is None:
            return []
        n = len(func.params)
        wanted = [i if i >= 0 else n + i for i in ([idx] if isinstance(idx, int) else idx)]
        names: dict[str, int] = {}
        inputs = [p for i, p in enumerate(func.params) if i not in wanted]
        for p, t in zip(inputs, tensors, strict=False):
            buf = func.buffer_map.get(p)
            if buf is None or not isinstance(t, torch.Tensor):
                continue
            for dim, size in zip(buf.shape, t.shape, strict=False):
                if hasattr(dim, "name"):
                    names[str(dim.name)] = int(size)
        device = next((t.device for t in tensors if isinstance(t, torch.Tensor)), None)
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        outs: list[torch.Tensor] = []
        for i in wanted:
            buf = func.buffer_map.get(func.params[i])
            dtype = torch_dtype(str(buf.dtype)) if buf is not None else None
            if buf is None or dtype is None:
                raise StopCapture("a kernel output the capture cannot allocate")
            shape = [int(getattr(d, "value", 0)) if hasattr(d, "value")
                     else names.get(str(getattr(d, "name", "")), 1) for d in buf.shape]
            outs.append(torch.zeros(shape, dtype=dtype, device=device))
        return outs


class StubProfiler:
    """``kernel.get_profiler()`` during the capture: records the file's reference check."""

    def __init__(self, record: KernelCallRecord, kernel: StubKernel | None = None) -> None:
        self._record = record
        self.func = kernel  # TileLang's profiler.func: the kernel itself
        self.adapter = kernel

    def assert_allclose(self, reference_program: Callable[..., object], *args: object,
                        **kwargs: object) -> None:
        self._record.ref_program = reference_program
        self._record.ref_options = {k: v for k, v in kwargs.items()
                                    if k in ("atol", "rtol", "max_mismatched_ratio")}

    def do_bench(self, *args: object, **kwargs: object) -> float:
        return 1.0

    def run_once(self, func: Callable[..., object] | None = None) -> object:
        """As TileLang's ``Profiler.run_once``: inputs made by the kernel's tensor supply,
        then ``func`` (else the kernel's stand-in) called with them; its outputs returned."""
        from tilelang.utils.tensor import TensorSupplyType, get_tensor_supply

        kernel = self.func
        if kernel is None:
            raise StopCapture("the file uses profiler.run_once (the capture stops there)")
        params = kernel.params
        out = kernel.out_idx
        out = [] if out is None else [out] if isinstance(out, int) else list(out)
        result = {i % len(params) for i in out} if params else set()
        supply = get_tensor_supply(self._record.supply_type or TensorSupplyType.Auto)
        try:
            ins = [supply(p) for i, p in enumerate(params) if i not in result]
        except ValueError as exc:  # a dynamic shape: TileLang's own supply refuses it too
            raise StopCapture(f"profiler.run_once: {exc}") from exc
        return (func or kernel)(*ins)

    def __getattr__(self, name: str) -> NoReturn:
        raise StopCapture(f"the file uses profiler.{name} (the capture stops there)")


#: bytes of a faked result up to which the CPU stand-in always makes it; a larger one is made
#: only while the run's process stays within :func:`memory_budget` with it (an attention
#: reference at sequence 16,384 makes a 17 GiB score matrix, a softmax of it another: the
#: kernel's OOM killer ended the worker), else the capture stops there
STAND_IN_MAX_BYTES = 1 << 30
#: the share of the machine's memory a capture's process may hold with a faked result
MEMORY_SHARE = 4


def memory_budget() -> int:
    """Bytes a capture's process may hold: a quarter of the machine's memory, or of its
    cgroup's limit where that is lower."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            text = f.read().strip()
        if text.isdigit():
            total = min(total, int(text))
    except OSError:
        pass
    return total // MEMORY_SHARE


def resident_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm; elsewhere its peak)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def too_big(size: int) -> str | None:
    """Why a faked result of ``size`` bytes may not be made here (None: it may)."""
    if size <= STAND_IN_MAX_BYTES:
        return None
    held, budget = resident_bytes(), memory_budget()
    if held + size <= budget:
        return None
    return (f"with the {held / 2**30:.1f} GiB the run holds, more than the "
            f"{budget / 2**30:.1f} GiB (1/{MEMORY_SHARE} of this machine's memory) a capture "
            "may use")
