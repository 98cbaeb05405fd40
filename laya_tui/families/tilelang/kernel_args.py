"""The arguments a TileLang kernel is built with, found without running its file (stdlib only).

A ``@tilelang.jit`` function takes shape and tiling parameters (``matmul(M, N, K, block_M,
...)``, or tensors plus ``T.const("M, N")`` names in the eager style). Each argument comes
from the first of these sources that has it (highest precedence first):

1. ``[tool.laya-tui.kernel-args."<file>::<kernel>"]`` in the workspace's ``pyproject.toml``
   (``opts["kernel_args"]``): one key per argument, plus the reserved keys ``dtypes`` (one
   cell per dtype, passed as the ``dtype-arg`` argument, default ``dtype``) and ``targets``;
2. a module-level ``LAYA_ARGS = {"<kernel>": dict(M=1024, ...)}`` in the kernel file (a
   list of dicts: the first one is used);
3. the literal arguments the file itself passes to the kernel anywhere (``kernel(1024,
   ...)``, ``kernel.compile(M=1024, ...)``, ``kernel.get_tir(...)`` in ``main()``, a test
   function or the ``__main__`` block), names resolved from the enclosing function's
   defaults and assignments and from module constants; tensor arguments built with
   ``torch.randn(M, N, ...)`` give the ``T.const`` shape names of the eager style;
4. the first config of ``@autotune(configs=...)`` (a literal list, a name bound to one, or a
   module function building it with ``itertools.product``);
5. the parameter's own default.

Everything here reads syntax trees: no TileLang, no torch, nothing of the file runs.
"""

from __future__ import annotations

import ast
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from laya_tui.core.kernel_table import DTYPE_NAMES, validate_tables  # noqa: F401

#: Keys of a kernel-args table that are not kernel arguments.
RESERVED = ("dtypes", "targets", "dtype-arg")
_DTYPE_OWNERS = {"T", "tl", "tilelang", "torch", "language", "tilelang.language"}
_TENSOR_MAKERS = {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "randn_like"}
_CALL_METHODS = {"compile", "get_tir", "get_kernel_source", "par_compile"}
_MAX_ITEMS = 100_000


class Unresolved(Exception):
    """An expression whose value cannot be known without running the file."""


@dataclass
class KernelSig:
    """What the syntax tree says about one kernel function."""

    name: str
    line: int
    params: list[str]
    defaults: dict[str, Any]  # literal defaults only
    has_default: set[str]
    tensor_params: dict[str, tuple[list[str], str | None]]  # name -> (shape names, dtype name)
    const_names: list[str]  # T.const("M, N") names: required keyword arguments
    autotune: ast.expr | None = None  # the configs= expression
    jit_kwargs: dict[str, Any] = field(default_factory=dict)  # literal @tilelang.jit kwargs

    @property
    def required(self) -> list[str]:
        """Arguments that must have a value to build the kernel, in signature order."""
        req = [p for p in self.params if p not in self.tensor_params and p not in self.has_default]
        return req + [c for c in self.const_names if c not in req]

    @property
    def accepted(self) -> list[str]:
        return [p for p in self.params if p not in self.tensor_params] + [
            c for c in self.const_names if c not in self.params]


@dataclass
class ResolvedArgs:
    """Values for a kernel's arguments and where each came from."""

    values: dict[str, Any]
    sources: dict[str, str]
    missing: list[str]
    dtypes: list[str] | None = None  # the table's dtypes (one cell each)
    dtype_arg: str | None = None
    targets: list[str] | None = None


# -- evaluating a restricted set of expressions ---------------------------------------------


def dtype_name(node: ast.expr) -> str | None:
    """``T.float16`` / ``torch.bfloat16`` / ``"float16"`` -> ``"float16"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return DTYPE_NAMES.get(node.value.lower())
    if isinstance(node, ast.Attribute):
        owner = ast.unparse(node.value)
        if owner in _DTYPE_OWNERS or owner.endswith(".language"):
            return DTYPE_NAMES.get(node.attr)
        if node.attr == "dtype" and isinstance(node.value, ast.Call):  # T.dtype("float16")
            return None
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("T.dtype", "tl.dtype") \
            and node.args:
        return dtype_name(node.args[0])
    return None


class Scope:
    """Names known at one place of the file: local assignments, then module constants."""

    def __init__(self, names: dict[str, ast.expr], parent: Scope | None = None,
                 values: dict[str, Any] | None = None) -> None:
        self.names = names
        self.parent = parent
        self.values = values if values is not None else {}

    def lookup(self, name: str, depth: int) -> Any:
        if name in self.values:
            return self.values[name]
        if name in self.names:
            return evaluate(self.names[name], self, depth + 1)
        if self.parent is not None:
            return self.parent.lookup(name, depth)
        raise Unresolved(name)


def evaluate(node: ast.expr, scope: Scope | None, depth: int = 0) -> Any:
    """The value of a literal-ish expression (numbers, strings, dtypes, tuples, lists, dicts,
    arithmetic, names, ``dict(...)``, ``list(...)``, ``range``, ``zip``, ``itertools.product``,
    comprehensions); :class:`Unresolved` for anything else."""
    if depth > 40:
        raise Unresolved("too deep")
    dt = dtype_name(node) if not isinstance(node, ast.Constant) else None
    if dt is not None:
        return dt
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if scope is None:
            raise Unresolved(node.id)
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        return scope.lookup(node.id, depth)
    if isinstance(node, (ast.Tuple, ast.List)):
        items: list[Any] = []
        for el in node.elts:
            if isinstance(el, ast.Starred):
                items.extend(evaluate(el.value, scope, depth + 1))
            else:
                items.append(evaluate(el, scope, depth + 1))
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                out.update(evaluate(v, scope, depth + 1))
            else:
                out[evaluate(k, scope, depth + 1)] = evaluate(v, scope, depth + 1)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = evaluate(node.operand, scope, depth + 1)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, scope, depth + 1), evaluate(node.right, scope, depth + 1)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Pow: lambda: a ** b,
               ast.Mod: lambda: a % b}
        fn = ops.get(type(node.op))
        if fn is None:
            raise Unresolved(ast.unparse(node))
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - e.g. a string times a dict
            raise Unresolved(ast.unparse(node)) from exc
    if isinstance(node, ast.Subscript):
        base = evaluate(node.value, scope, depth + 1)
        try:
            return base[evaluate(node.slice, scope, depth + 1)]
        except Exception as exc:  # noqa: BLE001
            raise Unresolved(ast.unparse(node)) from exc
    if isinstance(node, ast.Call):
        return _call(node, scope, depth)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _comprehension(node, scope, depth)
    raise Unresolved(ast.unparse(node)[:80])


def _call(node: ast.Call, scope: Scope | None, depth: int) -> Any:
    fname = ast.unparse(node.func)
    args = [evaluate(a, scope, depth + 1) for a in node.args if not isinstance(a, ast.Starred)]
    for a in node.args:
        if isinstance(a, ast.Starred):
            args.extend(evaluate(a.value, scope, depth + 1))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            kwargs.update(evaluate(kw.value, scope, depth + 1))
        else:
            kwargs[kw.arg] = evaluate(kw.value, scope, depth + 1)
    if fname == "dict":
        return dict(*args, **kwargs)
    if fname in ("list", "tuple"):
        return list(itertools.islice(args[0], _MAX_ITEMS)) if args else []
    if fname in ("itertools.product", "product"):
        return list(itertools.islice(itertools.product(*args), _MAX_ITEMS))
    if fname == "zip":
        return list(zip(*args, strict=False))
    if fname == "range":
        return list(itertools.islice(range(*args), _MAX_ITEMS))
    if fname in ("int", "float", "str", "bool", "len", "min", "max", "sum"):
        return {"int": int, "float": float, "str": str, "bool": bool, "len": len, "min": min,
                "max": max, "sum": sum}[fname](*args)
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("keys", "values",
                                                                   "items") and not args:
        base = evaluate(node.func.value, scope, depth + 1)
        if isinstance(base, dict):
            return list(getattr(base, node.func.attr)())
    if scope is not None and isinstance(node.func, ast.Name):
        fn = _module_function(scope, node.func.id)
        if fn is not None:
            return _run_function(fn, args, kwargs, scope, depth)
    raise Unresolved(fname)


def _comprehension(node: ast.ListComp | ast.GeneratorExp, scope: Scope | None,
                   depth: int) -> list[Any]:
    if len(node.generators) != 1 or node.generators[0].ifs:
        raise Unresolved("comprehension")
    gen = node.generators[0]
    out = []
    for item in itertools.islice(evaluate(gen.iter, scope, depth + 1), _MAX_ITEMS):
        values: dict[str, Any] = {}
        _bind(gen.target, item, values)
        out.append(evaluate(node.elt, Scope({}, scope, values), depth + 1))
    return out


def _bind(target: ast.expr, value: Any, into: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        into[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        vals = list(value)
        if len(vals) != len(target.elts):
            raise Unresolved("unpacking")
        for t, v in zip(target.elts, vals, strict=True):
            _bind(t, v, into)
    else:
        raise Unresolved("target")


def _root(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def _module_function(scope: Scope, name: str) -> ast.FunctionDef | None:
    fn = getattr(_root(scope), "functions", {}).get(name)
    return fn if isinstance(fn, ast.FunctionDef) else None


def _run_function(fn: ast.FunctionDef, args: list[Any], kwargs: dict[str, Any], scope: Scope,
                  depth: int) -> Any:
    """Evaluate a module function made of assignments and one ``return`` (config builders)."""
    values: dict[str, Any] = {}
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults,
                        strict=True))
    for kw, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if d is not None:
            defaults[kw.arg] = d
    root = _root(scope)
    for i, p in enumerate(params):
        if i < len(args):
            values[p] = args[i]
        elif p in kwargs:
            values[p] = kwargs[p]
        elif p in defaults:
            values[p] = evaluate(defaults[p], root, depth + 1)
    for kw in fn.args.kwonlyargs:
        if kw.arg in kwargs:
            values[kw.arg] = kwargs[kw.arg]
        elif kw.arg in defaults:
            values[kw.arg] = evaluate(defaults[kw.arg], root, depth + 1)
    local = Scope({}, root, values)
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            _bind(stmt.targets[0], evaluate(stmt.value, local, depth + 1), values)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            return evaluate(stmt.value, local, depth + 1)
        else:
            raise Unresolved(f"{fn.name}() does more than assign and return")
    raise Unresolved(f"{fn.name}() returns nothing")


# -- reading one file -------------------------------------------------------------------------


class ModuleScope(Scope):
    """Module-level constants (simple assignments) and functions of a file."""

    def __init__(self, tree: ast.Module) -> None:
        names: dict[str, ast.expr] = {}
        self.tree = tree
        self.calls: dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]] | None = None
        self.functions: dict[str, ast.AST] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    _collect_names(t, node.value, names)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                names[node.target.id] = node.value
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
        super().__init__(names)


def _collect_names(target: ast.expr, value: ast.expr, into: dict[str, ast.expr]) -> None:
    """``a, b = 1, 2`` binds a and b to their own expressions; ``a = expr`` binds a."""
    if isinstance(target, ast.Name):
        into[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            _collect_names(t, v, into)


def _decorator_name(d: ast.expr) -> str:
    return ast.unparse(d.func if isinstance(d, ast.Call) else d)


def is_jit_decorator(d: ast.expr) -> bool:
    name = _decorator_name(d)
    return name == "jit" or name.endswith((".jit", ".lazy_jit")) or name == "lazy_jit"


def is_autotune_decorator(d: ast.expr) -> bool:
    name = _decorator_name(d)
    return name == "autotune" or name.endswith(".autotune")


def is_prim_func_decorator(d: ast.expr) -> bool:
    name = _decorator_name(d)
    return name == "prim_func" or name.endswith(".prim_func")


def kernel_signature(fn: ast.FunctionDef, scope: ModuleScope) -> KernelSig:
    """Parameters, tensor parameters, ``T.const`` names and decorators of a jit function."""
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    has_default = set(positional[len(positional) - len(a.defaults):])
    has_default |= {k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                    if d is not None}
    defaults: dict[str, Any] = {}
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
    pairs += [(k.arg, d) for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
              if d is not None]
    for name, d in pairs:
        try:
            defaults[name] = evaluate(d, scope)
        except Unresolved:
            pass
    tensors: dict[str, tuple[list[str], str | None]] = {}
    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs):
        if p.annotation is not None and _is_tensor_annotation(p.annotation):
            tensors[p.arg] = _tensor_shape(p.annotation)
    consts: list[str] = []
    for node in _top_level(fn):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id in params and _is_tensor_annotation(node.annotation):
            tensors[node.target.id] = _tensor_shape(node.annotation)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".const") \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            for part in node.args[0].value.replace(",", " ").split():
                if part not in consts:
                    consts.append(part)
    sig = KernelSig(name=fn.name, line=fn.lineno, params=params, defaults=defaults,
                    has_default=has_default, tensor_params=tensors, const_names=consts)
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


def _is_tensor_annotation(node: ast.expr) -> bool:
    text = ast.unparse(node.func if isinstance(node, ast.Call) else node)
    return text.rsplit(".", 1)[-1] in ("Tensor", "Buffer", "StridedTensor", "FragmentBuffer",
                                       "SharedBuffer", "ptr")


def _tensor_shape(node: ast.expr) -> tuple[list[str], str | None]:
    """Shape names and the dtype name of ``T.Tensor((M, N), dtype)`` (names only)."""
    if not isinstance(node, ast.Call) or not node.args:
        return [], None
    shape = node.args[0]
    names = [el.id if isinstance(el, ast.Name) else "" for el in shape.elts] \
        if isinstance(shape, (ast.Tuple, ast.List)) else []
    dt = node.args[1] if len(node.args) > 1 else next(
        (kw.value for kw in node.keywords if kw.arg == "dtype"), None)
    return names, dt.id if isinstance(dt, ast.Name) else None


# -- literal calls in the file ------------------------------------------------------------------


def _function_scope(fn: ast.FunctionDef | None, module: ModuleScope) -> Scope:
    """The enclosing function's parameter defaults and plain assignments."""
    names: dict[str, ast.expr] = {}
    if fn is None:  # module level: the ``if __name__ == "__main__":`` block's assignments
        for node in module.tree.body:
            if isinstance(node, ast.If):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Assign):
                        for t in sub.targets:
                            _collect_names(t, sub.value, names)
        return Scope(names, module)
    a = fn.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    for name, d in zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True):
        names[name] = d
    for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if d is not None:
            names[k.arg] = d
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                _collect_names(t, node.value, names)
    scope = Scope(names, module)
    return scope


def _call_index(tree: ast.Module) -> dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]]:
    """Every call ``name(...)`` / ``name.compile(...)`` in the file by ``name``, with its
    enclosing function (one walk per file)."""
    index: dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]] = {}
    stack: list[tuple[ast.AST, ast.FunctionDef | None]] = [(tree, None)]
    while stack:
        node, fn = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Name):
                    index.setdefault(f.id, []).append((child, fn))
                elif isinstance(f, ast.Attribute) and f.attr in _CALL_METHODS \
                        and isinstance(f.value, ast.Name):
                    index.setdefault(f.value.id, []).append((child, fn))
            if isinstance(child, ast.FunctionDef) and any(
                    is_jit_decorator(d) or is_prim_func_decorator(d)
                    for d in child.decorator_list):
                continue  # kernel bodies (most of a file) never call kernels
            stack.append((child, child if isinstance(child, ast.FunctionDef) else fn))
    for calls in index.values():
        calls.sort(key=lambda cf: (cf[0].lineno, cf[0].col_offset))
    return index


def _calls_to(module: ModuleScope, name: str) -> list[tuple[ast.Call, ast.FunctionDef | None]]:
    """Calls of the kernel ``name`` outside its own body, in file order."""
    if module.calls is None:
        module.calls = _call_index(module.tree)
    return [(c, fn) for c, fn in module.calls.get(name, [])
            if fn is None or fn.name != name]


def _bind_call(call: ast.Call, sig: KernelSig, scope: Scope) -> dict[str, Any]:
    """The arguments one call gives (unresolvable ones left out)."""
    got: dict[str, Any] = {}
    positional = [p for p in sig.params]
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or i >= len(positional):
            break
        pname = positional[i]
        if pname in sig.tensor_params:
            got.update(_shape_from_tensor(arg, sig.tensor_params[pname], scope))
            continue
        try:
            got[pname] = evaluate(arg, scope)
        except Unresolved:
            pass
    for kw in call.keywords:
        if kw.arg is None:
            try:
                extra = evaluate(kw.value, scope)
            except Unresolved:
                continue
            if isinstance(extra, dict):
                got.update({k: v for k, v in extra.items() if k in sig.accepted})
            continue
        if kw.arg in sig.tensor_params:
            got.update(_shape_from_tensor(kw.value, sig.tensor_params[kw.arg], scope))
            continue
        try:
            got[kw.arg] = evaluate(kw.value, scope)
        except Unresolved:
            pass
    return got


def _shape_from_tensor(arg: ast.expr, spec: tuple[list[str], str | None],
                       scope: Scope) -> dict[str, Any]:
    """``a = torch.randn(M, N, dtype=torch.float32)`` passed as ``A: T.Tensor((M, N), dt)``
    gives M, N (and dt)."""
    node: ast.expr | None = arg
    for _ in range(4):
        if isinstance(node, ast.Name):
            node = _lookup_expr(scope, node.id)
        else:
            break
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("cuda", "to", "contiguous", "half", "float", "bfloat16"):
        node = node.func.value
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) \
            or node.func.attr not in _TENSOR_MAKERS:
        return {}
    dims = node.args
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = dims[0].elts
    names, dt_name = spec
    out: dict[str, Any] = {}
    for name, dim in zip(names, dims, strict=False):
        if name:
            try:
                out[name] = evaluate(dim, scope)
            except Unresolved:
                pass
    dt = next((kw.value for kw in node.keywords if kw.arg == "dtype"), None)
    if dt_name and dt is not None and dtype_name(dt):
        out[dt_name] = dtype_name(dt)
    return out


def _lookup_expr(scope: Scope | None, name: str) -> ast.expr | None:
    while scope is not None:
        if name in scope.names:
            return scope.names[name]
        scope = scope.parent
    return None


def literal_call_args(tree: ast.Module, sig: KernelSig,
                      module: ModuleScope) -> tuple[dict[str, Any], int | None]:
    """The arguments of the call to the kernel that gives the most of them: (args, line)."""
    best: dict[str, Any] = {}
    line = None
    for call, fn in _calls_to(module, sig.name):
        got = _bind_call(call, sig, _function_scope(fn, module))
        if len(got) > len(best):
            best, line = got, call.lineno
    return best, line


def autotune_first(sig: KernelSig, module: ModuleScope) -> dict[str, Any]:
    """The first ``@autotune`` config, when it can be read."""
    if sig.autotune is None:
        return {}
    try:
        configs = evaluate(sig.autotune, module)
    except Unresolved:
        return {}
    if isinstance(configs, dict):  # {"block_M": [64, 128], ...}: the first of each
        return {k: (v[0] if isinstance(v, (list, tuple)) and v else v) for k, v in configs.items()}
    if isinstance(configs, (list, tuple)) and configs and isinstance(configs[0], dict):
        return dict(configs[0])
    return {}


def in_file_args(module: ModuleScope, kernel: str) -> dict[str, Any]:
    """``LAYA_ARGS = {"kernel": dict(...)}`` (or a list of dicts: the first)."""
    node = module.names.get("LAYA_ARGS")
    if node is None:
        return {}
    try:
        table = evaluate(node, module)
    except Unresolved:
        return {}
    value = table.get(kernel) if isinstance(table, dict) else None
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return dict(value) if isinstance(value, dict) else {}


# -- the pyproject table ----------------------------------------------------------------------


def table_key(path: str, kernel: str, workspace: str | None) -> str:
    """``kernels/gemm.py::matmul``: the key a kernel's table has in pyproject."""
    rel = path
    if workspace:
        try:
            candidate = os.path.relpath(path, workspace)
            if not candidate.startswith(".."):
                rel = candidate
        except ValueError:
            pass
    return f"{rel.replace(os.sep, '/')}::{kernel}"


def find_table(tables: dict[str, Any] | None, path: str, kernel: str,
               workspace: str | None) -> tuple[str, dict[str, Any]] | None:
    """The kernel's table: keyed by workspace-relative path, absolute path or file name."""
    if not tables:
        return None
    real = os.path.realpath(path)
    for key, value in tables.items():
        file, _, name = key.rpartition("::")
        if name != kernel or not isinstance(value, dict):
            continue
        cands = {os.path.realpath(os.path.join(workspace or "", file)), os.path.realpath(file)}
        if real in cands or file == os.path.basename(path):
            return key, value
    return None


# -- putting it together ------------------------------------------------------------------------


def resolve(tree: ast.Module, sig: KernelSig, module: ModuleScope, path: str,
            opts: dict[str, Any]) -> ResolvedArgs:
    """Every source, lowest precedence first, so the higher ones overwrite."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def take(found: dict[str, Any], source: str) -> None:
        for k, v in found.items():
            if k in sig.accepted or k in sig.params:
                values[k] = v
                sources[k] = source

    take({k: v for k, v in sig.defaults.items() if k not in sig.tensor_params}, "default")
    take(autotune_first(sig, module), "first @autotune config")
    lit, line = literal_call_args(tree, sig, module)
    take(lit, f"the call at line {line}")
    take(in_file_args(module, sig.name), "LAYA_ARGS")
    workspace = opts.get("workspace")
    found = find_table(opts.get("kernel_args"), path, sig.name, workspace)
    res = ResolvedArgs(values=values, sources=sources, missing=[])
    if found is not None:
        key, table = found
        take({k: v for k, v in table.items() if k not in RESERVED}, f"pyproject {key}")
        res.dtypes = [DTYPE_NAMES[d] for d in table.get("dtypes") or []] or None
        res.targets = list(table.get("targets") or []) or None
        res.dtype_arg = table.get("dtype-arg")
    res.missing = [p for p in sig.required if p not in values]
    if res.dtypes and not res.dtype_arg:
        res.dtype_arg = "dtype" if "dtype" in sig.params else next(
            (p for p in sig.params if p.endswith("dtype") and "accum" not in p), None)
        if res.dtype_arg is None:
            res.dtype_arg = "dtype"
    return res


def example_value(name: str) -> int:
    """A placeholder value for a suggested TOML line (tiling names get tile sizes)."""
    low = name.lower()
    if low.startswith(("block", "blk", "tile", "bm", "bn", "bk")):
        return 64
    if "thread" in low:
        return 128
    if "stage" in low:
        return 2
    if low in ("batch", "heads", "b", "h"):
        return 1
    return 1024


def missing_message(kernel: str, key: str, missing: list[str], workspace: str | None) -> str:
    """The error of a kernel whose arguments are unknown: which, and the lines to add."""
    where = os.path.join(workspace, "pyproject.toml") if workspace else "pyproject.toml"
    lines = [f'[tool.laya-tui.kernel-args."{key}"]'] + [
        f"{m} = {example_value(m)}" for m in missing]
    return (f"kernel arguments unknown: {kernel} needs {', '.join(missing)} and neither "
            f"pyproject, LAYA_ARGS, a literal call in its file nor an @autotune config gives "
            f"{'them' if len(missing) > 1 else 'it'}; add to {where} (your values):\n"
            + "\n".join(lines))
