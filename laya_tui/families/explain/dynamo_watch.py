"""What torch.compile did inside a region: compiles, recompiles (guard failures), graph breaks.

Sources, all public-ish torch 2.x surfaces read as deltas over the region:
``torch._dynamo.utils.get_compilation_metrics()`` (one record per frame compile, with the
first guard-failure reason on a recompile; a first compile becomes a ``compile`` signal),
``graph_break_reasons`` (every graph break with its user stack, see
:mod:`laya_tui.families.explain.graph_breaks`) and ``counters["graph_break"]``, and a
compile-start callback
(``torch._dynamo.callback_handler``) that records which user line triggered each compile.
"""

from __future__ import annotations

import sys
from typing import Any

from laya_tui.families.explain.aggregate import Aggregator
from laya_tui.families.explain.graph_breaks import collect
from laya_tui.families.explain.sites import caller_site, short_path

FIX_RECOMPILE_SHAPE = ("a new input shape recompiles: pad/bucket inputs to fixed shapes, or "
                       "compile with dynamic=True / torch._dynamo.mark_dynamic")
FIX_RECOMPILE = "a guard failed: keep that value stable between calls, or make it dynamic"
FIX_COLD = "one-time cost of the first call per frame; warm the model before timing"
#: The reason of a ``compile`` signal (a frame's first compile: not a recompile).
FIRST_COMPILE = "first compile of this frame"

#: What the caller is running right now (e.g. "input set 2 of 3"), attached to the compiles
#: that start meanwhile: :func:`set_call_label`.
_CALL_LABEL: list[str | None] = [None]


def set_call_label(label: str | None) -> None:
    """Name what runs next (an input set); compiles started meanwhile carry it."""
    _CALL_LABEL[0] = label


class DynamoWatch:
    """Snapshot at :meth:`start`, deltas at :meth:`stop`, turned into signals by :meth:`emit`."""

    def __init__(self, *, with_stack: bool = True) -> None:
        self.with_stack = with_stack
        self.active = False
        self.sites: dict[str, tuple[dict[str, Any] | None, list[str]]] = {}
        self.owners: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.metrics: list[Any] = []
        self.breaks: dict[str, int] = {}
        self.break_reasons: list[Any] = []
        #: called after each compile ends inside the region
        self.on_compiled: Any = None

    def start(self) -> DynamoWatch:
        """Record the baseline; a no-op when torch._dynamo was never imported."""
        dyn = sys.modules.get("torch._dynamo")
        if dyn is None:
            return self
        from torch._dynamo import utils as du
        from torch._dynamo.callback import callback_handler

        self._du = du
        self._handler = callback_handler
        self._seen = {id(m) for m in du.get_compilation_metrics()}
        self._breaks0 = dict(du.counters["graph_break"])
        self._reasons0 = len(du.graph_break_reasons)
        callback_handler.register_start_callback(self._on_compile_start)
        callback_handler.register_end_callback(self._on_compile_end)
        self.active = True
        return self

    def _on_compile_start(self, args: Any) -> None:
        site, stack, _ = caller_site(1, depth=6 if self.with_stack else 0)
        cid = str(getattr(args, "compile_id", ""))
        self.sites[cid] = (site, stack)
        owner = _compiled_owner(sys._getframe(1))
        if owner:
            self.owners[cid] = owner
        if _CALL_LABEL[0]:
            self.labels[cid] = _CALL_LABEL[0]

    def _on_compile_end(self, args: Any) -> None:
        if self.on_compiled is not None:
            self.on_compiled()

    def stop(self) -> None:
        """Collect what was compiled and what broke since :meth:`start`."""
        if not self.active:
            return
        self.active = False
        for remove, cb in ((self._handler.remove_start_callback, self._on_compile_start),
                           (self._handler.remove_end_callback, self._on_compile_end)):
            try:
                remove(cb)
            except ValueError:
                pass
        du = self._du
        self.metrics = [m for m in du.get_compilation_metrics()
                        if id(m) not in self._seen and not getattr(m, "is_runtime", False)]
        now = dict(du.counters["graph_break"])
        self.breaks = {k: v - self._breaks0.get(k, 0) for k, v in now.items()
                       if v - self._breaks0.get(k, 0) > 0}
        reasons = du.graph_break_reasons
        self.break_reasons = list(reasons[self._reasons0:]) if len(reasons) >= self._reasons0 \
            else list(reasons)

    def emit(self, agg: Aggregator, region: str, phase: str | None) -> None:
        """Add compile / recompile / fallback entries for what :meth:`stop` collected.

        A frame's first compile is a ``compile`` signal; ``recompile`` is only a real
        recompile (a guard failed), with the guard text and the call site.
        """
        base = {"region": region, "phase": phase}
        for m in self.metrics:
            cid = str(m.compile_id)
            frame = f"{m.co_name} ({short_path(m.co_filename or '')}:{m.co_firstlineno})"
            if cid in self.owners:
                frame = f"{self.owners[cid]}: {frame}"
            site, stack = self.sites.get(cid, (None, []))
            seconds = m.entire_frame_compile_time_s
            detail = dict(base, compile_id=cid, frame=frame)
            if self.with_stack and stack:
                detail["stack"] = stack
            if m.fail_type:
                agg.add("fallback", frame, reason=f"compile failed, ran eager: {m.fail_type}: "
                        f"{str(m.fail_reason or '').splitlines()[0][:300]}", site=site,
                        seconds=seconds, fix="fix the failing construct or graph-break around it",
                        detail=detail)
                continue
            label = self.labels.get(cid)
            if label:
                detail["input_set"] = label
            guard = m.recompile_reason
            if not guard:
                e = agg.add("compile", frame, reason=FIRST_COMPILE, site=site, seconds=seconds,
                            fix=FIX_COLD, detail=detail)
                e.detail.setdefault("compile_ids", []).append(cid)
                continue
            first = guard.strip().splitlines()[0]
            fix = FIX_RECOMPILE_SHAPE if "size mismatch" in first or "stride mismatch" in first \
                else FIX_RECOMPILE
            e = agg.add("recompile", frame, reason=first, site=site, seconds=seconds, fix=fix,
                        detail=dict(detail, guard=guard[:2000]))
            e.detail.setdefault("compile_ids", []).append(cid)
        # Graph breaks: every recorded reason (with its user stack), deduplicated by
        # (reason, user frame); counter entries only where no reason matches.
        for gb in collect(self.break_reasons, self.breaks, with_stack=self.with_stack):
            agg.add("fallback", "graph break", reason=gb.headline, site=gb.site, count=gb.count,
                    fix=gb.fix(), detail=dict(base, **gb.detail()))


def _compiled_owner(frame: Any) -> str | None:
    """Class name of the nn.Module whose frame Dynamo is about to compile (best effort).

    The frame being compiled is the ``frame`` argument of convert_frame's callbacks; its
    locals hold ``self`` (a method) or ``args[0]`` (transformers' forward wrappers).
    """
    f, hops = frame, 0
    while f is not None and hops < 40:
        target = f.f_locals.get("frame") if "convert_frame" in f.f_code.co_filename else None
        if target is not None:
            try:
                loc = target.f_locals
            except Exception:  # noqa: BLE001 - an interpreter frame we cannot read
                return None
            obj = loc.get("self")
            args = loc.get("args")
            if obj is None and isinstance(args, tuple) and args:
                obj = args[0]
            nn = sys.modules.get("torch.nn")
            if obj is not None and nn is not None and isinstance(obj, nn.Module):
                return type(obj).__name__
            return None
        f = f.f_back
        hops += 1
    return None
