"""The portable explain region: stock PyTorch, any device.

A ``TorchDispatchMode`` sees every ATen op the region runs (eager ops, and the eager kernels
compiled code still calls). The per-op path is one dict lookup: only the few ops that can
cast, cross the host boundary or sync (``_to_copy``, ``copy_``, ``_local_scalar_dense``,
``nonzero``...) take a stack walk, plus, on a device region, ops whose output lands on the
CPU, and ops called from Inductor-generated code: a fallback kernel only when an output
line really calls it (:mod:`laya_tui.families.explain.compiled_calls`); extern kernels
(``extern_kernels.mm``) are counted in the region summary. Nothing is recorded while Dynamo
or Inductor compile. Events aggregate per (kind, subject, reason, call site); the site is
the user's line (:mod:`laya_tui.families.explain.sites`), for compiled code the line it was
generated from. :class:`~laya_tui.families.explain.dynamo_watch.DynamoWatch` adds compiles,
recompiles and graph breaks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import CodeType, FrameType, TracebackType
from typing import TYPE_CHECKING, TypeAlias

from laya_tui.families.explain.aggregate import Aggregator, Entry
from laya_tui.families.explain.compiled_calls import FALLBACK, call_kind, kernel_frame
from laya_tui.families.explain.dynamo_watch import DynamoWatch
from laya_tui.families.explain.placement import (
    NO_PLACEMENT_CPU,
    NOT_MEASURED_DEVICE,
    NOT_RECORDED,
    PlacementWatch,
    no_placement,
)
from laya_tui.families.explain.records import Detail, Kwargs, Placement, RegionSummary, SiteDict
from laya_tui.families.explain.sites import user_site

if TYPE_CHECKING:
    import torch
    from torch._ops import OpOverload

    #: An ATen op as the dispatch mode hands it over.
    Op: TypeAlias = OpOverload[..., object]
    #: A recorder's handler of one op: (op, its args, its output, the calling frame).
    Hook: TypeAlias = Callable[[Op, tuple[object, ...], object, FrameType], None]
#: What the region enters: the dispatch mode, built for one recorder.
ModeFactory: TypeAlias = Callable[["Recorder"], AbstractContextManager[object]]

#: User frames kept in ``detail.stack`` beyond the site (in practice the whole user stack).
STACK_DEPTH = 15
#: Elements per chunk of CUDA nonzero: each chunk copies its int32 count to the host.
NONZERO_CHUNK = 1 << 30
#: Index dtypes that are masks (filled with torch's bool and uint8 once torch is imported).
_MASK_DTYPES: set[torch.dtype] = set()

FIX_UPCAST = ("deliberate fp32 section (norm/softmax accuracy); torch.compile or a fused norm "
              "kernel folds the copies away")
FIX_DOWNCAST = ("cast back to the model dtype after an fp32 section; torch.compile or a fused "
                "norm kernel folds it away")
FIX_MIXED = "align the dtypes that meet here (model.to(dtype), inputs, buffers)"
FIX_INDEX = ("index/mask dtype conversion, usually intended; precompute it once if it recurs "
             "in the hot loop")
FIX_D2H = "keep the tensor on the device, or move it once after the hot loop"
FIX_H2D = "create the tensor on the device (device=...) or move it once before the hot loop"
FIX_SYNC = ("avoid reading device values on the host in the forward (.item(), .tolist(), "
            "bool(t)); keep it on device (torch.where, masks)")
FIX_NONZERO = ("data-dependent output size forces a sync: use masks / torch.where, or pass "
               "as_tuple with a known size")
FIX_CPU_OP = "the op ran on the CPU in a device region: create/move its inputs on the device"
FIX_INDUCTOR = ("Inductor has no lowering and calls the eager kernel from compiled code; "
                "expected for attention and custom ops, otherwise add a decomposition")
REASON_INDUCTOR = "inductor fallback kernel (eager ATen kernel called from compiled code)"

_WIDE = {"float32", "float64"}
_NARROW = {"bfloat16", "float16"}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class _Names(dict["Op", str]):
    """OpOverload -> ``aten::mul.Tensor`` (cached)."""

    def __missing__(self, func: Op) -> str:
        schema = func._schema
        name: str = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
        self[func] = name
        return name


class Recorder:
    """Receives the op events of one region and aggregates them."""

    def __init__(self, region: str, *, phase: str | None, with_stack: bool,
                 device: str | None) -> None:
        self.region = region
        self.phase = phase
        self.with_stack = with_stack
        self.agg = Aggregator()
        self.names = _Names()
        #: "cpu" (no device: no per-op check), a device string, or None (learn from ops)
        self.device = device
        self.device_seen = device not in (None, "cpu")
        #: host scalar reads (.item() on CPU tensors): syncs once the model is on a device
        self.cpu_scalar_reads = 0
        self.hooks: dict[int, Hook] = {}
        self.view_ops: set[Op] = set()
        self.index_op: Op | None = None
        #: torch.Tensor, once torch is imported (install_hooks)
        self.tensor: type[torch.Tensor] | None = None
        #: whether ops without a hook are looked at (device region, or compiled code around)
        self.watch = device != "cpu"
        #: >0 while Dynamo/Inductor compile: their work is not the region's
        self.compiling = 0
        #: eager kernels called by compiled code: (op, EXTERN | FALLBACK | CUSTOM) -> calls
        self.kernels: dict[tuple[str, str], int] = {}

    # -- wiring ---------------------------------------------------------------------
    def install_hooks(self) -> None:
        import torch

        aten = torch.ops.aten
        # keyed by id(): OpOverload.__hash__ is a Python method, id() is not
        self.hooks = {
            id(aten._to_copy.default): self._on_to_copy,
            id(aten.copy_.default): self._on_copy_,
            id(aten._local_scalar_dense.default): self._on_scalar,
            id(aten.nonzero.default): self._on_nonzero,
            id(aten.masked_select.default): self._on_nonzero,
            id(aten.index.Tensor): self._on_mask_index,
            id(aten.index_put.default): self._on_mask_index,
            id(aten.index_put_.default): self._on_mask_index,
        }
        self.index_op = aten.index.Tensor
        self.tensor = torch.Tensor
        _MASK_DTYPES.update((torch.bool, torch.uint8))
        self.watch = self.device != "cpu" or inductor_code_loaded()

    # -- recording ------------------------------------------------------------------
    def _where(self, caller: FrameType) -> tuple[SiteDict | None, list[str], bool]:
        return user_site(caller, depth=STACK_DEPTH if self.with_stack else 0)

    def _add(self, kind: str, func: Op, caller: FrameType, *, reason: str, nbytes: int | None,
             fix: str, detail: Detail | None = None) -> None:
        site, stack, compiled = self._where(caller)
        d: Detail = {"region": self.region, "phase": self.phase}
        if detail:
            d.update(detail)
        if compiled:
            d["compiled"] = True
        if self.with_stack and stack:
            d["stack"] = stack
        self.agg.add(kind, self.names[func], reason=reason, site=site, nbytes=nbytes, fix=fix,
                     detail=d)

    def _cast(self, func: Op, src: torch.Tensor, out: torch.Tensor, caller: FrameType) -> None:
        a, b = _dtype_name(src.dtype), _dtype_name(out.dtype)
        if a in _NARROW and b in _WIDE:
            reason, fix = f"upcast {a}->{b}", FIX_UPCAST
        elif a in _WIDE and b in _NARROW:
            reason, fix = f"downcast {a}->{b}", FIX_DOWNCAST
        elif a.startswith(("int", "uint", "bool")) or b.startswith(("int", "uint", "bool")):
            reason, fix = f"cast {a}->{b}", FIX_INDEX
        else:
            reason, fix = f"cast {a}->{b}", FIX_MIXED
        self._add("cast", func, caller, reason=reason, nbytes=out.nbytes, fix=fix,
                  detail={"from": a, "to": b})

    def _transfer(self, func: Op, src_dev: torch.device, dst_dev: torch.device, nbytes: int,
                  caller: FrameType) -> None:
        src_cpu, dst_cpu = src_dev.type == "cpu", dst_dev.type == "cpu"
        self.device_seen = True
        if src_cpu:
            direction, fix = "h2d", FIX_H2D
        elif dst_cpu:
            direction, fix = "d2h", FIX_D2H
        else:
            direction, fix = "d2d", "keep producer and consumer on one device"
        self._add("host_bounce", func, caller, reason=f"{direction} copy {src_dev}->{dst_dev}",
                  nbytes=nbytes, fix=fix, detail={"direction": direction})

    def _moves(self, func: Op, src: torch.Tensor, dst: torch.Tensor, caller: FrameType) -> None:
        if not (src.is_cpu and dst.is_cpu) and (src.is_cpu != dst.is_cpu
                                                or src.device != dst.device):
            self._transfer(func, src.device, dst.device, dst.nbytes, caller)

    def _on_to_copy(self, func: Op, args: tuple[object, ...], out: object,
                    caller: FrameType) -> None:
        tensor = self.tensor
        assert tensor is not None  # hooks run once installed
        src = args[0] if args else None
        if not isinstance(src, tensor) or not isinstance(out, tensor):
            return
        if src.dtype != out.dtype:
            self._cast(func, src, out, caller)
        self._moves(func, src, out, caller)

    def _on_copy_(self, func: Op, args: tuple[object, ...], out: object,
                  caller: FrameType) -> None:
        tensor = self.tensor
        assert tensor is not None
        if len(args) < 2:
            return
        dst, src = args[0], args[1]
        if not isinstance(src, tensor) or not isinstance(dst, tensor):
            return
        if src.dtype != dst.dtype:
            self._cast(func, src, dst, caller)
        self._moves(func, src, dst, caller)

    def _on_scalar(self, func: Op, args: tuple[object, ...], out: object,
                   caller: FrameType) -> None:
        tensor = self.tensor
        assert tensor is not None
        src = args[0] if args else None
        if not isinstance(src, tensor) or src.is_cpu:
            self.cpu_scalar_reads += 1
            return
        self.device_seen = True
        self._add("host_bounce", func, caller, reason="host sync: device scalar read "
                  "(.item()/.tolist()/bool(tensor))", nbytes=src.element_size(), fix=FIX_SYNC,
                  detail={"direction": "d2h", "sync": True})

    def _on_nonzero(self, func: Op, args: tuple[object, ...], out: object,
                    caller: FrameType) -> None:
        tensor = self.tensor
        assert tensor is not None
        src = args[0] if args else None
        if not isinstance(src, tensor) or src.is_cpu:
            self.cpu_scalar_reads += 1
            return
        self.device_seen = True
        numel = max((a.numel() for a in args[:2] if isinstance(a, tensor)), default=0)
        self._add("host_bounce", func, caller, reason="host sync: data-dependent output size",
                  nbytes=nonzero_count_bytes(numel), fix=FIX_NONZERO,
                  detail={"direction": "d2h", "sync": True})

    def _on_mask_index(self, func: Op, args: tuple[object, ...], out: object,
                       caller: FrameType) -> None:
        """``x[mask]`` / ``x[mask] = v``: each bool mask is turned into indices by nonzero
        inside the kernel (below this mode), one count copy each; ``x[mask] = 0.0`` (one
        host scalar) is a masked_fill (no copy). The op is also what :meth:`on_other` sees
        (an Inductor fallback, a CPU op in a device region)."""
        if self.watch:
            self.on_other(func, out, caller)
        tensor = self.tensor
        assert tensor is not None
        indices = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
        masks = [i for i in indices if isinstance(i, tensor)
                 and i.dtype in _MASK_DTYPES and not i.is_cpu]
        if not masks:
            return
        value = args[2] if func is not self.index_op and len(args) > 2 else None
        if len(indices) == 1 and isinstance(value, tensor) and value.is_cpu \
                and value.numel() == 1 \
                and not (len(args) > 3 and args[3]):
            return  # one mask, one host value, no accumulate: masked_fill_, no sync
        self.device_seen = True
        nbytes = sum(nonzero_count_bytes(m.numel()) for m in masks)
        self._add("host_bounce", func, caller, reason="host sync: data-dependent output size "
                  "(boolean mask index)", nbytes=nbytes, fix=FIX_NONZERO,
                  detail={"direction": "d2h", "sync": True, "copies": len(masks)})

    def on_other(self, func: Op, out: object, caller: FrameType) -> None:
        """Ops without a hook: Inductor fallback kernels, and CPU ops in a device region."""
        kf = kernel_frame(caller, func)
        if kf is not None:
            name = self.names[func]
            how = call_kind(kf, func)
            key = (name, how)
            self.kernels[key] = self.kernels.get(key, 0) + 1
            if how == FALLBACK:
                self._add("fallback", func, kf, reason=REASON_INDUCTOR, nbytes=None,
                          fix=FIX_INDUCTOR, detail={"inductor": True})
            return
        if self.device == "cpu":
            return
        t = out
        if isinstance(t, (tuple, list)):
            t = t[0] if t else None
        tensor = self.tensor
        assert tensor is not None
        if not isinstance(t, tensor):
            return
        if not t.is_cpu:
            if not self.device_seen:
                self.device_seen = True
                self.device = str(t.device)
            return
        if not self.device_seen or func in self.view_ops:
            return
        if func.is_view:
            self.view_ops.add(func)
            return
        self._add("fallback", func, caller, reason=f"ran on CPU in a {self.device} region",
                  nbytes=None, fix=FIX_CPU_OP, detail={"device": "cpu"})


def nonzero_count_bytes(numel: int) -> int:
    """Bytes CUDA's nonzero copies to the host: one int32 count per 2**30-element chunk.

    Measured with torch's profiler on an H200 (torch 2.11, CUDA 13): 4 bytes for 1k and 1M
    elements (nonzero, argwhere, masked_select), 12 bytes for 2**31 + 100 elements.
    """
    return 4 * max(1, -(-numel // NONZERO_CHUNK))


_MODE_CLS: ModeFactory | None = None


def mode_class() -> ModeFactory:
    """The region's TorchDispatchMode class (built once, torch imported lazily)."""
    global _MODE_CLS
    if _MODE_CLS is not None:
        return _MODE_CLS
    from torch._ops import HigherOrderOperator
    from torch.utils._python_dispatch import TorchDispatchMode

    skip_code = _skip_code_fn()

    # torch leaves TorchDispatchMode's __init_subclass__ and __init__ unannotated
    class RegionMode(TorchDispatchMode):  # type: ignore[no-untyped-call]
        """Passes every op through; hands the interesting ones to the recorder."""

        @classmethod
        def ignore_compile_internals(cls) -> bool:
            return True

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Without a way to mark the handler's code as skipped, let torch wrap it in
            # torch._disable_dynamo (a little slower per op).
            return skip_code is None

        def __init__(self, rec: Recorder) -> None:
            super().__init__()  # type: ignore[no-untyped-call]  # torch: unannotated
            self.rec = rec
            self.hooks = rec.hooks
            self.other = rec.on_other

        supports_higher_order_operators = True

        def __torch_dispatch__(self, func: Op | HigherOrderOperator, types: tuple[type, ...],
                               args: tuple[object, ...] = (),
                               kwargs: Kwargs | None = None) -> object:
            if isinstance(func, HigherOrderOperator):  # cond, flex_attention...
                return func(*args, **(kwargs or {}))
            op = func._op
            out = op(*args, **kwargs) if kwargs else op(*args)
            if self.rec.compiling:
                return out
            hook = self.hooks.get(id(func))
            if hook is not None:
                hook(func, args, out, sys._getframe(1))
            elif self.rec.watch:
                self.other(func, out, sys._getframe(1))
            return out

    if skip_code is not None:
        skip_code(RegionMode.__dict__["__torch_dispatch__"].__code__)
        for fn in (Recorder.on_other, Recorder._add, Recorder._where, Recorder._cast,
                   Recorder._transfer, Recorder._moves, Recorder._on_to_copy, Recorder._on_copy_,
                   Recorder._on_scalar, Recorder._on_nonzero, Recorder._on_mask_index,
                   user_site, kernel_frame,
                   call_kind):
            skip_code(fn.__code__)
    _MODE_CLS = RegionMode
    return RegionMode


def _skip_code_fn() -> Callable[[CodeType], None] | None:
    """A function marking a code object (and what it calls) as never traced by Dynamo."""
    try:
        from torch._C._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except ImportError:
        return None
    strategy = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)

    def skip(code: CodeType) -> None:
        set_code_exec_strategy(code, strategy)

    return skip


def inductor_code_loaded() -> bool:
    """True once Inductor has loaded generated code in this process (compiled or cached)."""
    cc = sys.modules.get("torch._inductor.codecache")
    cache = getattr(cc, "PyCodeCache", None)
    return bool(getattr(cache, "modules", None))


def resolve_device(model: object = None, device: object = None) -> str | None:
    """The region's device: explicit, else the model's first parameter/buffer, else unknown."""
    if device is not None:
        return str(device)
    if model is not None:
        for getter in ("parameters", "buffers"):
            it = getattr(model, getter, None)
            if it is None:
                continue
            first = next(iter(it()), None)
            if first is not None:
                return str(first.device)
    return None


class PortableRegion:
    """``with PortableRegion(...) as r:`` -> ``r.entries`` (aggregated), ``r.wall_s``."""

    backend = "portable"

    def __init__(self, name: str, *, with_stack: bool = True, phase: str | None = None,
                 model: object = None, device: object = None) -> None:
        self.name = name
        self.phase = phase
        self.with_stack = with_stack
        dev = resolve_device(model, device)
        if dev is None:
            import torch

            accel = getattr(torch, "accelerator", None)
            if accel is None or not accel.is_available():
                dev = "cpu"
        self.rec = Recorder(name, phase=phase, with_stack=with_stack, device=dev)
        self.dynamo = DynamoWatch(with_stack=with_stack)
        self.placement_watch = PlacementWatch()
        self.wall_s = 0.0
        self._mode: AbstractContextManager[object] | None = None

    def __enter__(self) -> PortableRegion:
        self.rec.install_hooks()
        self.dynamo.on_compiled = self._compiled
        self.dynamo.on_compile_start = self._compile_started
        self.dynamo.start()
        self.placement_watch.start()
        self._mode = mode_class()(self.rec)
        self._t0 = time.perf_counter()
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._mode is not None, "__exit__ without __enter__"
        try:
            self._mode.__exit__(exc_type, exc, tb)
        finally:
            self.wall_s = time.perf_counter() - self._t0
            self.dynamo.stop()
            self.placement_watch.stop()
        self.dynamo.emit(self.rec.agg, self.name, self.phase)

    def _compile_started(self) -> None:
        self.rec.compiling += 1

    def _compiled(self) -> None:
        self.rec.compiling = max(0, self.rec.compiling - 1)
        self.rec.watch = True  # compiled code may call Inductor fallback kernels from now on

    @property
    def entries(self) -> list[Entry]:
        return list(self.rec.agg)

    @property
    def no_device(self) -> bool:
        """True when nothing in the region lived on an accelerator."""
        return not self.rec.device_seen and (self.rec.device in (None, "cpu"))

    def summary(self) -> RegionSummary:
        """Region-level facts for the emitted signals' detail."""
        calls: dict[str, dict[str, int]] = {}
        for (name, how), n in sorted(self.rec.kernels.items()):
            calls.setdefault(how, {})[name] = n
        placement = self._placement()
        if calls:  # placement stays the last key, as the detail has always shown it
            return {"region": self.name, "phase": self.phase, "backend": self.backend,
                    "device": self.rec.device or "cpu", "wall_s": round(self.wall_s, 6),
                    "compiled_code_kernels": calls, "placement": placement}
        return {"region": self.name, "phase": self.phase, "backend": self.backend,
                "device": self.rec.device or "cpu", "wall_s": round(self.wall_s, 6),
                "placement": placement}

    def _placement(self) -> Placement:
        """Inductor's generated-kernel placement, or why the region has none."""
        got = self.placement_watch.placement()
        if got is not None:
            return got
        if self.rec.kernels or inductor_code_loaded():
            return no_placement(NOT_RECORDED)
        if self.no_device:
            return no_placement(NO_PLACEMENT_CPU)
        return no_placement(NOT_MEASURED_DEVICE.format(device=self.rec.device))
