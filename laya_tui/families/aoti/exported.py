"""Facts read from a torch.export ExportedProgram: input ranges, mixed-dtype matmuls."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, SupportsInt

from laya_tui.families.aoti.records import DimRange, InputEntry, InputSpec, MixedMatmul
from laya_tui.families.aoti.targets import Inputs

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.utils._pytree import KeyPath

#: The matmul-like ops whose mixed input dtypes break packaged models.
MATMUL_OPS = ("linear", "addmm", "mm", "bmm", "matmul", "baddbmm")


def _path_name(path: KeyPath) -> str:
    from torch.utils import _pytree as pytree

    keys = list(path)
    if keys and getattr(keys[0], "idx", None) == 1:  # kwargs
        rest = keys[1:]
        text = pytree.keystr(tuple(rest))
        return text[2:-2] if text.startswith("['") and text.endswith("']") else text
    return "args" + pytree.keystr(tuple(keys[1:]))


def constant_inputs(inputs: Inputs) -> dict[str, str]:
    """Non-tensor leaves of an input set (``mode='sum'``, ``normalize=True``) by name, as
    ``repr``: torch.export bakes them into the program as constants."""
    import torch
    from torch.utils import _pytree as pytree

    args, kwargs = inputs
    leaves = pytree.tree_flatten_with_path((tuple(args), dict(kwargs)))[0]
    return {_path_name(p): repr(x) for p, x in leaves if not isinstance(x, torch.Tensor)}


def specialised(spec: InputSpec | None, inputs: Inputs, label: str) -> list[str]:
    """What an input set passes that the package was specialised to another value of."""
    fixed = (spec.get("constants") if spec else None) or {}
    got = constant_inputs(inputs)
    return [f"the package is specialised to {k}={v}; {label} passes {got[k]}"
            for k, v in fixed.items() if k in got and got[k] != v]


def input_spec(ep: ExportedProgram, example: Inputs, dim_names: dict[str, dict[int, str]]
               ) -> InputSpec:
    """The exported ranges per flat input: ``{inputs: [{name, dtype, dims}], constants}``.

    ``constants``: the example's non-tensor inputs, which the program holds fixed.
    """
    import sympy
    import torch
    from torch.utils import _pytree as pytree

    args, kwargs = example
    flat = [(p, x) for p, x in pytree.tree_flatten_with_path((tuple(args), kwargs))[0]
            if isinstance(x, torch.Tensor)]
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    # a constant input appears in user_inputs as its value (``'sum'``), not a placeholder
    fakes = [vals[name] for name in ep.graph_signature.user_inputs
             if isinstance(name, str) and name in vals]
    fakes = [f for f in fakes if isinstance(f, torch.Tensor)]
    ranges = {str(k): v for k, v in ep.range_constraints.items()}

    def bound(v: SupportsInt) -> int:
        try:
            return int(v)
        except Exception:  # noqa: BLE001 - sympy/torch infinities: unbounded
            return 2**62

    inputs: list[InputEntry] = []
    for (path, x), fake in zip(flat, fakes, strict=False):
        name = _path_name(path)
        dims: list[DimRange] = []
        for d, size in enumerate(fake.shape):
            label = dim_names.get(name, {}).get(d) or f"dim{d}"
            if isinstance(size, int):
                dims.append({"name": label, "min": size, "max": size})
                continue
            expr = size.node.expr
            coeff, rest = expr.as_coeff_Mul() if isinstance(expr, sympy.Expr) else (1, expr)
            coeff = int(coeff) if coeff and coeff == int(coeff) else 1
            vr = ranges.get(str(rest)) or ranges.get(str(expr))
            lo = bound(vr.lower) * coeff if vr is not None else int(x.shape[d])
            hi = bound(vr.upper) * coeff if vr is not None else int(x.shape[d])
            dim: DimRange = {"name": label, "min": lo, "max": hi, "symbol": str(rest)}
            if coeff > 1:
                dim["multiple"] = coeff
            dims.append(dim)
        inputs.append({"name": name, "dtype": str(x.dtype), "dims": dims})
    out: InputSpec = {"inputs": inputs}
    constants = constant_inputs(example)
    if constants:
        out["constants"] = constants
    return out


def mixed_dtype_matmuls(ep: ExportedProgram) -> list[MixedMatmul]:
    """Matmul-like nodes whose floating inputs disagree in dtype, with their source site."""
    import torch

    from laya_tui.families.aoti.failure import site_from_text

    found: dict[tuple[str, str, str], MixedMatmul] = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        op = getattr(node.target, "__name__", str(node.target)).split(".")[0]
        if op not in MATMUL_OPS:
            continue
        dtypes = []
        for arg in node.args:
            val = getattr(arg, "meta", {}).get("val") if hasattr(arg, "meta") else None
            if isinstance(val, torch.Tensor) and val.is_floating_point():
                dtypes.append(str(val.dtype).replace("torch.", ""))
        if len(set(dtypes)) > 1:
            trace = node.meta.get("stack_trace") or ""
            site = site_from_text(trace)
            key = (op, ",".join(dtypes), json.dumps(site, sort_keys=True))
            if key in found:
                found[key]["nodes"].append(node.name)
                continue
            found[key] = {"op": f"aten.{op}", "nodes": [node.name], "dtypes": dtypes,
                          "site": site, "trace": trace[-1500:]}
    return list(found.values())
