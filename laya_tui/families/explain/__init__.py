"""Explain regions: what fell back, recompiled, crossed the host boundary or changed dtype.

``ctx.explain(name)`` opens a region (:func:`open_region`); :func:`explain_steady` places a
cold and a warm one and reports their difference. Worker-side: torch is imported inside
the functions, never at import time of this package.

Implementations behind the one API: the RBLN region (``torch.rbln.explain`` mapped to
signals, :mod:`laya_tui.families.explain.rbln`) for a model on an ``rbln`` device when the runtime
loads, and the portable region (:mod:`laya_tui.families.explain.portable`) everywhere else. The
RBLN fallback log parser lives in :mod:`laya_tui.families.explain.rbln_log`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from laya_tui.families.explain.region import ExplainRegion
from laya_tui.families.explain.steady import SteadyResult, explain_steady

if TYPE_CHECKING:
    from laya_tui.families.probe_context import ProbeContext

__all__ = ["ExplainRegion", "SteadyResult", "explain_steady", "open_region"]


def open_region(ctx: ProbeContext, name: str, *, with_stack: bool = True,
                **kwargs: Any) -> ExplainRegion:
    """An explain region for ``ctx``; keyword options: ``model``, ``device``, ``phase``,
    ``baseline`` (a zero-argument callable timed uninstrumented after the region),
    ``backend`` ("auto" | "portable" | "rbln"), ``emit``, ``rbln_log`` (handed on as the
    probe passed them: ``ctx.explain(**kwargs)`` takes them as objects; ExplainRegion checks
    its own)."""
    if not isinstance(name, str) or not name:
        raise ValueError("explain region name must be a non-empty string")
    return ExplainRegion(ctx, name, with_stack=with_stack, **kwargs)
