"""The capture's torch mode (worker side): the file's comparisons go to the capture, and on
a machine without a GPU its ``cuda`` tensors are built on the CPU and a heavy op on large
inputs (a GPU-sized reference matmul) returns zeros of its result's shape at once, within
the memory limits of :mod:`laya_tui.families.tilelang.capture_stubs`. Also the
``torch.Generator`` and ``do_bench`` stand-ins of such a capture.

torch is imported inside the functions.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch.overrides import TorchFunctionMode

    from laya_tui.families.tilelang.capture_types import Compare

__all__ = ["HEAVY_ELEMENTS", "HEAVY_OPS", "ModeState", "OnCuda", "capture_mode",
           "cpu_generator", "stand_in_bench"]


class OnCuda:
    """The tensors of a capture without a GPU that a GPU run would hold on the GPU: made
    with ``device="cuda"``, ``.cuda()`` or ``.to("cuda")``, or computed from such a tensor.
    ``tensor.is_cuda`` answers True for them, so a wrapper's own guard (``if not
    a.is_cuda: raise ValueError("expects CUDA tensors")``) lets the run reach its kernel
    as on a GPU. Keyed by ``id`` with a weak reference (a tensor's ``==`` is elementwise)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}

    def add(self, value: object) -> None:
        for t in _tensors(value):
            key = id(t)
            self._refs[key] = weakref.ref(t, functools.partial(self._drop, key))

    def _drop(self, key: int, _ref: object) -> None:
        self._refs.pop(key, None)

    def holds(self, value: object) -> bool:
        ref = self._refs.get(id(value))
        return ref is not None and ref() is value

    def any_of(self, values: Iterable[object]) -> bool:
        return bool(self._refs) and any(self.holds(t) for v in values for t in _tensors(v))


def _wants_cuda(value: object) -> bool:
    return isinstance(value, str) and value.startswith("cuda") or \
        getattr(value, "type", None) == "cuda" and not isinstance(value, str)


def _to_cpu_device(value: object) -> object:
    text = str(value) if value is not None else ""
    if text.startswith("cuda"):
        return "cpu"
    return value



#: ops whose CPU cost grows past their inputs' size (a GPU file's reference computations)
HEAVY_OPS = {"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "baddbmm", "addmm", "einsum",
             "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "linear",
             "scaled_dot_product_attention", "softmax", "log_softmax", "cumsum", "sort",
             "topk", "argsort", "tensordot", "kron", "cdist"}
#: elements of an op's tensor inputs above which the CPU stand-in fakes its result
HEAVY_ELEMENTS = 1 << 20


@dataclass
class ModeState:
    """What the capture's torch mode did: whether a result it handed the file is fake."""

    faked: int = 0  # heavy ops whose result was zeros of the right shape (no CPU compute)
    #: frees what earlier captures of the process keep (their modules and tensors), so a
    #: faked result's room does not depend on which files the worker ran before
    release: Callable[[], None] | None = None


def _tensors(value: object) -> list[torch.Tensor]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def cpu_generator() -> type[torch.Generator]:
    """``torch.Generator`` for a capture without a GPU: ``device="cuda"`` makes a CPU one
    (the file's tensors are on the CPU there too); still a ``torch.Generator``."""
    import torch

    base: Any = torch.Generator

    class Generator(base):  # type: ignore[misc] # torch.Generator, made Any above
        def __new__(cls, device: object = "cpu") -> Generator:
            made: Generator = base.__new__(cls, device=_to_cpu_device(device))
            return made

    return Generator


def stand_in_bench(*args: object, **kwargs: object) -> float | list[float]:
    """TileLang's ``do_bench`` during a capture: the file's timing of stand-ins and of its
    torch reference means nothing there (and needs a GPU), so 1 ms at once (``"all"``: one
    sample)."""
    return [1.0] if kwargs.get("return_mode") == "all" else 1.0


def capture_mode(*, cuda_on_cpu: bool, on_compare: Compare,
                 state: ModeState | None = None) -> TorchFunctionMode:
    """A ``TorchFunctionMode`` for the capture: ``allclose`` calls go to ``on_compare``
    (which returns a result, or ``NotImplemented`` to let torch answer), and with
    ``cuda_on_cpu`` (a machine without a GPU) tensors the file puts on ``cuda`` are built
    on the CPU (``.cuda()``, ``device="cuda"``, ``.to("cuda")``) and a heavy op on large
    inputs (a GPU-sized reference matmul) returns zeros of its result's shape at once,
    noted in ``state`` (nothing compared with such a result may be trusted)."""
    import torch
    from torch.overrides import TorchFunctionMode

    # capture_stubs' memory limits, looked up when used (a test may patch them there)
    from laya_tui.families.tilelang import capture_stubs as stubs
    from laya_tui.families.tilelang.own_checks import Op, after_op, node_of, wrap

    state = state if state is not None else ModeState()
    on_cuda = OnCuda()
    is_cuda = torch._C.TensorBase.is_cuda

    def ask(truth: object) -> bool | None:
        got = on_compare("assert", (truth,), {})
        return None if got is NotImplemented else bool(got)

    def large(values: Iterable[object]) -> bool:
        n = 0
        for v in values:
            if isinstance(v, torch.Tensor):
                n += v.numel()
            elif isinstance(v, (list, tuple)):
                n += sum(t.numel() for t in v if isinstance(t, torch.Tensor))
        return n > HEAVY_ELEMENTS

    def fake(func: Callable[..., object], args: tuple[object, ...],
             kwargs: Mapping[str, object]) -> object:
        def meta(v: object) -> object:
            if isinstance(v, torch.Tensor):
                return v.to("meta")
            if isinstance(v, (list, tuple)):
                return type(v)(meta(x) for x in v)
            return v

        out = func(*(meta(a) for a in args), **{k: meta(v) for k, v in kwargs.items()})
        size = sum(t.numel() * t.element_size() for t in _tensors(out))
        why = stubs.too_big(size)
        if why is not None and state.release is not None:
            state.release()
            why = stubs.too_big(size)
        if why is not None:
            raise stubs.StopCapture(
                f"the file's torch {getattr(func, '__name__', 'op')} makes a "
                f"{size / 2**30:.1f} GiB result, computed on the GPU in a GPU run: too big "
                f"for this machine's memory ({why})")

        # inputs that need a gradient: the zeros hang off them (a backward through the
        # stand-in runs and gives zeros, as the file's .backward() expects a graph)
        grads = [t for t in (*args, *kwargs.values())
                 if isinstance(t, torch.Tensor) and t.requires_grad]
        tie: torch.Tensor | None = None  # the sum of each one's sum times 0
        for t in grads:
            tie = t.sum() * 0 if tie is None else tie + t.sum() * 0

        def real(v: object) -> object:
            if isinstance(v, torch.Tensor):
                zeros = torch.zeros(v.shape, dtype=v.dtype)
                if tie is not None and zeros.is_floating_point():
                    zeros = zeros + tie.to(zeros.dtype)
                return zeros
            if isinstance(v, (list, tuple)):
                return type(v)(real(x) for x in v)
            return v

        state.faked += 1
        return real(out)

    class CaptureMode(TorchFunctionMode):
        def __torch_function__(self, func: Callable[..., object], types: object,
                               args: tuple[object, ...] = (),
                               kwargs: Mapping[str, object] | None = None) -> object:
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", "")
            if name in ("allclose", "equal"):  # `assert torch.equal(...)` too
                got = on_compare(f"torch.{name}", args, kwargs)
                if got is not NotImplemented:
                    return got
            if name == "__bool__" and args and node_of(args[0]) is not None:
                # `assert (out - ref).abs().max() < tol`: the file's own check
                got = on_compare("assert", args, kwargs)
                if got is not NotImplemented:
                    return got
            if name == "item" and args and node_of(args[0]) is not None:
                # `max_diff = (out - ref).abs().max().item()`, asserted later
                return wrap(func(*args, **kwargs), Op(func, (node_of(args[0]),), {}), ask)
            cuda = False
            if cuda_on_cpu:
                if getattr(func, "__self__", None) is is_cuda and args:
                    return on_cuda.holds(args[0]) or func(*args, **kwargs)
                if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                    on_cuda.add(args[0])
                    return args[0]
                if "device" in kwargs:
                    cuda = _wants_cuda(kwargs["device"])
                    kwargs["device"] = _to_cpu_device(kwargs["device"])
                if name == "to":
                    cuda = cuda or any(_wants_cuda(a) for a in args[1:])
                    args = tuple(_to_cpu_device(a) if isinstance(a, (str, torch.device))
                                 else a for a in args)
                cuda = cuda or on_cuda.any_of((*args, *kwargs.values()))
                if name in HEAVY_OPS and large((*args, *kwargs.values())):
                    try:
                        out = fake(func, args, kwargs)
                    except Exception:  # noqa: BLE001 - no meta kernel: compute it for real
                        pass
                    else:
                        after_op(func, args, kwargs, out)
                        if cuda:
                            on_cuda.add(out)
                        return out
            out = func(*args, **kwargs)
            after_op(func, args, kwargs, out)  # what derives from a kernel's output
            if cuda:
                on_cuda.add(out)
            return out

    return CaptureMode()
