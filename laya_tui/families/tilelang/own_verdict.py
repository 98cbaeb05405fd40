"""The verdict of a kernel file's own check made again on the real kernel's outputs, with
the check's own function and options (worker side; torch and TileLang imported inside).

The check itself decides (``torch.testing.assert_close``, ``torch.allclose``, TileLang's
``torch_assert_close`` with its mismatch allowance, a plain ``assert``); the figures beside
it are the largest difference, the limit at the largest expected value and how many
elements are over it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, SupportsFloat

from laya_tui.families.tilelang.own_checks import (
    ASSERT,
    COMPARE_OPS,
    IF_RAISE,
    TILELANG_DEFAULTS,
    Item,
    Leaf,
    Op,
    evaluate,
    family,
    is_tensor,
)
from laya_tui.families.tilelang.records import Kwargs, VerdictDetail

if TYPE_CHECKING:
    import torch


@dataclass
class Verdict:
    """A recorded check made again on the real kernel's outputs."""

    passed: bool
    value: float  # max |diff| (a plain assert: the quantity it bounds)
    limit: float  # at the largest expected value (a plain assert: its bound)
    message: str = ""  # why it failed
    note: str = ""  # "1 of 10,000 elements over the limit, allowed 0.1%"
    detail: VerdictDetail = field(default_factory=lambda: VerdictDetail())


def judge(how: str, actual: object, expected: object, options: Kwargs,
          leaf_value: Callable[[Leaf], object], want: bool = True) -> Verdict:
    """The check ``how`` made again, with the file's own options, on ``actual`` and
    ``expected`` (nodes are evaluated with ``leaf_value``)."""
    import torch

    memo: dict[int, object] = {}
    a = evaluate(actual, leaf_value, memo)
    if how in (ASSERT, IF_RAISE):
        return _judge_assert(actual, a, want, leaf_value, memo)
    e = evaluate(expected, leaf_value, memo)
    opts = dict(options)
    kind = family(how)
    try:
        if kind == "torch_assert_close":
            from tilelang.utils.tensor import torch_assert_close

            opts = {**TILELANG_DEFAULTS, **opts}
            torch_assert_close(a, e, **opts)
            ok = True
        elif kind == "torch.allclose":
            ok = bool(torch.allclose(*_tensors(a, e, kind), **opts))
        elif kind == "torch.equal":  # same shape, every element equal
            ok = bool(torch.equal(*_tensors(a, e, kind)))
        else:
            torch.testing.assert_close(a, e, **opts)
            ok = True
        message = ""
    except AssertionError as exc:
        ok, message = False, (str(exc).strip().splitlines() or ["AssertionError"])[0]
    value, limit, over, total, (rtol, atol) = _figures(a, e, opts, kind)
    detail: VerdictDetail = {"rtol": rtol, "atol": atol, "mismatched": over,
                             "elements": total}
    note = f"{over:,} of {total:,} elements over the limit" if total else ""
    if kind == "torch_assert_close":
        ratio = float(opts["max_mismatched_ratio"])
        detail["max_mismatched_ratio"] = ratio
        note += f", allowed {ratio * 100:g}%"
    if not ok and kind == "torch.allclose":
        message = f"torch.allclose(rtol={rtol:g}, atol={atol:g}) is False"
    if not ok and kind == "torch.equal":
        message = "torch.equal is False"
    return Verdict(ok, value, limit, message, note, detail)


def _tensors(a: object, e: object, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of a check that takes tensors only (``torch.allclose``, ``torch.equal``)."""
    if not (is_tensor(a) and is_tensor(e)):
        raise TypeError(f"{kind}() takes tensors, got {type(a).__name__} and "
                        f"{type(e).__name__}")
    return a, e


def _figures(a: object, e: object, opts: Kwargs, kind: str
             ) -> tuple[float, float, int, int, tuple[float, float]]:
    """(max |diff|, the limit at the largest |expected|, elements over it, elements,
    (rtol, atol) in force)."""
    import torch

    a_t = a if isinstance(a, torch.Tensor) else torch.as_tensor(a)
    e_t = e if isinstance(e, torch.Tensor) else torch.as_tensor(e)
    rtol, atol = opts.get("rtol"), opts.get("atol")
    if kind == "torch.allclose":
        rtol = 1e-5 if rtol is None else rtol
        atol = 1e-8 if atol is None else atol
    elif kind == "torch.equal":
        rtol, atol = 0.0, 0.0
    elif rtol is None or atol is None:
        try:
            from torch.testing._comparison import default_tolerances

            rtol, atol = default_tolerances(a_t, e_t)
        except Exception:  # noqa: BLE001 - a private helper: fp32's own defaults
            rtol, atol = 1.3e-6, 1e-5
    af, ef = a_t.detach().float().cpu(), e_t.detach().float().cpu()
    try:
        af, ef = torch.broadcast_tensors(af, ef)  # type: ignore[no-untyped-call]
    except RuntimeError:
        return float("nan"), float(atol), 0, 0, (float(rtol), float(atol))
    if not af.numel():
        return 0.0, float(atol), 0, 0, (float(rtol), float(atol))
    nan = bool(opts.get("equal_nan", kind == "torch_assert_close"))
    over = int((~torch.isclose(af, ef, rtol=float(rtol), atol=float(atol),
                               equal_nan=nan)).sum())
    diff = (af - ef).abs()
    value = float(diff.nan_to_num(nan=float("inf")).max())
    limit = float(atol) + float(rtol) * float(ef.abs().nan_to_num(nan=0.0).max())
    return value, limit, over, af.numel(), (float(rtol), float(atol))


def _judge_assert(node: object, truth: object, want: bool,
                  leaf_value: Callable[[Leaf], object], memo: dict[int, object]) -> Verdict:
    """A plain ``assert``/``if ...: raise`` on a tensor: passed when its truth is what
    the file's run needs; a comparison's two sides are the figures."""
    ok = bool(truth) == want
    value, limit, sign = (0.0 if ok else 1.0), 0.0, ""
    name = getattr(getattr(node, "func", None), "__name__", "")
    if isinstance(node, Op) and name in COMPARE_OPS and len(node.args) == 2:
        lhs, rhs = node.args
        sign = COMPARE_OPS[name]
        measured, bound = (lhs, rhs) if node_of_like(lhs) else (rhs, lhs)
        try:
            value = _scalar(evaluate(measured, leaf_value, memo))
            limit = _scalar(evaluate(bound, leaf_value, memo))
        except (TypeError, ValueError, RuntimeError):
            pass
    message = "" if ok else (
        f"{value:.4g} {sign} {limit:g} is {not want}" if sign else "the condition is "
        f"{not want}")
    return Verdict(ok, value, limit, message, detail={"asserts": sign or "truth"})


def node_of_like(value: object) -> bool:
    return isinstance(value, (Leaf, Op, Item))


def _scalar(value: object) -> float:
    if is_tensor(value):
        return float(value.detach().float().abs().max()) if value.numel() > 1 else float(value)
    if not isinstance(value, SupportsFloat):
        raise TypeError(f"not a number: {type(value).__name__}")
    return float(value)
