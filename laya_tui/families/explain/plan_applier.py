"""Applying a precision plan (:mod:`laya_tui.families.explain.precision_plan`): the kept
modules swapped for fp32 copies (the fp32 reference's weights, when given, else their own
upcast) that take fp32 inputs and cast their output back to the model's dtype where it
leaves the kept set; a cast-back output handed straight to another kept module reaches it
as the fp32 value it was cast from. Worker side (torch inside functions)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import weakref

    import torch
    from torch import Tensor
    from torch.nn import Module

__all__ = ["Applier", "map_floats", "model_dtype", "normalize"]


def normalize(names: list[str] | tuple[str, ...]) -> list[str]:
    """Unique names, a kept module's submodules dropped (it covers them), in given order."""
    out: list[str] = []
    for n in names:
        if n in out or any(n.startswith(k + ".") for k in names if k != n):
            continue
        out.append(n)
    return out


class _Handoff:
    """fp32 values of cast-back outputs, found again when the same tensor object reaches
    another kept module unchanged (keyed by id, checked by a weak reference and the
    tensor's version counter, which an in-place op bumps)."""

    def __init__(self) -> None:
        self.values: dict[int, tuple[weakref.ref[Tensor], Tensor, int]] = {}

    def keep(self, low: Tensor, high: Tensor) -> None:
        import weakref

        self.values[id(low)] = (weakref.ref(low), high, low._version)

    def find(self, t: Tensor) -> Tensor | None:
        entry = self.values.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t and \
            t._version == entry[2] else None

    def clear(self) -> None:
        self.values.clear()


def map_floats(x: object, fn: Callable[[Tensor], Tensor], torch: ModuleType,
               depth: int = 0) -> object:
    """``fn`` over the floating tensors of a (nested) tuple/list/dict output."""
    tensor: type[Tensor] = torch.Tensor
    if isinstance(x, tensor):
        return fn(x) if x.is_floating_point() else x
    if depth > 6:
        return x
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return _namedtuple(x)(*(map_floats(v, fn, torch, depth + 1) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(map_floats(v, fn, torch, depth + 1) for v in x)
    if isinstance(x, dict):
        if type(x) is dict:
            return {k: map_floats(v, fn, torch, depth + 1) for k, v in x.items()}
        for k in list(x.keys()):  # a ModelOutput: set in place (keeps its attributes)
            x[k] = map_floats(x[k], fn, torch, depth + 1)
        return x
    return x


def _namedtuple(x: tuple[object, ...]) -> Callable[..., tuple[object, ...]]:
    """A named tuple's class: built from its fields as positional arguments."""
    return type(x)


def model_dtype(model: Module) -> torch.dtype:
    """The model's first floating parameter's dtype, else fp32."""
    import torch

    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def _model_device(model: Module) -> torch.device:
    import torch

    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device("cpu")


def _fp32_copy(src: Module, device: torch.device, low: torch.dtype, handoff: _Handoff, *,
               cast_out: bool = True) -> Module:
    """A fp32 copy of ``src`` on ``device`` whose floating inputs become fp32 (the kept
    value when one was handed off) and whose floating outputs go back to ``low`` (unless
    not ``cast_out``: the whole model's fp32 output)."""
    import torch

    m = copy.deepcopy(src).to(device=device, dtype=torch.float32)

    def up(t: Tensor) -> Tensor:
        found = handoff.find(t)
        return found if found is not None else t.float()

    def pre(_m: Module, args: tuple[object, ...], kwargs: dict[str, object]
            ) -> tuple[tuple[object, ...], dict[str, object]]:
        # each argument one level down, as map_floats walks a tuple and a dict
        return (tuple(map_floats(v, up, torch, 1) for v in args),
                {k: map_floats(v, up, torch, 1) for k, v in kwargs.items()})

    def post(_m: Module, _args: tuple[object, ...], out: object) -> object:
        def down(t: Tensor) -> Tensor:
            if t.dtype == low:
                return t
            d = t.to(low)
            handoff.keep(d, t)
            return d
        return map_floats(out, down, torch)

    m.register_forward_pre_hook(pre, with_kwargs=True)
    if cast_out:
        m.register_forward_hook(post)
    return m


class Applier:
    """Applies plans to one model: fp32 copies made once per module, swapped in for a run."""

    def __init__(self, model: Module, weights: Module | None = None) -> None:
        self.model = model
        self.weights = weights
        self.low = model_dtype(model)
        self.device = _model_device(model)
        self.handoff = _Handoff()
        self.copies: dict[str, Module] = {}

    def _copy(self, name: str) -> Module:
        """The model's own module ``name`` in fp32 (so its code, mode and attributes are the
        model's), with the fp32 reference's weights and buffers when it has that module."""
        if name not in self.copies:
            m = _fp32_copy(self.model.get_submodule(name), self.device, self.low,
                           self.handoff, cast_out=bool(name))
            if self.weights is not None:
                try:
                    src = self.weights.get_submodule(name)
                    m.load_state_dict(src.state_dict())
                except (AttributeError, RuntimeError):
                    pass  # the reference lacks it or differs: the model's weights, upcast
                else:  # non-persistent buffers too (rotary inv_freq was rounded as well)
                    mine = dict(m.named_buffers())
                    import torch

                    with torch.no_grad():
                        for key, buf in src.named_buffers():
                            have = mine.get(key)
                            if have is not None and have.is_floating_point() and \
                                    have.shape == buf.shape:
                                have.copy_(buf)
            self.copies[name] = m
        return self.copies[name]

    @contextmanager
    def applied(self, names: list[str]) -> Iterator[Module]:
        """The model with ``names`` kept in fp32 (``""`` alone: the whole model in fp32,
        its output left in fp32)."""
        if names == [""]:
            try:
                yield self._copy("")
            finally:
                self.copies.pop("", None)  # a whole fp32 model: not kept after its run
                self.handoff.clear()
            return
        swaps: list[tuple[Module, str, Module | None]] = []
        try:
            for n in normalize(names):
                if not n:
                    raise ValueError("the whole model is never a plan")
                parent_name, _, child = n.rpartition(".")
                parent = self.model.get_submodule(parent_name)
                swaps.append((parent, child, parent._modules[child]))
                parent._modules[child] = self._copy(n)
            yield self.model
        finally:
            for parent, child, orig in reversed(swaps):
                parent._modules[child] = orig
            self.handoff.clear()
