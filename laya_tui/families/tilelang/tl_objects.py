"""The TileLang and TVM objects the tilelang family hands around, as small Protocols naming
only what it reads of them (TileLang and TVM ship no type information; their values reach
these names from untyped calls, so the Protocols say what the code relies on).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeAlias

#: A kernel's ``out_idx`` as the file gave it to TileLang: one index, several (negative
#: ones count from the end), or None (the kernel returns nothing).
OutIdx: TypeAlias = "int | Sequence[int] | None"


class TargetKind(Protocol):
    """A ``tvm.target.TargetKind``."""

    @property
    def name(self) -> str: ...


class Target(Protocol):
    """A ``tvm.target.Target``: its kind's name (``c``, ``cuda``) is what is read."""

    @property
    def kind(self) -> TargetKind: ...


class Buffer(Protocol):
    """A ``tir.Buffer`` parameter of a PrimFunc."""

    @property
    def name(self) -> object: ...

    @property
    def shape(self) -> Iterable[object]: ...  # IntImm (``.value``) or symbolic vars

    @property
    def dtype(self) -> object: ...


class PrimFunc(Protocol):
    """A ``tir.PrimFunc``: its parameters, their buffers and its attributes."""

    @property
    def params(self) -> Sequence[object]: ...

    @property
    def buffer_map(self) -> Mapping[object, Buffer]: ...

    @property
    def attrs(self) -> Mapping[str, object]: ...


class IRModule(Protocol):
    """A ``tvm.IRModule`` a pass received or returned."""

    @property
    def functions(self) -> Mapping[object, object]: ...  # global var -> function

    def script(self) -> object: ...  # TVMScript

    def same_as(self, other: object) -> bool: ...


class Artifact(Protocol):
    """What ``tilelang.lower`` returns (``CompiledArtifact``): host and device modules, the
    kernel's source and its parameters."""

    @property
    def host_mod(self) -> IRModule: ...

    @property
    def device_mod(self) -> IRModule: ...

    @property
    def kernel_source(self) -> str: ...

    @property
    def params(self) -> Sequence[object]: ...  # TileLang's KernelParam, one per argument


class Kernel(Protocol):
    """A built kernel: a ``JITKernel`` or the cython adapter's function, called on tensors
    (it returns the outputs its ``out_idx`` names, else None)."""

    def __call__(self, *args: object) -> object: ...


class PassRecord(Protocol):
    """One pass run as TileLang's ``PassTimingTool`` records it."""

    @property
    def name(self) -> str: ...

    @property
    def depth(self) -> int: ...

    @property
    def duration_s(self) -> float: ...

    @property
    def self_duration_s(self) -> float: ...


class PassTimer(Protocol):
    """TileLang's ``PassTimingTool``: its records, and its report as text."""

    @property
    def records(self) -> Iterable[PassRecord]: ...

    def report(self) -> str: ...
