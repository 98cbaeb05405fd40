"""Evaluate the literal-ish expressions of a kernel file from its syntax tree (stdlib only).

Numbers, strings, dtypes, tuples, lists, dicts, arithmetic (``math.ceil(A / B)`` too), names
bound by assignments, ``dict(...)``/``range``/``zip``/``itertools.product``,
comprehensions, ``args.M`` of an ``argparse`` namespace (its ``default``), ``x.shape`` of a
tensor built from literals, and module functions made of assignments and one ``return``.
Anything else raises :class:`Unresolved`. Nothing of the file runs.

Each evaluation may keep a *trail* (:class:`Trail`): the argparse options and the caller
frames a value came through, so an argument's source can say "argparse default --M".
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from laya_tui.core.kernel_table import DTYPE_NAMES
from laya_tui.families.tilelang.static_values import (
    BINARY,
    BUILTINS,
    MATH,
    Unresolved,
    as_index,
    as_iterable,
    as_mapping,
    ordered,
)

_DTYPE_OWNERS = {"T", "tl", "tilelang", "torch", "language", "tilelang.language", "tvm"}
#: torch factories whose positional arguments (or first tuple) are the shape
TENSOR_MAKERS = {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "randn_like",
                 "empty_strided", "arange"}
#: Names and the values a static evaluation bound them to (numbers, strings, dtypes,
#: lists, dicts: whatever the file's expressions evaluate to; narrowed where they are used).
Values: TypeAlias = dict[str, object]
_TENSOR_METHODS = ("cuda", "to", "contiguous", "half", "float", "bfloat16", "requires_grad_",
                   "cpu", "clone", "detach")
_MAX_ITEMS = 100_000


@dataclass
class Trail:
    """Where an evaluated value came from, beyond literals and local names."""

    argparse: list[str] = field(default_factory=list)  # option strings (--M)
    callers: list[str] = field(default_factory=list)  # "test_x() at line 12"


def dtype_name(node: ast.expr) -> str | None:
    """``T.float16`` / ``torch.bfloat16`` / ``"float16"`` / ``T.dtype("int8")`` -> its name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return DTYPE_NAMES.get(node.value.lower())
    if isinstance(node, ast.Attribute):
        owner = ast.unparse(node.value)
        if owner in _DTYPE_OWNERS or owner.endswith(".language"):
            return DTYPE_NAMES.get(node.attr)
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("T.dtype", "tl.dtype",
                                                                   "DataType") and node.args:
        return dtype_name(node.args[0])
    return None


class Scope:
    """Names known at one place of the file: local assignments, then the parent's."""

    def __init__(self, names: dict[str, ast.expr], parent: Scope | None = None,
                 values: Values | None = None, trail: Trail | None = None,
                 namespaces: dict[str, dict[str, tuple[str, ast.expr | None]]] | None = None
                 ) -> None:
        self.names = names
        self.parent = parent
        self.values = values if values is not None else {}
        self.trail = trail
        #: argparse namespaces: name -> {dest: (option string, default expression)}
        self.namespaces = namespaces or {}
        #: where a value in ``values`` came from (merged into the trail when it is used)
        self.notes: dict[str, Trail] = {}

    def lookup(self, name: str, depth: int) -> object:
        if name in self.values:
            if name in self.notes:
                self.note_from(self.notes[name])
            return self.values[name]
        if name in self.names:
            return evaluate(self.names[name], self, depth + 1)
        if self.parent is not None:
            return self.parent.lookup(name, depth)
        raise Unresolved(name)

    def namespace(self, name: str) -> dict[str, tuple[str, ast.expr | None]] | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.namespaces:
                return scope.namespaces[name]
            if name in scope.names or name in scope.values:
                return None
            scope = scope.parent
        return None

    def note_from(self, other: Trail) -> None:
        """Merge ``other`` into the trail of this evaluation."""
        trail = self.note()
        if trail is None:
            return
        trail.argparse.extend(f for f in other.argparse if f not in trail.argparse)
        trail.callers.extend(c for c in other.callers if c not in trail.callers)

    def note(self) -> Trail | None:
        scope: Scope | None = self
        while scope is not None:
            if scope.trail is not None:
                return scope.trail
            scope = scope.parent
        return None


def evaluate(node: ast.expr, scope: Scope | None, depth: int = 0) -> object:
    """The value of a literal-ish expression; :class:`Unresolved` for anything else."""
    if depth > 40:
        raise Unresolved("too deep")
    dt = dtype_name(node) if not isinstance(node, ast.Constant) else None
    if dt is not None:
        return dt
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if scope is None:
            raise Unresolved(node.id)
        return scope.lookup(node.id, depth)
    if isinstance(node, (ast.Tuple, ast.List)):
        items: list[object] = []
        for el in node.elts:
            if isinstance(el, ast.Starred):
                items.extend(as_iterable(evaluate(el.value, scope, depth + 1), "*"))
            else:
                items.append(evaluate(el, scope, depth + 1))
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        out: dict[object, object] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                out.update(as_mapping(evaluate(v, scope, depth + 1), "**"))
            else:
                out[evaluate(k, scope, depth + 1)] = evaluate(v, scope, depth + 1)
        return out
    if isinstance(node, ast.UnaryOp):
        operand = evaluate(node.operand, scope, depth + 1)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(operand,
                                                                    (int, float, complex)):
            return -operand if isinstance(node.op, ast.USub) else +operand
        raise Unresolved(ast.unparse(node))
    if isinstance(node, ast.BinOp):
        return _binop(node, scope, depth)
    if isinstance(node, ast.IfExp):
        return evaluate(node.body if evaluate(node.test, scope, depth + 1) else node.orelse,
                        scope, depth + 1)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = evaluate(node.left, scope, depth + 1), evaluate(node.comparators[0], scope,
                                                                depth + 1)
        cmp = {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: ordered(a, b, "<"),
               ast.Gt: ordered(a, b, ">"), ast.LtE: ordered(a, b, "<="),
               ast.GtE: ordered(a, b, ">=")}
        if type(node.ops[0]) in cmp:
            return cmp[type(node.ops[0])]
        raise Unresolved(ast.unparse(node))
    if isinstance(node, ast.Subscript):
        base = evaluate(node.value, scope, depth + 1)
        try:
            key = _slice(node.slice, scope, depth)
            if isinstance(base, Mapping):
                return base[key]
            if isinstance(base, (list, tuple, str, bytes)) and isinstance(key, (int, slice)):
                return base[key]
        except Exception as exc:  # noqa: BLE001 - a missing key, an index out of range
            raise Unresolved(ast.unparse(node)) from exc
        raise Unresolved(ast.unparse(node))
    if isinstance(node, ast.Attribute):
        return _attribute(node, scope, depth)
    if isinstance(node, ast.Call):
        return _call(node, scope, depth)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _comprehension(node, scope, depth)
    raise Unresolved(ast.unparse(node)[:80])


def _slice(node: ast.expr, scope: Scope | None, depth: int) -> object:
    if isinstance(node, ast.Slice):
        lower, upper, step = (evaluate(p, scope, depth + 1) if p is not None else None
                              for p in (node.lower, node.upper, node.step))
        return slice(lower, upper, step)
    return evaluate(node, scope, depth + 1)


def _binop(node: ast.BinOp, scope: Scope | None, depth: int) -> object:
    a, b = evaluate(node.left, scope, depth + 1), evaluate(node.right, scope, depth + 1)
    fn = BINARY.get(type(node.op))
    if fn is None:
        raise Unresolved(ast.unparse(node))
    if isinstance(node.op, ast.Mult) and isinstance(a, (str, list, tuple)) \
            and isinstance(b, int) and b > _MAX_ITEMS:
        raise Unresolved("too large")
    try:
        return fn(a, b)
    except Exception as exc:  # noqa: BLE001 - e.g. a string times a dict, a division by zero
        raise Unresolved(ast.unparse(node)) from exc


def _attribute(node: ast.Attribute, scope: Scope | None, depth: int) -> object:
    """``args.M`` of an argparse namespace, ``x.shape`` of a tensor built from literals."""
    if scope is not None and isinstance(node.value, ast.Name):
        options = scope.namespace(node.value.id)
        if options is not None:
            if node.attr not in options:
                raise Unresolved(f"{node.value.id}.{node.attr}")
            flag, default = options[node.attr]
            trail = scope.note()
            if trail is not None and flag not in trail.argparse:
                trail.argparse.append(flag)
            return evaluate(default, scope, depth + 1) if default is not None else None
    if node.attr == "shape":
        return tensor_shape(node.value, scope, depth)
    raise Unresolved(ast.unparse(node)[:80])


def tensor_shape(node: ast.expr, scope: Scope | None, depth: int = 0) -> tuple[int, ...]:
    """The shape of ``torch.randn(M, N, ...)`` (through names, ``.cuda()``, ``.half()``...)."""
    maker = tensor_maker(node, scope)
    if maker is None:
        raise Unresolved("not a tensor built from literals")
    dims: list[ast.expr] = list(maker.args)
    name = maker.func.attr if isinstance(maker.func, ast.Attribute) else ""
    if name == "full" and dims:
        dims = dims[:1]
    if name == "randint":  # randint(low, high, size) / randint(high, size)
        size = next((kw.value for kw in maker.keywords if kw.arg == "size"), None)
        dims = [size] if size is not None else dims[-1:]
    if name == "arange":
        return (len(range(*[as_index(evaluate(d, scope, depth + 1)) for d in dims])),)
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = list(dims[0].elts)
    size_kw = next((kw.value for kw in maker.keywords if kw.arg == "size"), None)
    if not dims and size_kw is not None:
        dims = [size_kw]
    values: list[object] = []
    for d in dims:
        v = evaluate(d, scope, depth + 1)
        values.extend(v) if isinstance(v, (tuple, list)) else values.append(v)
    sizes = [v for v in values if isinstance(v, int)]
    if len(sizes) != len(values):
        raise Unresolved("shape")
    return tuple(sizes)


def tensor_maker(node: ast.expr | None, scope: Scope | None) -> ast.Call | None:
    """The ``torch.<factory>(...)`` call a tensor expression comes from, if any."""
    for _ in range(6):
        if isinstance(node, ast.Name) and scope is not None:
            node = lookup_expr(scope, node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _TENSOR_METHODS:
            node = node.func.value
        else:
            break
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in TENSOR_MAKERS:
        return node
    return None


def lookup_expr(scope: Scope | None, name: str) -> ast.expr | None:
    """The expression ``name`` is bound to in ``scope`` or a parent."""
    while scope is not None:
        if name in scope.names:
            return scope.names[name]
        scope = scope.parent
    return None


def _call(node: ast.Call, scope: Scope | None, depth: int) -> object:
    fname = ast.unparse(node.func)
    if fname.endswith((".parse_args", ".cuda", ".to")) or isinstance(node.func, ast.Attribute) \
            and node.func.attr in TENSOR_MAKERS:
        raise Unresolved(fname)
    args: list[object] = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            args.extend(as_iterable(evaluate(a.value, scope, depth + 1), "*"))
        else:
            args.append(evaluate(a, scope, depth + 1))
    kwargs: dict[str, object] = {}
    for kw in node.keywords:
        if kw.arg is None:
            for k, v in as_mapping(evaluate(kw.value, scope, depth + 1), "**").items():
                if not isinstance(k, str):
                    raise Unresolved(f"{fname}(...): a keyword that is not a string")
                kwargs[k] = v
        else:
            kwargs[kw.arg] = evaluate(kw.value, scope, depth + 1)
    try:
        return _apply(node, fname, args, kwargs, scope, depth)
    except Unresolved:
        raise
    except Exception as exc:  # noqa: BLE001 - len(None), int("x"): not a value we can know
        raise Unresolved(f"{fname}(...)") from exc


def _apply(node: ast.Call, fname: str, args: list[object], kwargs: dict[str, object],
           scope: Scope | None, depth: int) -> object:
    short = fname.rsplit(".", 1)[-1]
    if fname in ("list", "tuple"):
        items = list(itertools.islice(as_iterable(args[0], fname), _MAX_ITEMS)) if args else []
        return items if fname == "list" else tuple(items)
    if fname in ("itertools.product", "product"):
        return list(itertools.islice(itertools.product(
            *[as_iterable(a, fname) for a in args]), _MAX_ITEMS))
    if fname == "zip":
        return list(zip(*[as_iterable(a, fname) for a in args], strict=False))
    if fname == "range":
        return list(itertools.islice(range(*[as_index(a) for a in args]), _MAX_ITEMS))
    if fname in BUILTINS:
        return BUILTINS[fname](*args, **kwargs)
    if fname.startswith("math.") and short in MATH:
        return MATH[short](*args)
    if fname in ("T.ceildiv", "tl.ceildiv", "ceildiv", "cdiv", "triton.cdiv", "T.cdiv") \
            and len(args) == 2:
        a, b = args
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return -(-a // b)
        raise Unresolved(f"{fname}(...)")
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("keys", "values", "items") \
            and not args:
        base = evaluate(node.func.value, scope, depth + 1)
        if isinstance(base, dict):
            return list(getattr(base, node.func.attr)())
    if isinstance(node.func, ast.Attribute) and node.func.attr == "split" \
            and isinstance(node.func.value, (ast.Constant, ast.Name, ast.Attribute)):
        base = evaluate(node.func.value, scope, depth + 1)
        if isinstance(base, str) and len(args) <= 2:
            sep = args[0] if args else None
            maxsplit = as_index(args[1]) if len(args) == 2 else -1
            if sep is None or isinstance(sep, str):
                return base.split(sep, maxsplit)
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("size", "dim") \
            and node.func.value is not None:
        shape = tensor_shape(node.func.value, scope, depth)
        if node.func.attr == "dim":
            return len(shape)
        return shape[as_index(args[0])] if args else shape
    if scope is not None and isinstance(node.func, ast.Name):
        fn = module_function(scope, node.func.id)
        if fn is not None:
            return run_function(fn, args, kwargs, scope, depth)
    raise Unresolved(fname)


def _comprehension(node: ast.ListComp | ast.GeneratorExp, scope: Scope | None,
                   depth: int) -> list[object]:
    if len(node.generators) != 1:
        raise Unresolved("comprehension")
    gen = node.generators[0]
    out = []
    for item in itertools.islice(as_iterable(evaluate(gen.iter, scope, depth + 1), "for"),
                                 _MAX_ITEMS):
        values: Values = {}
        bind(gen.target, item, values)
        inner = Scope({}, scope, values)
        if all(evaluate(cond, inner, depth + 1) for cond in gen.ifs):
            out.append(evaluate(node.elt, inner, depth + 1))
    return out


def bind(target: ast.expr, value: object, into: Values) -> None:
    """Bind an assignment target (a name or a tuple of names) to ``value``."""
    if isinstance(target, ast.Name):
        into[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        vals = list(as_iterable(value, "unpacking"))
        if len(vals) != len(target.elts):
            raise Unresolved("unpacking")
        for t, v in zip(target.elts, vals, strict=True):
            bind(t, v, into)
    else:
        raise Unresolved("target")


def root(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def module_function(scope: Scope, name: str) -> ast.FunctionDef | None:
    fn = getattr(root(scope), "functions", {}).get(name)
    return fn if isinstance(fn, ast.FunctionDef) else None


def run_function(fn: ast.FunctionDef, args: list[object], kwargs: Mapping[str, object],
                 scope: Scope, depth: int) -> object:
    """Evaluate a module function made of assignments and one ``return`` (config builders)."""
    values: Values = {}
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults,
                        strict=True))
    for kw, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if d is not None:
            defaults[kw.arg] = d
    top = root(scope)
    for i, p in enumerate(params):
        if i < len(args):
            values[p] = args[i]
        elif p in kwargs:
            values[p] = kwargs[p]
        elif p in defaults:
            values[p] = evaluate(defaults[p], top, depth + 1)
    for kw in fn.args.kwonlyargs:
        if kw.arg in kwargs:
            values[kw.arg] = kwargs[kw.arg]
        elif kw.arg in defaults:
            values[kw.arg] = evaluate(defaults[kw.arg], top, depth + 1)
    local = Scope({}, top, values)
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            bind(stmt.targets[0], evaluate(stmt.value, local, depth + 1), values)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            return evaluate(stmt.value, local, depth + 1)
        else:
            raise Unresolved(f"{fn.name}() does more than assign and return")
    raise Unresolved(f"{fn.name}() returns nothing")


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
                    collect_names(t, node.value, names)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                names[node.target.id] = node.value
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
        super().__init__(names)


def collect_names(target: ast.expr, value: ast.expr, into: dict[str, ast.expr]) -> None:
    """``a, b = 1, 2`` binds a and b to their own expressions; ``a, b = x.shape`` to
    ``x.shape[0]`` and ``x.shape[1]``; ``a = expr`` binds a."""
    if isinstance(target, ast.Name):
        into[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                collect_names(t, v, into)
        elif not any(isinstance(t, ast.Starred) for t in target.elts):
            for i, t in enumerate(target.elts):  # unpacking an expression: its items
                item = ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load())
                collect_names(t, ast.copy_location(item, value), into)
