"""What the aoti pipeline packages: the decision model cells and ``--model`` specs.

Worker side: torch is imported inside the functions.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, TypeVar, cast

from laya_tui.families.aoti.records import BuildConfig, InputSpec, Kwargs

if TYPE_CHECKING:
    import torch

#: ``(args, kwargs)`` of one call.
Inputs: TypeAlias = tuple[tuple[object, ...], Kwargs]
#: One compared shape: its name, its inputs and the dims it names (``rows``, ``tokens``...).
ShapeCase: TypeAlias = tuple[str, Inputs, dict[str, int]]
#: What a cell's outputs are compared with: the model itself, another eager model, or the
#: fp32 model on the host (:class:`OnHost`).
Reference: TypeAlias = "torch.nn.Module | OnHost"
#: ``torch.export``'s ``dynamic_shapes``: per forward parameter, its dims (a pytree).
DynamicShapes: TypeAlias = dict[str, object]

T = TypeVar("T")

#: Logit limits: AOTI fp32 vs eager fp32 is one compiler's rounding away; a bf16 copy vs the
#: fp32 eager reference carries bf16's 8-bit mantissa (2^-9 relative per rounding) through
#: three encoder layers, measured ~0.008 on this model, so 0.05 leaves ~6x headroom and
#: still catches a wrong cast or garbage. Both scale by max(1, max|reference|); the
#: probability limit equals the logit limit because softmax moves no probability by more
#: than the largest logit change.
LIMITS = {"fp32": 1e-4, "bf16": 0.05, "fp16": 0.05}
#: Bumped when the pipeline changes what goes into a package.
PIPELINE_VERSION = 3  # 3: a compiler that links libstdc++ statically is replaced


@dataclass
class Target:
    """One cell's model, inputs and how to judge it."""

    name: str
    dtype: str
    build: Callable[[], torch.nn.Module]
    reference: Callable[[torch.nn.Module], Reference]
    example: Inputs
    dynamic_shapes: Callable[[torch.nn.Module], DynamicShapes]
    shapes: Callable[[InputSpec | None], list[ShapeCase]]
    heads: tuple[str, ...] | None = None
    dim_names: dict[str, dict[int, str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    config: BuildConfig = field(default_factory=dict)
    forbid: list[str] = field(default_factory=list)
    device: str = "cpu"

    @property
    def limit(self) -> float:
        """Base logit limit for this cell's dtype."""
        return LIMITS.get(self.dtype, LIMITS["bf16"])


def to_device(inputs: T, device: str) -> T:
    """Every tensor leaf of ``inputs`` moved to ``device`` (same structure)."""
    import torch
    from torch.utils import _pytree as pytree

    moved = pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, inputs)
    return cast(T, moved)  # pytree maps leaves, keeping the containers


class OnHost:
    """The fp32 CPU reference called with device inputs (moved to the host first)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.model(*to_device(args, "cpu"), **to_device(kwargs, "cpu"))


def decision_target(dtype: str, *, cast_features: bool = True, device: str = "cpu") -> Target:
    """The decision model cell in ``fp32`` or ``bf16`` (weights cast, no autocast), on
    ``device``; off the CPU the reference is still the fp32 model on the CPU."""
    import torch

    from laya_tui.families import decision_model as dm
    from laya_tui.families import presets

    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]

    def build() -> torch.nn.Module:
        return dm.build_decision_model(torch_dtype, cast_features=cast_features).to(device)

    def reference(model: torch.nn.Module) -> Reference:
        if device == "cpu":
            return model if dtype == "fp32" else dm.build_decision_model(torch.float32)
        return OnHost(dm.build_decision_model(torch.float32))

    def shapes(_spec: InputSpec | None) -> list[ShapeCase]:
        return [(s.name, ((), to_device(dm.decision_inputs(s), device)),
                 {"rows": s.rows, "tokens": s.tokens, "markers": s.markers})
                for s in dm.SHAPES]

    suffix = ("" if device == "cpu" else f",{device}") + ("" if cast_features else ",uncast")
    return Target(
        name=f"decision[{dtype}{suffix}]", dtype=dtype, build=build, reference=reference,
        example=((), to_device(dm.decision_inputs(dm.EXAMPLE), device)),
        dynamic_shapes=lambda _model: dict(dm.dynamic_shapes()), shapes=shapes, heads=dm.HEADS,
        dim_names=dm.DIM_NAMES, sources=[dm.__file__, presets.__file__],
        config={"modernbert": presets.MODERNBERT_CONFIG, "rows": dm.ROWS,
                "tokens16": dm.TOKENS16, "markers": dm.MARKERS,
                "cast_features": cast_features, "pipeline": PIPELINE_VERSION,
                **({"device": device} if device != "cpu" else {})},
        forbid=["transformers", "laya_tui.families.decision_model", "laya_tui.families.presets"],
        device=device,
    )


def _normalise_inputs(inputs: object) -> Inputs:
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


def _auto_dynamic(model: torch.nn.Module, example: Inputs) -> DynamicShapes:
    """``Dim.AUTO`` on every dim of every tensor input, keyed by forward's parameter names."""
    import torch
    from torch.export import Dim
    from torch.utils import _pytree as pytree

    def spec(x: object) -> dict[int, object] | None:
        return {d: Dim.AUTO for d in range(x.dim())} if isinstance(x, torch.Tensor) else None

    args, kwargs = example
    bound = inspect.signature(model.forward).bind(*args, **kwargs)
    return {name: pytree.tree_map(spec, value) for name, value in bound.arguments.items()}


def _batch_variant(spec: InputSpec | None, example: Inputs) -> list[ShapeCase]:
    """A second shape when every input's dim 0 is one dynamic dim: rows repeated or cut."""
    import torch
    from torch.utils import _pytree as pytree

    if not spec or not spec.get("inputs"):
        return []
    firsts = [inp["dims"][0] for inp in spec["inputs"] if inp.get("dims")]
    leaves = [x for x in pytree.tree_leaves(example) if isinstance(x, torch.Tensor)]
    if not firsts or len(firsts) != len(leaves) or not all(d.get("symbol") for d in firsts):
        return []
    batch = int(leaves[0].shape[0])
    if any(int(x.shape[0]) != batch for x in leaves):
        return []
    lo, hi = max(d["min"] for d in firsts), min(d["max"] for d in firsts)
    new = 2 * batch if 2 * batch <= hi else batch - 1
    if not lo <= new <= hi or new == batch:
        return []

    def resize(x: object) -> object:
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            return x
        return torch.cat([x, x])[:new] if new > batch else x[:new]

    args, kwargs = pytree.tree_map(resize, example)
    return [(f"batch{new}", (tuple(args), dict(kwargs)), {"dim0": new})]


def user_target(spec: str, *, device: str = "cpu",
                loaded: tuple[object, object] | None = None) -> Target:
    """A ``--model module:callable`` returning ``(model, inputs)``, packaged for ``device``
    (``--device``: the model and every input set are moved there; the reference is the same
    model, eager, on that device).

    ``inputs`` is one input set or a list of them (:func:`laya_tui.families.presets.input_sets`):
    the first is the export example, every set is a compared shape. ``loaded``: the
    factory's ``(model, inputs)`` when the caller already called it.
    """
    import torch

    from laya_tui.families.presets import input_sets, load_user_model

    given, inputs = loaded if loaded is not None else load_user_model(spec)
    if not isinstance(given, torch.nn.Module):
        raise TypeError(f"the model must be a torch.nn.Module (torch.export packages modules), "
                        f"got {type(given).__name__}")
    model: torch.nn.Module = given.eval()
    if device != "cpu":
        model = model.to(device)
    sets = [_normalise_inputs(to_device(x, device) if device != "cpu" else x)
            for x in input_sets(inputs)]
    example = sets[0]
    floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
    dtype = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(floats[0], "fp32") \
        if floats else "fp32"
    module_name = spec.partition(":")[0]
    sources = []
    found = importlib.util.find_spec(module_name)
    if found is not None and found.origin and os.path.isfile(found.origin):
        sources.append(found.origin)
    try:
        src = inspect.getsourcefile(type(model))
        if src and src not in sources:
            sources.append(src)
    except TypeError:
        pass

    def shapes(exported: InputSpec | None) -> list[ShapeCase]:
        if len(sets) > 1:  # the factory's own input sets, in order
            return [(f"set{i + 1}", x, {}) for i, x in enumerate(sets)]
        return [("example", example, {})] + _batch_variant(exported, example)

    suffix = "" if device == "cpu" else f",{device}"
    return Target(
        name=f"model[{spec}{suffix}]", dtype=dtype, build=lambda: model, reference=lambda m: m,
        example=example, dynamic_shapes=lambda m: _auto_dynamic(m, example), shapes=shapes,
        sources=sources, config={"spec": spec, "pipeline": PIPELINE_VERSION,
                                 **({"device": device} if device != "cpu" else {})},
        forbid=[module_name, "transformers"], device=device,
    )
