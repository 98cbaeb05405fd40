"""What a kernel function's syntax tree says about it (stdlib only): parameters, defaults,
tensor parameters (``A: T.Tensor((M, K), dtype)`` or ``T.Tensor[[M, K], dtype]``), the
eager style's ``T.const("M, N")`` names, ``@autotune`` configs and ``@tilelang.jit`` keywords.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from laya_tui.families.tilelang.records import KernelArgs, Kwargs
from laya_tui.families.tilelang.static_eval import (
    ModuleScope,
    dtype_name,
    evaluate,
)
from laya_tui.families.tilelang.static_values import Unresolved

_TENSOR_TYPES = ("Tensor", "Buffer", "StridedTensor", "FragmentBuffer", "SharedBuffer", "ptr")


@dataclass(frozen=True)
class TensorSpec:
    """A tensor parameter: its shape names (``""`` for a non-name dim) and its dtype."""

    dims: tuple[str, ...] = ()
    dtype_param: str | None = None  # the parameter naming its dtype (``dtype``)
    dtype: str | None = None  # a literal dtype (``T.float16``)


@dataclass
class KernelSig:
    """What the syntax tree says about one kernel function."""

    name: str
    line: int
    params: list[str]
    defaults: KernelArgs  # literal defaults only
    has_default: set[str]
    tensor_params: dict[str, TensorSpec]
    const_names: list[str]  # T.const("M, N") names: required keyword arguments
    autotune: ast.expr | None = None  # the configs= expression
    jit_kwargs: Kwargs = field(default_factory=dict)  # literal @tilelang.jit kwargs
    local_dtypes: dict[str, str] = field(default_factory=dict)  # ``dtype = T.float16`` in body

    @property
    def required(self) -> list[str]:
        """Arguments that must have a value to build the kernel, in signature order."""
        req = [p for p in self.params if p not in self.tensor_params and p not in self.has_default]
        return req + [c for c in self.const_names if c not in req]

    @property
    def accepted(self) -> list[str]:
        return [p for p in self.params if p not in self.tensor_params] + [
            c for c in self.const_names if c not in self.params]


def decorator_name(d: ast.expr) -> str:
    return ast.unparse(d.func if isinstance(d, ast.Call) else d)


#: owners of a ``.jit`` decorator that are not TileLang (``@triton.jit`` kernels are not ours)
_OTHER_JITS = ("triton", "numba", "jax", "torch", "cupy", "taichi", "mx", "tl_triton")


def is_jit_decorator(d: ast.expr) -> bool:
    """``@tilelang.jit`` (``tl.jit``, a bare ``jit``, ``lazy_jit``), not ``@triton.jit``."""
    name = decorator_name(d)
    if name in ("jit", "lazy_jit"):
        return True
    if not name.endswith((".jit", ".lazy_jit")):
        return False
    owner = name.rsplit(".", 1)[0]
    return owner.split(".")[0] not in _OTHER_JITS


def is_autotune_decorator(d: ast.expr) -> bool:
    name = decorator_name(d)
    return name == "autotune" or name.endswith(".autotune")


def is_prim_func_decorator(d: ast.expr) -> bool:
    name = decorator_name(d)
    return name == "prim_func" or name.endswith(".prim_func")


def kernel_signature(fn: ast.FunctionDef, scope: ModuleScope) -> KernelSig:
    """Parameters, tensor parameters, ``T.const`` names and decorators of a jit function."""
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    has_default = set(positional[len(positional) - len(a.defaults):])
    has_default |= {k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                    if d is not None}
    defaults: KernelArgs = {}
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
    pairs += [(k.arg, d) for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
              if d is not None]
    for name, d in pairs:
        try:
            defaults[name] = evaluate(d, scope)
        except Unresolved:
            pass
    tensors: dict[str, TensorSpec] = {}
    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs):
        if p.annotation is not None and is_tensor_annotation(p.annotation):
            tensors[p.arg] = tensor_spec(p.annotation)
    consts: list[str] = []
    local_dtypes: dict[str, str] = {}
    for node in _top_level(fn):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id in params and is_tensor_annotation(node.annotation):
            tensors[node.target.id] = tensor_spec(node.annotation)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and dtype_name(node.value):
            local_dtypes[node.targets[0].id] = dtype_name(node.value) or ""
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".const") \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            for part in node.args[0].value.replace(",", " ").split():
                if part not in consts:
                    consts.append(part)
    sig = KernelSig(name=fn.name, line=fn.lineno, params=params, defaults=defaults,
                    has_default=has_default, tensor_params=tensors, const_names=consts,
                    local_dtypes=local_dtypes)
    for d in fn.decorator_list:
        if is_autotune_decorator(d) and isinstance(d, ast.Call):
            sig.autotune = next((kw.value for kw in d.keywords if kw.arg == "configs"),
                                d.args[0] if d.args else None)
        elif is_jit_decorator(d) and isinstance(d, ast.Call):
            for kw in d.keywords:
                if kw.arg:
                    try:
                        sig.jit_kwargs[kw.arg] = evaluate(kw.value, scope)
                    except Unresolved:
                        sig.jit_kwargs[kw.arg] = None
    return sig


def _top_level(fn: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``fn``'s own statements (not of nested blocks or functions): where the
    eager style declares ``T.const`` names and tensor annotations."""
    out: list[ast.AST] = []
    for stmt in fn.body:
        if isinstance(stmt, (ast.FunctionDef, ast.With, ast.For, ast.If, ast.While)):
            continue
        out.extend(ast.walk(stmt))
    return out


def is_tensor_annotation(node: ast.expr) -> bool:
    """``T.Tensor((M, N), dt)``, ``T.Tensor[[M, N], dt]``, ``T.Buffer(...)``..."""
    head = node.func if isinstance(node, ast.Call) else (
        node.value if isinstance(node, ast.Subscript) else node)
    return ast.unparse(head).rsplit(".", 1)[-1] in _TENSOR_TYPES


def tensor_spec(node: ast.expr) -> TensorSpec:
    """Shape names and dtype of ``T.Tensor((M, N), dtype)`` or ``T.Tensor[[M, N], dtype]``."""
    parts: list[ast.expr]
    keywords: list[ast.keyword] = []
    if isinstance(node, ast.Call):
        parts, keywords = list(node.args), list(node.keywords)
    elif isinstance(node, ast.Subscript):
        sl = node.slice
        parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    else:
        return TensorSpec()
    if not parts:
        return TensorSpec()
    shape = parts[0]
    dims = tuple(el.id if isinstance(el, ast.Name) else "" for el in shape.elts) \
        if isinstance(shape, (ast.Tuple, ast.List)) else ()
    dt = parts[1] if len(parts) > 1 else next(
        (kw.value for kw in keywords if kw.arg == "dtype"), None)
    if dt is None:
        return TensorSpec(dims)
    if isinstance(dt, ast.Name):
        return TensorSpec(dims, dtype_param=dt.id)
    return TensorSpec(dims, dtype=dtype_name(dt))
