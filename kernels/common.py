"""What the five kernels share: the two specializations, tile primitives, CPU compile cache.

One tile algorithm, two specializations. A kernel factory builds a :class:`Spec` and writes
its algorithm once against it; the spec decides how each piece is realised:

==================  ==========================================  ===========================
piece               GPU specialization (default)                 CPU specialization (cpu=True)
==================  ==========================================  ===========================
launch              ``T.Kernel(..., threads=128)``               ``T.Kernel(..., threads=1)``
operand tiles       ``T.alloc_shared``                           ``T.alloc_local``
accumulators        ``T.alloc_fragment``                         ``T.alloc_local``
element loops       ``T.Parallel``                               serial ``T.grid``
k loop              ``T.Pipelined(num_stages)``                  ``T.serial``
block order         ``T.use_swizzle`` (rasterization)            none
matmul / reduce     ``T.gemm`` / ``T.reduce_*`` / ``T.fill``     serial loops (same maths)
dtypes              fp16 / bf16 / fp32 I/O, fp32 accumulation    fp32 only
==================  ==========================================  ===========================

Padding predicates, masks and the online softmax live in the kernels and are shared.
On target ``c`` the CPU launch is a serial loop over the grid; one thread per block keeps
the same code correct when it is lowered for CUDA too (a serial tile program per block).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tilelang
import tilelang.language as T

#: dtype names the factories accept, and their short labels in cell ids.
DTYPES: dict[str, str] = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
ACCUM = "float32"
#: Large negative score used for masked positions (finite, so fast-math cannot bite).
NEG_BIG = -1.0e30


@dataclass(frozen=True)
class Spec:
    """How one specialization realises the shared tile algorithm (see the module table)."""

    cpu: bool
    dtype: str
    accum: str = ACCUM
    threads: int = 128

    def kernel(self, *grid: Any) -> Any:
        """The launch frame: one serial program per block on the CPU, thread blocks on GPU."""
        return T.Kernel(*grid, threads=1 if self.cpu else self.threads)

    def tile(self, shape: tuple[int, ...], dtype: str | None = None) -> Any:
        """An operand tile (shared memory on the GPU, a local array on the CPU)."""
        dt = dtype or self.dtype
        return T.alloc_local(shape, dt) if self.cpu else T.alloc_shared(shape, dt)

    def frag(self, shape: tuple[int, ...], dtype: str | None = None) -> Any:
        """A register tile (a fragment on the GPU, a local array on the CPU)."""
        dt = dtype or self.accum
        return T.alloc_local(shape, dt) if self.cpu else T.alloc_fragment(shape, dt)

    def par(self, *extents: Any) -> Any:
        """An element loop nest (``T.Parallel`` on the GPU, serial ``T.grid`` on the CPU)."""
        return T.grid(*extents) if self.cpu else T.Parallel(*extents)

    def stages(self, extent: Any, num_stages: int) -> Any:
        """The reduction loop (software-pipelined on the GPU, serial on the CPU)."""
        if self.cpu:
            return T.serial(extent)
        return T.Pipelined(extent, num_stages=num_stages)

    def swizzle(self, panel_size: int = 10) -> Any:
        """Block rasterization swizzle (GPU only; the CPU runs the grid in order)."""
        return None if self.cpu else T.use_swizzle(panel_size)

    def swizzle_layout(self, *buffers: Any) -> Any:
        """Bank-conflict-free shared-memory layouts (GPU only)."""
        if self.cpu:
            return None
        from tilelang.layout import make_swizzled_layout

        return T.annotate_layout({b: make_swizzled_layout(b) for b in buffers})


def make_spec(*, cpu: bool, dtype: str | None, threads: int = 128) -> Spec:
    """Validate ``dtype`` for the specialization and build its :class:`Spec`.

    ``dtype=None`` means float32 on the CPU and float16 on the GPU.
    """
    dt = dtype or ("float32" if cpu else "float16")
    if dt not in DTYPES:
        raise ValueError(f"unsupported dtype {dt!r}; expected one of {', '.join(DTYPES)}")
    if cpu and dt != "float32":
        raise ValueError(f"cpu=True is the fp32 specialization; got dtype={dt}")
    return Spec(cpu=cpu, dtype=dt, threads=threads)


# -- tile primitives: one call site in the algorithm, two realisations -----------------------


@T.macro
def fill(S: Spec, buf: T.Buffer, value: Any):  # noqa: ANN201 - a TileLang macro
    """``buf[...] = value`` over a 1-D or 2-D tile."""
    if S.cpu:
        if len(buf.shape) == 1:
            for i in T.serial(buf.shape[0]):
                buf[i] = value
        else:
            for i, j in T.grid(buf.shape[0], buf.shape[1]):
                buf[i, j] = value
    else:
        T.fill(buf, value)


@T.macro
def load_tile(S: Spec, dst: T.Buffer, src: T.Buffer, r0: Any, c0: Any, M: Any,
              K: Any):  # noqa: ANN201, N803 - a TileLang macro
    """``dst = src[r0:, c0:]`` tile of an (M, K) source, zero-padded past its edges.

    The extents are named ``M``/``K`` because a dynamic extent's name becomes the kernel
    argument's name in the generated code (``int M``), as in the kernels' own signatures.
    """
    for i, k in S.par(dst.shape[0], dst.shape[1]):
        dst[i, k] = T.if_then_else(r0 + i < M and c0 + k < K, src[r0 + i, c0 + k],
                                   T.cast(0, dst.dtype))


@T.macro
def gemm_nt(S: Spec, a: T.Buffer, b: T.Buffer, acc: T.Buffer):  # noqa: ANN201
    """``acc += a @ b^T`` with a (m, k), b (n, k), acc (m, n) in fp32."""
    if S.cpu:
        for i, j in T.grid(a.shape[0], b.shape[0]):
            for k in T.serial(a.shape[1]):
                acc[i, j] += T.cast(a[i, k], S.accum) * T.cast(b[j, k], S.accum)
    else:
        T.gemm(a, b, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)


@T.macro
def gemm_nn(S: Spec, a: T.Buffer, b: T.Buffer, acc: T.Buffer):  # noqa: ANN201
    """``acc += a @ b`` with a (m, k), b (k, n), acc (m, n) in fp32."""
    if S.cpu:
        for i, j in T.grid(a.shape[0], b.shape[1]):
            for k in T.serial(a.shape[1]):
                acc[i, j] += T.cast(a[i, k], S.accum) * T.cast(b[k, j], S.accum)
    else:
        T.gemm(a, b, acc, policy=T.GemmWarpPolicy.FullRow)


@T.macro
def row_max(S: Spec, src: T.Buffer, dst: T.Buffer):  # noqa: ANN201
    """``dst[i] = max_j src[i, j]``."""
    if S.cpu:
        for i in T.serial(src.shape[0]):
            dst[i] = src[i, 0]
            for j in T.serial(src.shape[1] - 1):
                dst[i] = T.max(dst[i], src[i, j + 1])
    else:
        T.reduce_max(src, dst, dim=1, clear=True)


@T.macro
def row_sum(S: Spec, src: T.Buffer, dst: T.Buffer):  # noqa: ANN201
    """``dst[i] = sum_j src[i, j]``."""
    if S.cpu:
        for i in T.serial(src.shape[0]):
            dst[i] = T.cast(0, dst.dtype)
            for j in T.serial(src.shape[1]):
                dst[i] += src[i, j]
    else:
        T.reduce_sum(src, dst, dim=1, clear=True)


def gelu(x: Any) -> Any:
    """Exact (erf) GELU of an fp32 expression, as ``torch.nn.functional.gelu``."""
    return T.float32(0.5) * x * (T.float32(1.0) + T.erf(x * T.float32(0.7071067811865476)))


def activation(x: Any, act: str | None) -> Any:
    """The GEMM epilogue activation (None, "gelu" or "relu") of an fp32 expression."""
    if act is None:
        return x
    if act == "gelu":
        return gelu(x)
    if act == "relu":
        return T.max(x, T.float32(0.0))
    raise ValueError(f"unsupported act {act!r}; expected None, 'gelu' or 'relu'")


# -- compiling for the CPU -------------------------------------------------------------------

_CPU_CACHE: dict[tuple[Any, ...], Any] = {}
_CPU_LOCK = threading.Lock()


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def compile_cpu(factory: Callable[..., Any], *args: Any,
                compile_flags: list[str] | None = None, **kwargs: Any) -> Any:
    """Compile ``factory(*args, cpu=True, **kwargs)`` for target ``c``; cached per call form.

    Dynamic dimensions (tokens, sequence length) stay symbolic, so one compiled kernel
    serves every size: callers keep calling this and get the same kernel back.
    ``compile_flags`` go to the C++ compiler (TileLang's default command has no ``-O``).
    """
    kwargs = {**kwargs, "cpu": True}
    key = (factory.__module__, factory.__qualname__, _freeze(args), _freeze(kwargs),
           _freeze(compile_flags or []))
    with _CPU_LOCK:
        kernel = _CPU_CACHE.get(key)
        if kernel is None:
            func = factory(*args, **kwargs)
            kernel = tilelang.compile(func, target="c", execution_backend="cython",
                                      compile_flags=compile_flags)
            _CPU_CACHE[key] = kernel
        return kernel


def clear_cpu_cache() -> None:
    """Forget the compiled CPU kernels (used after a kernel source changed)."""
    with _CPU_LOCK:
        _CPU_CACHE.clear()


# -- probe examples ----------------------------------------------------------------------


@dataclass
class Example:
    """One concrete run of a factory: shapes, seeded inputs, the reference and tolerances.

    ``inputs`` are fp32 masters in kernel-parameter order; a runner rounds float tensors to
    the cell's dtype, calls the kernel with them (in place), then checks each entry of
    ``reference(promoted_inputs)`` against ``outputs[name](tensors_after_call)``.
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    inputs: dict[str, Any]
    reference: Callable[[dict[str, Any]], dict[str, Any]]
    outputs: dict[str, Callable[[dict[str, Any]], Any]]
    #: fp32 CPU-specialization tolerance per checked output (0.0 = bit exact)
    atol: dict[str, float]
    #: tolerance per output for fp16/bf16 I/O or the GPU specialization
    atol_lowp: dict[str, float] = field(default_factory=dict)
    #: boolean masks restricting a comparison to valid positions
    masks: dict[str, Any] = field(default_factory=dict)
    #: outputs stored in the I/O dtype and compared exactly: their reference is rounded
    #: to the cell's dtype first (the in-place residual)
    rounded: tuple[str, ...] = ()

    def materialize(self, dtype: str = "float32", device: Any = "cpu") -> tuple[dict[str, Any],
                                                                            dict[str, Any]]:
        """``(tensors, promoted)``: kernel arguments rounded to ``dtype`` on ``device``, and
        their fp32 CPU copies (what the reference sees: the same rounded numbers)."""
        import torch

        tdt = getattr(torch, dtype)
        tensors, promoted = {}, {}
        for name, value in self.inputs.items():
            if value.is_floating_point():
                rounded = value.to(tdt)
                promoted[name] = rounded.float().clone()
                tensors[name] = rounded.to(device).clone().contiguous()
            else:
                promoted[name] = value.clone()
                tensors[name] = value.to(device).clone().contiguous()
        return tensors, promoted

    def expected(self, promoted: dict[str, Any], dtype: str = "float32") -> dict[str, Any]:
        """The fp32 reference per checked output; in-place outputs rounded to ``dtype``."""
        import torch

        ref = self.reference({k: v.clone() for k, v in promoted.items()})
        for name in self.rounded:
            ref[name] = ref[name].to(getattr(torch, dtype)).float()
        return ref

    def actual(self, tensors: dict[str, Any]) -> dict[str, Any]:
        """The checked outputs read back from the kernel's tensors, as fp32 on the CPU."""
        return {name: get(tensors).detach().float().cpu() for name, get in self.outputs.items()}

    def tolerance(self, name: str, *, dtype: str, cpu: bool) -> float:
        """The limit for output ``name`` in a cell of ``dtype`` and specialization."""
        strict = self.atol[name]
        if cpu and dtype == "float32":
            return strict
        if strict == 0.0:  # bit-exact checks (untouched columns) stay exact
            return 0.0
        return self.atol_lowp.get(name, 0.05)
