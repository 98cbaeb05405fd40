"""A TileLang kernel's data dtype: the dtype part of its cell ids (stdlib only).

The data dtype is the floating or quantised type a kernel reads and the one it writes:
``bfloat16`` when they agree, ``bfloat16-float8_e4m3fn`` (label ``bf16-fp8e4m3``) when they
differ. On each side a low-precision or quantised type wins over fp32/fp64 (scales and
accumulators), a float over an integer (an ``int32`` index argument such as
``batch_sizes`` never labels a kernel with floating data), and an integer labels a side only
when it has nothing else (an int8 GEMM's int32 output: ``int8-int32``).

The two are joined with ``-``, not ``→``: ids are typed in ``--only`` patterns and shells,
and printed by ``--list`` and the headless summary to streams that need not be UTF-8 (a
``→`` raises UnicodeEncodeError in an ASCII or cp1252 pipe); no dtype name or label holds a
``-``, so the id stays unambiguous.

Outputs are the tensors the kernel writes: read from the syntax tree here (stores into a
tensor, the destination of ``T.copy``/``T.gemm``/``T.reduce_*``/``T.fill``/atomics, the
eager style's ``T.empty``), and from the traced PrimFunc on the worker side
(:func:`laya_tui.families.tilelang.capture_model.kernel_data_dtype`).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterable

from laya_tui.families.tilelang.kernel_sig import (
    is_prim_func_decorator,
    is_tensor_annotation,
    tensor_spec,
)
from laya_tui.families.tilelang.static_eval import dtype_name

#: dtype name -> the short label of cell ids and signal details
LABELS: dict[str, str] = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "int8", "uint8": "uint8", "int4": "int4", "uint4": "uint4", "int2": "int2",
    "int16": "int16", "int32": "int32", "int64": "int64", "uint16": "uint16",
    "uint32": "uint32", "float8_e4m3": "fp8e4m3", "float8_e4m3fn": "fp8e4m3",
    "float8_e4m3fnuz": "fp8e4m3", "float8_e5m2": "fp8e5m2", "float8_e5m2fnuz": "fp8e5m2",
    "float4_e2m1fn": "fp4", "bool": "bool",
}
#: low-precision and quantised dtypes: they label a side over fp32/fp64
LOW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2",
       "float8_e4m3fnuz", "float8_e5m2fnuz", "int8", "uint8", "int4", "uint4", "int2",
       "float4_e2m1fn")
_FLOATS = ("float32", "float64")
SEP = "-"  # input and output dtype in one name and one label: see the module docstring

#: TileLang ops -> (position, keyword) of the buffer they write
_WRITES: dict[str, tuple[int, str]] = {
    **dict.fromkeys(("copy", "async_copy", "tma_copy", "c2d_im2col", "transpose",
                     "finalize_reducer", "cumsum"), (1, "dst")),
    **dict.fromkeys(("gemm", "gemm_v1", "gemm_v2", "wgmma_gemm", "gemm_blockscaled"),
                    (2, "C")),
    **dict.fromkeys(("gemm_sp", "wgmma_gemm_sp"), (3, "C")),
    **dict.fromkeys(("reduce", "reduce_max", "reduce_min", "reduce_sum", "reduce_abssum",
                     "reduce_absmax", "reduce_bitand", "reduce_bitor", "reduce_bitxor"),
                    (1, "out")),
    **dict.fromkeys(("fill", "clear"), (0, "buffer")),
    **dict.fromkeys(("atomic_add", "atomic_max", "atomic_min", "atomic_addx2",
                     "atomic_addx4", "atomic_store", "atomic_or"), (0, "dst")),
}


def label(dtype: str) -> str:
    """``bf16`` for ``bfloat16``, ``bf16-fp8e4m3`` for ``bfloat16-float8_e4m3fn``."""
    return SEP.join(LABELS.get(p, p) for p in dtype.split(SEP))


def input_dtype(dtype: str) -> str:
    """The read side of a data dtype (the whole name when both sides agree)."""
    return dtype.split(SEP, 1)[0]


def side(dtypes: Iterable[str]) -> str | None:
    """The dtype that labels one side: low precision, else fp32/fp64, else the first."""
    seen = [d for d in dtypes if d]
    for group in (LOW, _FLOATS):
        hit = next((d for d in seen if d in group), None)
        if hit is not None:
            return hit
    return seen[0] if seen else None


def combine(ins: Iterable[str], outs: Iterable[str]) -> str | None:
    """``bfloat16`` when read and written dtypes agree, ``bfloat16-float8_e4m3fn`` when not;
    one side alone when the other is unknown; None when neither is known."""
    i, o = side(ins), side(outs)
    if i is None or o is None or i == o:
        return i or o
    return f"{i}{SEP}{o}"


# -- the syntax tree ------------------------------------------------------------------------

Lookup = Callable[[str], "str | None"]


def _base_name(node: ast.expr) -> str | None:
    """``C`` of ``C``, ``C[i, j]``, ``C[i:j][0]`` and ``C.data``."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _op(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


_T_OWNERS = ("T", "tl", "tilelang.language", "language")


def _owner(call: ast.Call) -> str:
    f = call.func
    return ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""


def _dtype_of(expr: ast.expr | None, lookup: Lookup) -> str | None:
    if expr is None:
        return None
    if isinstance(expr, ast.Name):
        return lookup(expr.id)
    return dtype_name(expr)


def _kernel_function(fn: ast.FunctionDef) -> ast.FunctionDef:
    """The function whose parameters are the kernel's tensors: ``fn`` itself (the eager
    style, a ``@T.prim_func``), else the last ``@T.prim_func`` it defines."""
    if any(is_prim_func_decorator(d) for d in fn.decorator_list):
        return fn
    nested = [n for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn
              and any(is_prim_func_decorator(d) for d in n.decorator_list)]
    return nested[-1] if nested else fn


def read_written(fn: ast.FunctionDef, lookup: Lookup) -> tuple[list[str], list[str]]:
    """(dtypes of the tensors the kernel only reads, dtypes of those it writes), in
    parameter order; a dtype that ``lookup`` (and the literal) cannot give is left out."""
    kernel = _kernel_function(fn)
    tensors: dict[str, str | None] = {}
    written: set[str] = set()
    a = kernel.args
    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs):
        if p.annotation is not None and is_tensor_annotation(p.annotation):
            spec = tensor_spec(p.annotation)
            tensors[p.arg] = spec.dtype or (lookup(spec.dtype_param)
                                            if spec.dtype_param else None)
    for node in ast.walk(kernel):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and is_tensor_annotation(node.annotation):  # eager: ``X: T.Tensor(...)``
            spec = tensor_spec(node.annotation)
            tensors.setdefault(node.target.id, spec.dtype or (
                lookup(spec.dtype_param) if spec.dtype_param else None))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) \
                and _op(node.value) == "empty" and _owner(node.value) in _T_OWNERS:
            call = node.value  # eager: ``Y = T.empty(shape, dtype)`` is an output
            dt = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "dtype"), None)
            tensors[node.targets[0].id] = _dtype_of(dt, lookup)
            written.add(node.targets[0].id)
        for target in _written_exprs(node):
            name = _base_name(target)
            if name is not None:
                written.add(name)
    ins = [d for n, d in tensors.items() if d and n not in written]
    outs = [d for n, d in tensors.items() if d and n in written]
    return ins, outs


def _written_exprs(node: ast.AST) -> list[ast.expr]:
    """The expressions ``node`` writes into: subscript targets, an op's destination."""
    if isinstance(node, ast.Assign):
        return [t for t in node.targets if isinstance(t, ast.Subscript)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target] if isinstance(node.target, ast.Subscript) else []
    if isinstance(node, ast.Call) and _op(node) in _WRITES:
        pos, kw = _WRITES[_op(node)]
        hit = next((k.value for k in node.keywords if k.arg == kw), None)
        if hit is None and len(node.args) > pos:
            hit = node.args[pos]
        if hit is None and _op(node) == "cumsum" and node.args:
            hit = node.args[0]  # no dst: in place
        return [hit] if hit is not None else []
    return []


def static_data_dtype(fn: ast.FunctionDef, lookup: Lookup) -> str | None:
    """The data dtype of the kernel ``fn`` defines (see the module docstring)."""
    ins, outs = read_written(fn, lookup)
    return combine(ins, outs)


def segment_data_dtype(segment: str) -> str | None:
    """The data dtype of the one kernel a source text defines, its dtype names read from
    the text's own assignments (``dtype = T.float16``); None when the text does not parse,
    defines no kernel or several."""
    try:
        tree = ast.parse(textwrap.dedent(segment))
    except (SyntaxError, ValueError):
        return None
    kernels = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and any(is_prim_func_decorator(d) for d in n.decorator_list)]
    if len(kernels) != 1:
        return None
    names: dict[str, str] = {}
    defaults: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            dt = dtype_name(node.value)
            if dt:
                names.setdefault(node.targets[0].id, dt)
        elif isinstance(node, ast.FunctionDef):  # a maker's ``dtype="float32"`` default
            for param, default in _defaults(node.args):
                dt = dtype_name(default)
                if dt:
                    defaults.setdefault(param, dt)
    found = static_data_dtype(kernels[0], names.get)
    if found is not None or not defaults:
        return found
    # nothing the text assigns names a dtype: the makers' defaults, only where they give
    # every tensor its dtype (a default accumulator beside a caller's dtype is no label)
    merged = {**defaults, **names}
    unknown: list[str] = []

    def lookup(name: str) -> str | None:
        if name not in merged:
            unknown.append(name)
        return merged.get(name)

    found = static_data_dtype(kernels[0], lookup)
    return None if unknown else found


def _defaults(a: ast.arguments) -> list[tuple[str, ast.expr]]:
    """(parameter, default) of every parameter that has one."""
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip((p.arg for p in positional[len(positional) - len(a.defaults):]),
                     a.defaults, strict=True))
    return pairs + [(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                    if d is not None]
