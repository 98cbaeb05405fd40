"""The values a static evaluation of a kernel file works with (stdlib only): what it may
call (``math``, a few builtins, the arithmetic operators), the checks that a value is what
the file uses it as, and ordered comparisons. :mod:`static_eval` walks the syntax tree."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Mapping

MATH: dict[str, Callable[..., object]] = {
    "ceil": math.ceil, "floor": math.floor, "prod": math.prod, "sqrt": math.sqrt,
    "log2": math.log2, "gcd": math.gcd, "isqrt": math.isqrt}
BUILTINS: dict[str, Callable[..., object]] = {
    "int": int, "float": float, "str": str, "bool": bool, "len": len, "min": min, "max": max,
    "sum": sum, "abs": abs, "round": round, "sorted": sorted, "dict": dict}
#: the arithmetic of a ``BinOp`` (the operator module's functions take any operands; one
#: that does not apply raises, and the evaluation is :class:`Unresolved`)
BINARY: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Pow: operator.pow,
    ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_}


class Unresolved(Exception):
    """An expression whose value cannot be known without running the file."""


def as_iterable(value: object, what: str) -> Iterable[object]:
    """``value`` where the file iterates it (``*x``, ``for v in x``, ``a, b = x``)."""
    if not isinstance(value, Iterable):
        raise Unresolved(f"{what} of a {type(value).__name__}")
    return value


def as_mapping(value: object, what: str) -> Mapping[object, object]:
    """``value`` where the file unpacks it as keywords or dict items (``**x``)."""
    if not isinstance(value, Mapping):
        raise Unresolved(f"{what} of a {type(value).__name__}")
    return value


def as_index(value: object) -> int:
    """``value`` where the file uses it as an integer (``range``, ``x.size(i)``)."""
    if not isinstance(value, int):
        raise Unresolved(f"an integer, not a {type(value).__name__}")
    return value


def ordered(a: object, b: object, op: str) -> bool:
    """``a <op> b`` of two numbers, strings, tuples or lists; :class:`Unresolved` for
    values that do not order (``None < 1``, ``"a" < 1``)."""
    try:
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return pick(op, a < b, a > b, a <= b, a >= b)
        if isinstance(a, str) and isinstance(b, str):
            return pick(op, a < b, a > b, a <= b, a >= b)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return pick(op, a < b, a > b, a <= b, a >= b)
        if isinstance(a, list) and isinstance(b, list):
            return pick(op, a < b, a > b, a <= b, a >= b)
    except TypeError as exc:  # items that do not order: (1, "a") < (1, 2)
        raise Unresolved("comparison") from exc
    raise Unresolved("comparison")


def pick(op: str, lt: bool, gt: bool, le: bool, ge: bool) -> bool:
    return {"<": lt, ">": gt, "<=": le, ">=": ge}[op]
