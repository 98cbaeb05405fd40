"""Logit tolerance: max |diff| against a limit, argmax agreement, and the near-tie rule.

A token (argmax) mismatch is a defect only where the reference's top-2 gap is clearly
larger than the output's max |diff|: when the two best reference logits are closer than
the error the output is allowed anyway, either may win legitimately (a near-tie flip).
numpy is imported inside the functions (worker-side).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from laya_tui.core.open_types import Detail
from laya_tui.families.numeric import to_numpy

if TYPE_CHECKING:
    from laya_tui.core.report_types import SignalDict
    from laya_tui.families.probe_context import ProbeContext

#: A mismatch counts as "clear gap" when top2_gap > CLEAR_GAP_FACTOR * max|diff|.
CLEAR_GAP_FACTOR = 1.0
MAX_LISTED = 20


class Mismatch(TypedDict):
    """One row whose output argmax differs from the reference's."""

    row: int
    ref_token: int
    out_token: int
    top2_gap: float
    case: str


class LogitsVerdict(TypedDict):
    """What :func:`logits_verdict` finds: the ``tolerance`` signal's fields."""

    value: float
    limit: float
    passed: bool
    reason: str
    detail: Detail


def logits_verdict(out: object, ref: object, *, atol: float, mask: object = None,
                   factor: float = CLEAR_GAP_FACTOR) -> LogitsVerdict:
    """Compare logits ``(..., vocab)``; ``mask`` (shape ``out.shape[:-1]``) marks valid rows.

    Returns ``{"value", "limit", "passed", "reason", "detail"}`` where detail holds
    ``argmax_match``, ``rows``, ``top2_gap`` (smallest reference gap over valid rows),
    ``verdict`` (``match`` | ``near-tie`` | ``clear-gap``), ``near_ties``, ``clear_gap``
    and up to 20 ``mismatches`` with their gaps.
    """
    import numpy as np

    a, b = to_numpy(out), to_numpy(ref)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: output {a.shape} vs reference {b.shape}")
    vocab = a.shape[-1] if a.ndim else 1
    a2, b2 = a.reshape(-1, vocab), b.reshape(-1, vocab)
    if mask is not None:
        m = np.broadcast_to(to_numpy(mask).astype(bool), a.shape[:-1]).reshape(-1)
        a2, b2 = a2[m], b2[m]
    rows = int(a2.shape[0])
    if rows == 0:
        return {"value": 0.0, "limit": float(atol), "passed": True,
                "reason": "no valid rows to compare",
                "detail": {"argmax_match": 0, "rows": 0, "verdict": "match"}}
    if not np.all(np.isfinite(a2)):
        return {"value": float("nan"), "limit": float(atol), "passed": False,
                "reason": "non-finite values in the output",
                "detail": {"rows": rows, "non_finite": True, "verdict": "non-finite"}}
    max_diff = float(np.abs(a2 - b2).max())
    ref_top = np.argmax(b2, axis=-1)
    out_top = np.argmax(a2, axis=-1)
    if vocab > 1:
        top2 = np.sort(b2, axis=-1)[:, -2:]
        gaps = top2[:, 1] - top2[:, 0]
    else:
        gaps = np.zeros(rows)
    bad = np.nonzero(out_top != ref_top)[0]
    threshold = factor * max_diff
    mismatches: list[Mismatch] = []
    clear = near = 0
    for i in bad:
        gap = float(gaps[i])
        case = "clear-gap" if gap > threshold else "near-tie"
        if case == "clear-gap":
            clear += 1
        else:
            near += 1
        if len(mismatches) < MAX_LISTED:
            mismatches.append({"row": int(i), "ref_token": int(ref_top[i]),
                               "out_token": int(out_top[i]), "top2_gap": gap, "case": case})
    verdict = "clear-gap" if clear else ("near-tie" if near else "match")
    within = max_diff <= atol
    passed = within and clear == 0
    parts = [f"max|diff| {max_diff:.3g} {'<=' if within else '>'} limit {atol:.3g}",
             f"argmax {rows - len(bad)}/{rows}"]
    if clear:
        parts.append(f"{clear} clear-gap mismatch(es): reference top-2 gap > max|diff| "
                     f"{max_diff:.3g}, a defect")
    if near:
        parts.append(f"{near} near-tie flip(s): reference top-2 gap <= max|diff| "
                     f"{max_diff:.3g}, legitimate")
    detail: Detail = {
        "argmax_match": int(rows - len(bad)),
        "rows": rows,
        "top2_gap": float(gaps.min()),
        "verdict": verdict,
        "near_ties": near,
        "clear_gap": clear,
        "clear_gap_factor": factor,
        "mismatches": mismatches,
    }
    return {"value": max_diff, "limit": float(atol), "passed": bool(passed),
            "reason": "; ".join(parts), "detail": detail}


def compare_logits(ctx: ProbeContext, subject: str, out: object, ref: object, *, atol: float,
                   mask: object = None, **fields: object) -> SignalDict:
    """Emit a ``tolerance`` signal for logits through ``ctx`` (see :func:`logits_verdict`)."""
    v = logits_verdict(out, ref, atol=atol, mask=mask)
    given = fields.pop("detail", None)
    detail: Detail = dict(given) if isinstance(given, Mapping) else {}
    detail.update(v["detail"])
    return ctx.tolerance(subject, v["value"], v["limit"], passed=v["passed"],
                         reason=v["reason"], detail=detail, **fields)
