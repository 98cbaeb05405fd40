"""The types a capture hands around (worker side; nothing imported at load time): TileLang's
traced PrimFunc and its buffers as far as the capture reads them, a kernel's ``out_idx``, the
JSON-able form of an argument, the map of stand-in tensors, the comparison callback and the
``AutoTuner`` whose ``run`` the capture answers.

TileLang and TVM ship no type information: each Protocol names only what the capture reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeGuard

if TYPE_CHECKING:
    import torch

    from laya_tui.families.tilelang.capture_stubs import KernelCallRecord
    from laya_tui.families.tilelang.records import Kwargs

__all__ = ["AutoTunerLike", "Compare", "Described", "KernelParam", "OutIdx", "Registry",
           "TirBuffer", "TirCall", "TirVar", "TracedPrimFunc", "is_prim_func"]


class TirVar(Protocol):
    """A TIR variable (a buffer's data pointer): its name is printed."""

    @property
    def name(self) -> object: ...


class KernelParam(Protocol):
    """A kernel's parameter as TileLang describes it (``kernel.params``): its dtype (printed)
    and its shape (each dimension an ``IntImm`` with ``.value`` or a symbolic ``Var`` with
    ``.name``)."""

    @property
    def dtype(self) -> object: ...

    @property
    def shape(self) -> Sequence[object]: ...


class TirBuffer(KernelParam, Protocol):
    """A PrimFunc's buffer parameter: its dtype, its shape, its name, its data pointer."""

    @property
    def name(self) -> object: ...

    @property
    def data(self) -> TirVar: ...


class TracedPrimFunc(Protocol):
    """The ``tvm.tir.PrimFunc`` TileLang traced: its parameters, their buffers, its body and
    the Python function it was traced from."""

    @property
    def params(self) -> Sequence[object]: ...

    @property
    def buffer_map(self) -> Mapping[object, TirBuffer]: ...

    @property
    def attrs(self) -> Mapping[str, object]: ...  # "global_symbol", "tilelang_out_idx"

    @property
    def body(self) -> object: ...

    @property
    def orig_func(self) -> Callable[..., object]: ...


class TirCall(Protocol):
    """A TIR ``Call`` node: the op it calls (its ``.name`` read) and its arguments."""

    @property
    def op(self) -> object: ...

    @property
    def args(self) -> Sequence[object]: ...


def is_prim_func(value: object) -> TypeGuard[TracedPrimFunc]:
    """``value`` is a PrimFunc (told by its type's name: TVM is imported by the file)."""
    return type(value).__name__ == "PrimFunc"


#: a kernel's output positions as TileLang takes them: one index, several, or none
OutIdx: TypeAlias = "int | Sequence[int] | None"

#: an argument as the capture records it (:func:`capture_stubs.describe`): JSON values
Described: TypeAlias = "bool | int | float | str | list[Described] | dict[str, Described] | None"

#: the capture's stand-in tensors by ``id`` (minus the storage address for memory an
#: in-place kernel wrote): (the kernel's call record, the output index (minus one minus the
#: argument position for an in-place one), the tensor itself)
Registry: TypeAlias = "dict[int, tuple[KernelCallRecord, int, torch.Tensor]]"

#: the comparison callback of the capture's torch mode: (the check's name, its positional
#: and keyword arguments) -> its answer (:func:`capture_model.record_check`: a passing
#: result, or ``NotImplemented`` when torch answers)
Compare: TypeAlias = "Callable[[str, tuple[object, ...], Kwargs], object]"


class AutoTunerLike(Protocol):
    """``tilelang.autotuner.AutoTuner`` as :meth:`Recorder.tune` reads it."""

    #: the configs (dicts of tiling values), or a function of the kernel's arguments
    #: giving them
    configs: Iterable[Mapping[str, object]] | Callable[
        ..., Iterable[Mapping[str, object]] | None] | None
    fn: Callable[..., object]  # the kernel's Python function
    #: (positional arguments, keyword (name, value) pairs) the kernel was called with
    _kernel_parameters: tuple[tuple[object, ...], tuple[tuple[str, object], ...]] | None

    def _ensure_jit_functions(self) -> tuple[Callable[..., object], Callable[..., object]]:
        ...
