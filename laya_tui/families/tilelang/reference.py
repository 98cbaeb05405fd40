"""Inputs and a reference for a plain TileLang kernel file (worker side; torch inside).

Upstream-style kernel files carry their reference as a module-level ``ref_program``
(TileLang's examples' convention). When a built kernel's parameters all have static shapes,
the first ``n`` parameters (``n`` = the reference's arity) are inputs filled with seeded
random numbers in the kernel's dtypes, the rest are outputs; the reference runs on the same
numbers in fp32 on the CPU and each output is compared with it, within a limit scaled by the
reference's magnitude (fp32 1e-4, fp16 1e-2, bf16 2e-2).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.records import Tensors

if TYPE_CHECKING:
    import torch

    from laya_tui.families.tilelang.tl_objects import OutIdx, PrimFunc

#: Relative limit per dtype: max |diff| <= LIMIT * max(1, max |reference|).
LIMITS = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2,
          # fp8 keeps 3 (e4m3) or 2 (e5m2) mantissa bits: one step is 1/8 (1/4) relative,
          # and a kernel may round where torch's cast rounds to nearest
          "float8_e4m3": 0.125, "float8_e4m3fn": 0.125, "float8_e4m3fnuz": 0.125,
          "float8_e5m2": 0.25, "float8_e5m2fnuz": 0.25}


@dataclass
class ParamSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class RefExample:
    """The :class:`kernels.common.Example` interface the matrix's run stage uses."""

    params: list[ParamSpec]
    n_inputs: int
    ref: Callable[..., object]  # the file's ref_program
    seed: int
    masks: dict[str, torch.Tensor] = field(default_factory=dict)
    rounded: tuple[str, ...] = ()
    _limits: dict[str, float] = field(default_factory=dict)

    @property
    def outputs(self) -> list[str]:
        return [p.name for p in self.params[self.n_inputs:]]

    def materialize(self, dtype: str = "float32", device: str | torch.device = "cpu"
                    ) -> tuple[Tensors, Tensors]:
        import torch

        g = torch.Generator().manual_seed(self.seed)
        tensors: Tensors = {}
        promoted: Tensors = {}
        for i, p in enumerate(self.params):
            tdt = getattr(torch, p.dtype)
            if i < self.n_inputs:
                value = torch.randn(p.shape, generator=g) if tdt.is_floating_point else \
                    torch.randint(0, 8, p.shape, generator=g)
                value = value.to(tdt)
                promoted[p.name] = value.float() if tdt.is_floating_point else value
                tensors[p.name] = value.to(device)
            else:
                tensors[p.name] = torch.zeros(p.shape, dtype=tdt, device=device)
        return tensors, promoted

    def expected(self, promoted: Tensors, dtype: str = "float32") -> Tensors:
        import torch

        out = self.ref(*[promoted[p.name] for p in self.params[:self.n_inputs]])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        result: Tensors = {}
        for name, t in zip(self.outputs, outs, strict=False):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"ref_program gave a {type(t).__name__} for {name}, "
                                "not a tensor")
            result[name] = t.float().cpu()
        for name, t in result.items():
            p = next(q for q in self.params if q.name == name)
            self._limits[name] = LIMITS.get(p.dtype, 1e-4) * max(1.0, float(t.abs().max()))
        return result

    def actual(self, tensors: Tensors) -> Tensors:
        return {name: tensors[name].float().cpu() for name in self.outputs}

    def tolerance(self, name: str, *, dtype: str, cpu: bool) -> float:
        return round(self._limits.get(name, 1e-4), 8)


def static_params(func: PrimFunc) -> list[ParamSpec] | None:
    """Name, shape and dtype of every buffer parameter; None if any shape is symbolic."""
    out = []
    for var in func.params:
        buf = func.buffer_map.get(var)
        if buf is None:
            return None
        shape = []
        for dim in buf.shape:
            value = getattr(dim, "value", None)
            if value is None:
                return None
            shape.append(int(value))
        out.append(ParamSpec(str(buf.name), tuple(shape), str(buf.dtype)))
    return out


def reference_example(module: object, func: PrimFunc, seed: int,
                      out_idx: OutIdx = None) -> tuple[RefExample | None, str]:
    """An example for ``func`` from ``module.ref_program``, or None and why not.

    With ``out_idx`` (the outputs ``tilelang.compile`` returns) the reference must take
    exactly the other parameters, and the outputs must be the trailing ones: a reference
    whose arguments cannot be told from the kernel's (a flag, a scale, a layout of its own)
    is not guessed at."""
    ref = getattr(module, "ref_program", None)
    if not callable(ref):
        return None, "the file defines no ref_program() to compare with"
    params = static_params(func)
    if params is None:
        return None, "a parameter has a symbolic shape: no inputs to build"
    try:
        n = len([p for p in inspect.signature(ref).parameters.values()
                 if p.default is inspect.Parameter.empty
                 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        return None, "ref_program's signature cannot be read"
    if not 0 < n < len(params):
        return None, (f"ref_program takes {n} argument(s) but the kernel has {len(params)} "
                      "parameters: cannot tell inputs from outputs")
    if out_idx is not None:
        items = [out_idx] if isinstance(out_idx, int) else [int(i) for i in out_idx]
        outs = sorted(i if i >= 0 else len(params) + i for i in items)
        n_in = len(params) - len(outs)
        if outs != list(range(n_in, len(params))) or n != n_in:
            return None, (f"ref_program takes {n} argument(s), the kernel {n_in} input(s) "
                          f"and returns parameters {outs}: cannot tell what the reference "
                          "is given")
    return RefExample(params=params, n_inputs=n, ref=ref, seed=seed), ""
