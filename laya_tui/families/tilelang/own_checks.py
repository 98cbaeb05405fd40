"""A kernel file's own checks, recorded as its run makes them and judged again with the
real kernel (worker side; torch and TileLang imported inside the functions).

While the capture runs a file, every tensor a stand-in kernel returns (or writes in place)
is tagged with a :class:`Leaf`, and every torch op on a tagged tensor tags its result with
an :class:`Op` (what was called, on what): ``out.view(b, s, -1)``, ``q.float() * s[:, None]``
and ``(y - ref).abs().max() < tol`` stay expressions of the kernel's outputs. A check on such
a tensor (``torch.testing.assert_close``, ``torch.allclose``, TileLang's
``torch_assert_close``, a plain ``assert``) is recorded with the expression, the expected
side, the options the file passed and where it was made; the cell evaluates the expression
again on the real kernel's outputs (:func:`evaluate`) and judges it with the check's own
function and options (:func:`laya_tui.families.tilelang.own_verdict.judge`).
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, TypeGuard, cast

from laya_tui.families.tilelang.records import Kwargs

if TYPE_CHECKING:
    import torch

    from laya_tui.families.tilelang.capture_stubs import KernelCallRecord

_TAG = "_laya_node"

#: TileLang's ``torch_assert_close`` defaults (tilelang.utils.tensor)
TILELANG_DEFAULTS = {"rtol": 1e-2, "atol": 1e-3, "max_mismatched_ratio": 0.001,
                     "equal_nan": True}
#: the comparisons a predicate's last op may be, and how they read
COMPARE_OPS = {"lt": "<", "__lt__": "<", "le": "<=", "__le__": "<=", "gt": ">",
                "__gt__": ">", "ge": ">=", "__ge__": ">=", "eq": "==", "__eq__": "==",
                "ne": "!=", "__ne__": "!="}


@dataclass(frozen=True, eq=False)
class Leaf:
    """A kernel's output ``index`` (``-1 - i``: its argument ``i``, written in place) of
    the file's ``call``-th distinct call of the kernel whose record is ``record``."""

    record: KernelCallRecord
    call: int
    index: int


@dataclass(frozen=True, eq=False)
class Op:
    """A torch op on tensors derived from kernel outputs (those replaced by their nodes)."""

    func: Callable[..., object]
    args: tuple[object, ...]  # plain values, nodes, and lists/tuples of them
    kwargs: dict[str, object]
    inplace: bool = False  # it writes its first argument (``x.mul_(2)``, ``x[i] = v``)


@dataclass(frozen=True, eq=False)
class Item:
    """The ``index``-th tensor of an op returning several (``torch.max(x, dim=1)``)."""

    of: Node
    index: int


Node = Leaf | Op | Item
#: What a tracked number asks when the file takes the truth of a comparison on it (the
#: capture's answer: True/False, or None to let the comparison's own value stand).
Ask = Callable[["Truth"], bool | None]


def node_of(value: object) -> Node | None:
    """The node a tensor (or a number read from one) derived from a kernel's output
    carries (None: the file's own)."""
    if not (is_tensor(value) or isinstance(value, (Scalar, Truth))):
        return None
    node = getattr(value, _TAG, None)
    return node if isinstance(node, (Leaf, Op, Item)) else None


def tag(tensor: object, node: Node) -> None:
    try:
        setattr(tensor, _TAG, node)
    except (AttributeError, TypeError, RuntimeError):  # a tensor that takes no attributes
        pass


def is_tensor(value: object) -> TypeGuard[torch.Tensor]:
    """Whether ``value`` is a torch tensor (torch not imported here when the file never
    imported it)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _symbolic(value: object) -> tuple[object, bool]:
    """``value`` with its tagged tensors replaced by their nodes; whether it had any."""
    node = node_of(value)
    if node is not None:
        return node, True
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        items = [_symbolic(v) for v in value]
        if any(hit for _, hit in items):
            return type(value)(v for v, _ in items), True
    return value, False


def after_op(func: Callable[..., object], args: tuple[object, ...], kwargs: Kwargs,
             result: object) -> None:
    """Tag ``result`` (and a tensor the op wrote) when the op read a tagged tensor."""
    sides = [_symbolic(v) for v in args]
    sargs, hit = tuple(v for v, _ in sides), any(h for _, h in sides)
    skw: dict[str, object] = {}
    for k, v in kwargs.items():
        skw[k], h = _symbolic(v)
        hit = hit or h
    if not hit:
        return
    name = getattr(func, "__name__", "")
    inplace = (name.endswith("_") and not name.endswith("__")) or name == "__setitem__"
    node = Op(func, sargs, skw, inplace)
    if inplace and args and is_tensor(args[0]):
        tag(args[0], node)
    if "out" in kwargs and is_tensor(kwargs["out"]):
        tag(kwargs["out"], node)
    if is_tensor(result):
        if result is not (args[0] if args else None):  # `x.float()` of a float x is x
            tag(result, node)
    elif isinstance(result, (tuple, list)):
        for i, t in enumerate(result):
            if is_tensor(t):
                tag(t, Item(node, i))


# -- numbers read from kernel outputs (``.item()``) --------------------------------------------


class Scalar:
    """Mixed into the number ``.item()`` returns for a tensor derived from a kernel output:
    arithmetic keeps the node, a comparison gives a :class:`Truth`."""

    _laya_node: Node
    _laya_ask: Ask


class Truth:
    """``max_diff < tol`` on a :class:`Scalar`: the file taking its truth is a check."""

    def __init__(self, node: Op, ask: Ask, value: bool) -> None:
        self._laya_node = node
        self._ask = ask
        self._value = value

    def __bool__(self) -> bool:
        got = self._ask(self)
        return self._value if got is None else bool(got)


def _op_node(fn: Callable[..., object], *args: object) -> Op:
    return Op(fn, tuple(_symbolic(a)[0] for a in args), {})


def _scalar_type(base: type[int] | type[float]) -> Callable[[float], Scalar]:
    import operator

    def plain(value: object) -> object:
        """A tracked number as its plain ``base`` (anything else as it is)."""
        return base(value) if isinstance(value, Scalar) and isinstance(
            value, (int, float)) else value

    def binary(fn: Callable[[object, object], object],
               reflected: bool = False) -> Callable[[Scalar, object], object]:
        def method(self: Scalar, other: object) -> object:
            a, b = (other, self) if reflected else (self, other)
            return wrap(fn(plain(a), plain(b)), _op_node(fn, a, b), self._laya_ask)
        return method

    def compare(fn: Callable[[object, object], object]) -> Callable[[Scalar, object], object]:
        def method(self: Scalar, other: object) -> object:
            got = fn(plain(self), other)
            if got is NotImplemented:
                return got
            return Truth(_op_node(fn, self, other), self._laya_ask, bool(got))
        return method

    def unary(fn: Callable[[float], object]) -> Callable[[Scalar], object]:
        def method(self: Scalar) -> object:
            assert isinstance(self, (int, float))  # (a Scalar is an int or a float too)
            return wrap(fn(base(self)), _op_node(fn, self), self._laya_ask)
        return method

    body: dict[str, object] = {"__hash__": base.__hash__}  # the class namespace
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
        fn = getattr(operator, name)
        body[f"__{name}__"] = binary(fn)
        body[f"__r{name}__"] = binary(fn, reflected=True)
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        body[f"__{name}__"] = compare(getattr(operator, name))
    body["__abs__"] = unary(abs)
    body["__neg__"] = unary(operator.neg)
    made = type(f"Tracked{base.__name__.title()}", (Scalar, base), body)
    return cast("Callable[[float], Scalar]", made)  # a class made at run time: its call


_SCALARS: dict[type, Callable[[float], Scalar]] = {}


def wrap(value: object, node: Node, ask: Ask) -> object:
    """``value`` (a number read from a kernel-derived tensor) carrying ``node``."""
    if type(value) not in (float, int) or not isinstance(value, (int, float)):
        return value
    base: type[int] | type[float] = float if type(value) is float else int
    cls = _SCALARS.get(base) or _SCALARS.setdefault(base, _scalar_type(base))
    out = cls(value)
    out._laya_node = node
    out._laya_ask = ask
    return out


def leaves(node: object) -> Iterator[Leaf]:
    """Every kernel output ``node`` reads."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, Leaf):
            yield n
        elif isinstance(n, Item):
            todo.append(n.of)
        elif isinstance(n, Op):
            todo.extend(reversed((*n.args, *n.kwargs.values())))
        elif isinstance(n, (list, tuple)):
            todo.extend(reversed(n))


def depth(node: object, stop: int) -> int:
    """How many ops deep ``node`` is (counting stops at ``stop``)."""
    todo, most = [(node, 0)], 0
    while todo:
        n, d = todo.pop()
        most = max(most, d)
        if most >= stop:
            return most
        if isinstance(n, Item):
            todo.append((n.of, d + 1))
        elif isinstance(n, Op):
            todo.extend((v, d + 1) for v in (*n.args, *n.kwargs.values()))
        elif isinstance(n, (list, tuple)):
            todo.extend((v, d) for v in n)
    return most


#: the deepest expression a check is made again with (evaluation recurses)
MAX_DEPTH = 150


def evaluate(node: object, leaf_value: Callable[[Leaf], object],
             memo: dict[int, object] | None = None) -> object:
    """``node`` computed again, its kernel outputs given by ``leaf_value``; a plain value
    is itself. Ops that write their first argument write a copy of it."""
    memo = {} if memo is None else memo
    if isinstance(node, (list, tuple)) and not hasattr(node, "_fields"):
        return type(node)(evaluate(v, leaf_value, memo) for v in node)
    if not isinstance(node, (Leaf, Op, Item)):
        return node
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, Leaf):
        out = leaf_value(node)
    elif isinstance(node, Item):
        several = evaluate(node.of, leaf_value, memo)
        if not isinstance(several, (tuple, list)):  # (an Item is made of a tuple or list)
            raise TypeError(f"output {node.index} of {type(several).__name__}")
        out = several[node.index]
    else:
        args = list(evaluate(a, leaf_value, memo) for a in node.args)
        kwargs = {k: evaluate(v, leaf_value, memo) for k, v in node.kwargs.items()}
        if node.inplace and args and is_tensor(args[0]):
            args[0] = args[0].clone()
        out = node.func(*args, **kwargs)
        if node.inplace and getattr(node.func, "__name__", "") == "__setitem__":
            out = args[0]
    memo[id(node)] = out
    return out


# -- recording ---------------------------------------------------------------------------------


@dataclass
class Spec:
    """One comparison the file makes: its function, sides and options (as it passed them)."""

    how: str  # the check's real name: "torch.testing.assert_close", "torch.allclose", ...
    actual: object  # a node (or the tensor itself)
    expected: object  # a tensor, or a node when it is derived from kernel outputs too
    options: Kwargs = field(default_factory=dict)
    want: bool = True  # a plain assert: the truth the file's run needs
    expected_value: object = None  # the expected tensor as the file passed it


#: how each check names its tensors and options (the real functions' parameters)
_PARAMS = {
    "torch.testing.assert_close": ("actual", "expected"),
    "torch.allclose": ("input", "other", "rtol", "atol", "equal_nan"),
    "torch.equal": ("input", "other"),
    "torch_assert_close": ("tensor_a", "tensor_b", "rtol", "atol", "max_mismatched_ratio",
                           "verbose", "equal_nan", "check_device", "check_dtype",
                           "check_layout", "check_stride", "base_name", "ref_name"),
}


def family(how: str) -> str:
    """The kind of check a name is (``tilelang.testing.torch_assert_close`` ->
    ``torch_assert_close``)."""
    if how.endswith("torch_assert_close"):
        return "torch_assert_close"
    return how


def bind(how: str, args: tuple[object, ...], kwargs: Kwargs) -> Kwargs:
    """The call's arguments by parameter name."""
    names = _PARAMS.get(family(how), ("actual", "expected"))
    out = dict(zip(names, args, strict=False))
    out.update(kwargs)
    return out


def spec_of(how: str, args: tuple[object, ...], kwargs: Kwargs) -> Spec | None:
    """The check a comparison call makes, when a side derives from a kernel output."""
    names = _PARAMS.get(family(how), ("actual", "expected"))
    bound = bind(how, args, kwargs)
    a, b = bound.get(names[0]), bound.get(names[1])
    na, nb = node_of(a), node_of(b)
    if na is None and nb is None:
        return None
    options = {k: v for k, v in bound.items() if k not in names[:2] and k not in (
        "msg", "verbose", "base_name", "ref_name")}
    if na is None:  # the file put the kernel's side second
        return Spec(how, nb, a, options, expected_value=a)
    return Spec(how, na, b if nb is None else nb, options, expected_value=b)


def the_record(spec: Spec) -> tuple[KernelCallRecord, int] | None:
    """(the record, the call) every kernel output of ``spec`` comes from; None when it
    reads outputs of two calls (a cell replays one) or is too deep to make again. An
    expected side that reads another call (an argument two in-place kernels share) is
    taken as the file passed it."""
    if any(depth(n, MAX_DEPTH) >= MAX_DEPTH for n in (spec.actual, spec.expected)):
        return None
    for sides in ((spec.actual, spec.expected), (spec.actual,)):
        found = {(id(leaf.record), leaf.call): leaf for side in sides
                 for leaf in leaves(side)}
        if len(found) == 1:
            if len(sides) == 1:
                spec.expected = spec.expected_value
            leaf = next(iter(found.values()))
            return leaf.record, leaf.call
        if spec.expected_value is None:
            break
    return None


def first_output(node: object) -> Leaf | None:
    return next(iter(leaves(node)), None)


def file_frames(path: str) -> list[FrameType]:
    """The frames of ``path`` on the stack, innermost first."""
    out = []
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if os.path.realpath(f.f_code.co_filename) == path:
            out.append(f)
        f = f.f_back
    return out


def where(frames: list[FrameType]) -> tuple[int | None, str]:
    """(the check's line, `` (in check_close(), called at line 27)`` for a helper)."""
    if not frames:
        return None, ""
    inner = frames[0]
    line = inner.f_lineno
    if len(frames) > 1 and inner.f_code.co_name != "<module>" and \
            frames[1].f_code.co_name != "<module>":  # a helper, not main() itself
        return line, f" (in {inner.f_code.co_name}(), called at line {frames[1].f_lineno})"
    return line, ""


def asked_by_file(path: str) -> bool:
    """Whether the innermost frame outside laya-tui and torch is ``path``'s own (the
    file itself takes a tensor's truth, not a library it calls)."""
    import torch

    skip = (os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
            os.path.dirname(torch.__file__))
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        name = os.path.realpath(f.f_code.co_filename)
        if not name.startswith(skip):
            return name == path
        f = f.f_back
    return False


@functools.lru_cache(maxsize=32)
def _tree(path: str, mtime: float) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return ast.parse(f.read())
    except (OSError, SyntaxError):
        return None


#: the names of a check on a tensor's truth, by the statement taking it
ASSERT, IF_RAISE = "assert", "if ...: raise"


def wanted_truth(path: str, line: int) -> tuple[bool, str] | None:
    """What the file needs a tensor's truth at ``line`` to be for its run to go on, and
    the statement's name: True in an ``assert``, False in ``if cond: raise`` (True under
    ``if not cond: raise``); None anywhere else (not a check)."""
    try:
        tree = _tree(path, os.path.getmtime(path))
    except OSError:
        return None
    if tree is None:
        return None
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            first, last = node.lineno, node.end_lineno or node.lineno
        elif isinstance(node, ast.If):
            first, last = node.test.lineno, node.test.end_lineno or node.test.lineno
        else:
            continue
        if first <= line <= last and (best is None or node.lineno >= best.lineno):
            best = node
    if isinstance(best, ast.Assert):
        return True, ASSERT
    if isinstance(best, ast.If) and best.body and _stops(best.body[0]):
        return isinstance(best.test, ast.UnaryOp) and isinstance(best.test.op, ast.Not), \
            IF_RAISE
    return None


def _stops(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name in ("exit", "_exit", "fail")
    return False

