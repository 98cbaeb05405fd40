"""The RBLN region: ``torch.rbln.explain(with_stack=True)`` and its ``dump()`` mapped to signals.

The schema is torch_rbln/profiler.py's ``RBLNExplain.dump()`` (torch-rbln 0.12):
``cpu_fallback_by_op`` {op: n} with the region-level ``cpu_fallback_reasons``
{dtype-not-fp16 | nan/inf input | all-scalar inputs: n} and ``cpu_fallback_unaccelerated``
[op]; ``recompile_by_op`` {op: n}; ``hidden_host_bounce.by_site`` {site: {count, bytes}};
``runtime_residency`` ({available: false} on an older runtime, else ``by_reason``,
``real_host_sync_d2h``/``_h2d`` and ``reject``); ``trace_by_op`` {op or bounce site:
"file:line(func) <- caller..."}; ``notes`` [{signal, fix}]; ``dispatch``; ``wall_ns``.
:func:`map_dump` is pure (tested on recorded dumps); :class:`RblnRegion` needs the runtime.
"""

from __future__ import annotations

import re
import time
from typing import Any

from laya_tui.regions.aggregate import Aggregator, Entry

#: Bounce sites that are genuine host round-trips (profiler._HOST_BOUNCE_SITES), with the
#: direction of the crossing; the two batch->per-entry sites are lost batching, not bounces.
BOUNCE_SITES: dict[str, tuple[str, str]] = {
    "copy_d2d_host_bounce": ("d2h2d", "copy_: non-direct device->device round-tripped host"),
    "copy_h2d_staging": ("h2d", "copy_: cpu src staged before h2v"),
    "copy_h2d_noncontig_dst": ("d2h2d", "copy_: non-contiguous rbln dst pulled to host"),
    "strided_v2v_cpu_fallback": ("d2h2d", "cat/index/copy_: strided v2v fell back to CPU"),
}
BATCH_SITES: dict[str, str] = {
    "v2v_batch_to_per_entry": "batched v2v rejected -> per-entry",
    "host_batch_to_per_entry": "batched h2v/v2h rejected -> per-entry",
}
FALLBACK_REASONS = ("dtype-not-fp16", "nan/inf input", "all-scalar inputs")
RECOMPILE_REASON = ("rbln dispatch compile: cold compile of the op for this shape, or a "
                    "warm-cache miss (compare the cold and warm regions)")
RESIDENCY_UNAVAILABLE = ("runtime residency signals not exposed by the loaded librbln "
                         "(older rebel-compiler): physical d2h/h2d and reject reasons unknown")

_TRACE_FRAME = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:\((?P<func>[^()]*)\))?$")
_unavailable: list[str | None] = []


def unavailable_reason() -> str | None:
    """None when ``torch.rbln.explain`` can run here, else the exact reason (cached)."""
    if _unavailable:
        return _unavailable[0]
    from laya_tui.rbln_status import torch_rbln_installed

    reason: str | None = None
    if not torch_rbln_installed():
        reason = "torch-rbln is not installed (pip install 'laya-tui[rbln]')"
    else:
        import torch  # torch_rbln needs torch imported first

        try:
            import torch_rbln  # noqa: F401
        except Exception as exc:  # FileNotFoundError: Could not find librbln.so...
            reason = f"{type(exc).__name__}: {exc}".strip()
        else:
            if not hasattr(getattr(torch, "rbln", None), "explain"):
                reason = "torch_rbln imported but torch.rbln.explain is missing"
    _unavailable.append(reason)
    return reason


def parse_trace(text: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """``"a.py:3(f) <- b.py:9(g)"`` -> (site of the first frame, all frames as strings)."""
    if not text:
        return None, []
    frames = [p.strip() for p in str(text).split(" <- ") if p.strip()]
    if not frames:
        return None, []
    m = _TRACE_FRAME.match(frames[0])
    if m is None:
        return {"file": frames[0], "line": None, "func": None}, frames
    return {"file": m["file"], "line": int(m["line"]), "func": m["func"] or None}, frames


def _notes(dump: dict[str, Any]) -> dict[str, str]:
    return {str(n.get("signal")): str(n.get("fix", "")) for n in dump.get("notes") or []}


def map_dump(dump: dict[str, Any], region: str, *, phase: str | None = None,
             with_stack: bool = True) -> tuple[Aggregator, list[dict[str, Any]]]:
    """Map one ``dump()`` to aggregated entries plus extra signals (``{"kind", ...}``).

    Counts, bytes, reasons and sites are carried through unchanged.
    """
    agg = Aggregator()
    extras: list[dict[str, Any]] = []
    notes = _notes(dump)
    trace = dump.get("trace_by_op") or {}
    base = {"region": region, "phase": phase, "backend": "rbln"}

    def where(key: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        site, frames = parse_trace(trace.get(key))
        d = dict(base)
        if with_stack and frames:
            d["stack"] = frames
        return site, d

    # dispatch/cpu_fallback: per op; the reason histogram is region-level, not per op.
    reasons = {k: int(v) for k, v in (dump.get("cpu_fallback_reasons") or {}).items() if v}
    unaccel = set(dump.get("cpu_fallback_unaccelerated") or [])
    if len(reasons) == 1:
        fb_reason = next(iter(reasons))
    elif reasons:
        fb_reason = ", ".join(f"{k} {v}" for k, v in reasons.items())
    else:
        fb_reason = "ran on CPU (no reason recorded)"
    fb_fix = notes.get("dispatch/cpu_fallback")
    for op, n in (dump.get("cpu_fallback_by_op") or {}).items():
        site, d = where(op)
        d["reasons_region"] = reasons or None
        if op in unaccel:
            d["fast_path_handler"] = False
        fix = fb_fix
        if op in unaccel:
            fix = ("no CPU fast-path handler: a native kernel candidate; "
                   + (fb_fix or "")).rstrip("; ")
        agg.add("fallback", op, reason=fb_reason, site=site, count=int(n), fix=fix, detail=d)
    for op, n in (dump.get("recompile_by_op") or {}).items():
        site, d = where(op)
        agg.add("recompile", op, reason=RECOMPILE_REASON, site=site, count=int(n),
                fix=notes.get("dispatch/recompile"), detail=d)
    # hidden host bounces (torch-side), per site, with bytes
    for name, v in ((dump.get("hidden_host_bounce") or {}).get("by_site") or {}).items():
        count, nbytes = int(v.get("count", 0)), int(v.get("bytes", 0))
        if count <= 0:
            continue
        site, d = where(name)
        fix = notes.get(f"host_bounce/{name}")
        if name in BATCH_SITES:
            d["host_round_trip"] = False
            agg.add("fallback", name, reason=BATCH_SITES[name], site=site, count=count,
                    nbytes=nbytes, fix=fix, detail=d)
            continue
        direction, text = BOUNCE_SITES.get(name, ("d2h2d", name))
        d["direction"] = direction
        agg.add("host_bounce", name, reason=text, site=site, count=count, nbytes=nbytes,
                fix=fix, detail=d)
    # runtime residency: physical transfers, the v2v_slow causes, the reject axis
    rr = dump.get("runtime_residency") or {}
    if not rr.get("available"):
        extras.append({"kind": "environment", "subject": "rbln.runtime_residency",
                       "value": "unavailable", "reason": RESIDENCY_UNAVAILABLE,
                       "fix": "install a recent rebel-compiler",
                       "detail": dict(base, pending=dump.get("pending_runtime_signals"))})
    else:
        for n, v in (rr.get("by_reason") or {}).items():
            if int(v.get("count", 0)) > 0:
                agg.add("host_bounce", "runtime/v2v_slow", reason=n, count=int(v["count"]),
                        nbytes=int(v.get("bytes", 0)), fix=notes.get(f"runtime/v2v_slow:{n}"),
                        detail=dict(base, direction="d2h", physical=False))
        for key, direction, subject in (("real_host_sync_d2h", "d2h", "runtime/physical_d2h"),
                                        ("real_host_sync_h2d", "h2d", "runtime/h2d_push")):
            v = rr.get(key) or {}
            if int(v.get("count", 0)) > 0:
                agg.add("host_bounce", subject, reason=f"physical {direction} (real transfer)",
                        count=int(v["count"]), nbytes=int(v.get("bytes", 0)),
                        detail=dict(base, direction=direction, physical=True))
        rej = rr.get("reject") or {}
        for label, v in (rej.get("user_actionable") or {}).items():
            agg.add("fallback", "runtime/v2v_reject", reason=label, count=int(v.get("count", 0)),
                    nbytes=int(v.get("bytes", 0)),
                    fix=notes.get(f"runtime/v2v_reject:{label}"), detail=dict(base))
        internal = rej.get("internal_fallback") or {}
        if int(internal.get("count", 0)) > 0:
            agg.add("fallback", "runtime/v2v_reject", reason="internal_fallback",
                    count=int(internal["count"]), nbytes=int(internal.get("bytes", 0)),
                    fix=notes.get("runtime/v2v_reject:internal_fallback"),
                    detail=dict(base, user_fixable=False))
    disp = dump.get("dispatch") or {}
    if disp.get("cpu_fallback_ns"):
        extras.append({"kind": "timing", "subject": f"{region}: cpu_fallback wall",
                       "seconds": round(int(disp["cpu_fallback_ns"]) / 1e9, 9),
                       "detail": dict(base, cpu_fallback=disp.get("cpu_fallback"))})
    ht = dump.get("host_threads") or {}
    if ht.get("oversubscribed"):
        extras.append({"kind": "environment", "subject": "host.oversubscribed",
                       "value": f"{ht.get('intended_threads')} threads / {ht.get('cores')} cores",
                       "reason": "host threads exceed the allowed cores: per-op host latency "
                                 "may be inflated", "fix": "tune affinity / OMP_NUM_THREADS",
                       "detail": dict(base)})
    for e in agg:
        e.detail = {k: v for k, v in e.detail.items() if v is not None}
    return agg, extras


class RblnRegion:
    """``torch.rbln.explain(with_stack=...)`` around the region; needs the RBLN runtime."""

    backend = "rbln"

    def __init__(self, name: str, *, with_stack: bool = True, phase: str | None = None,
                 capture_log: bool = True) -> None:
        from laya_tui.regions.dynamo_watch import DynamoWatch

        self.name = name
        self.phase = phase
        self.with_stack = with_stack
        self.capture_log = capture_log
        self.dynamo = DynamoWatch(with_stack=with_stack)
        self.wall_s = 0.0
        self.dump: dict[str, Any] = {}
        self.log_text = ""
        self._agg = Aggregator()
        self._extras: list[dict[str, Any]] = []

    def __enter__(self) -> RblnRegion:
        import torch

        from laya_tui.regions.rbln_log import FdCapture

        self._cap = FdCapture() if self.capture_log else None
        if self._cap is not None:
            self._cap.__enter__()
        self.dynamo.start()
        self._p = torch.rbln.explain(with_stack=self.with_stack)
        self._t0 = time.perf_counter()
        self._p.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._p.__exit__(*exc)
        finally:
            self.wall_s = time.perf_counter() - self._t0
            self.dynamo.stop()
            if self._cap is not None:
                self._cap.__exit__(*exc)
                self.log_text = self._cap.text
        self.dump = self._p.dump()
        self._agg, self._extras = map_dump(self.dump, self.name, phase=self.phase,
                                           with_stack=self.with_stack)
        self.dynamo.emit(self._agg, self.name, self.phase)
        if self.log_text:
            from laya_tui.regions.rbln_log import merge_log, parse_log

            merge_log(self._agg, parse_log(self.log_text), region=self.name, phase=self.phase)

    @property
    def entries(self) -> list[Entry]:
        return list(self._agg)

    def extra_signals(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self._extras]

    def summary(self) -> dict[str, Any]:
        return {"region": self.name, "phase": self.phase, "backend": "rbln", "device": "rbln",
                "wall_s": round(self.wall_s, 6),
                "rbln_wall_ns": self.dump.get("wall_ns")}
