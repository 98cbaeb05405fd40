"""Applying a precision plan (:mod:`laya_tui.families.explain.precision_plan`): the kept
modules swapped for fp32 copies (the fp32 reference's weights, when given, else their own
upcast) that take fp32 inputs and cast their output back to the model's dtype where it
leaves the kept set; a cast-back output handed straight to another kept module reaches it
as the fp32 value it was cast from. Worker side (torch inside functions)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
        self.values: dict[int, tuple[Any, Any, int]] = {}

    def keep(self, low: Any, high: Any) -> None:
        import weakref

        self.values[id(low)] = (weakref.ref(low), high, low._version)

    def find(self, t: Any) -> Any:
        entry = self.values.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t and \
            t._version == entry[2] else None

    def clear(self) -> None:
        self.values.clear()


def map_floats(x: Any, fn: Callable[[Any], Any], torch: Any, depth: int = 0) -> Any:
    """``fn`` over the floating tensors of a (nested) tuple/list/dict output."""
    if isinstance(x, torch.Tensor):
        return fn(x) if x.is_floating_point() else x
    if depth > 6:
        return x
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return type(x)(*(map_floats(v, fn, torch, depth + 1) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(map_floats(v, fn, torch, depth + 1) for v in x)
    if isinstance(x, dict):
        if type(x) is dict:
            return {k: map_floats(v, fn, torch, depth + 1) for k, v in x.items()}
        for k in list(x.keys()):  # a ModelOutput: set in place (keeps its attributes)
            x[k] = map_floats(x[k], fn, torch, depth + 1)
        return x
    return x


def model_dtype(model: Any, torch: Any) -> Any:
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def _model_device(model: Any, torch: Any) -> Any:
    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device("cpu")


def _fp32_copy(src: Any, device: Any, low: Any, handoff: _Handoff, torch: Any, *,
               cast_out: bool = True) -> Any:
    """A fp32 copy of ``src`` on ``device`` whose floating inputs become fp32 (the kept
    value when one was handed off) and whose floating outputs go back to ``low`` (unless
    not ``cast_out``: the whole model's fp32 output)."""
    m = copy.deepcopy(src).to(device=device, dtype=torch.float32)

    def up(t: Any) -> Any:
        found = handoff.find(t)
        return found if found is not None else t.float()

    def pre(_m: Any, args: Any, kwargs: Any) -> Any:
        return map_floats(tuple(args), up, torch), map_floats(dict(kwargs), up, torch)

    def post(_m: Any, _args: Any, out: Any) -> Any:
        def down(t: Any) -> Any:
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

    def __init__(self, model: Any, weights: Any = None) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.weights = weights
        self.low = model_dtype(model, torch)
        self.device = _model_device(model, torch)
        self.handoff = _Handoff()
        self.copies: dict[str, torch.nn.Module] = {}

    def _copy(self, name: str) -> Any:
        """The model's own module ``name`` in fp32 (so its code, mode and attributes are the
        model's), with the fp32 reference's weights and buffers when it has that module."""
        if name not in self.copies:
            m = _fp32_copy(self.model.get_submodule(name), self.device, self.low,
                           self.handoff, self.torch, cast_out=bool(name))
            if self.weights is not None:
                try:
                    src = self.weights.get_submodule(name)
                    m.load_state_dict(src.state_dict())
                except (AttributeError, RuntimeError):
                    pass  # the reference lacks it or differs: the model's weights, upcast
                else:  # non-persistent buffers too (rotary inv_freq was rounded as well)
                    mine = dict(m.named_buffers())
                    with self.torch.no_grad():
                        for key, buf in src.named_buffers():
                            have = mine.get(key)
                            if have is not None and have.is_floating_point() and \
                                    have.shape == buf.shape:
                                have.copy_(buf)
            self.copies[name] = m
        return self.copies[name]

    @contextmanager
    def applied(self, names: list[str]) -> Iterator[Any]:
        """The model with ``names`` kept in fp32 (``""`` alone: the whole model in fp32,
        its output left in fp32)."""
        if names == [""]:
            try:
                yield self._copy("")
            finally:
                self.copies.pop("", None)  # a whole fp32 model: not kept after its run
                self.handoff.clear()
            return
        swaps: list[tuple[Any, str, Any]] = []
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
