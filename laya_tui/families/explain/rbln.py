"""The RBLN region: ``torch.rbln.explain(with_stack=True)`` and its ``dump()`` mapped to signals.

The schema is torch_rbln/profiler.py's ``RBLNExplain.dump()`` (torch-rbln 0.12.0).
``cpu_fallback_by_op`` / ``recompile_by_op`` are keyed by the dispatch shim's registered
names (``aten::add.out``, ``aten::pow.Tensor_Scalar_out``, ``aten::linear``, ``aten::where.self``
next to ``aten::where.self_out``); ``cpu_fallback_reasons`` is a region-level histogram
{dtype-not-fp16 | nan/inf input | all-scalar inputs: n}; ``cpu_fallback_unaccelerated`` lists
the fallback ops with no CPU fast-path handler; ``hidden_host_bounce.by_site`` {site: {count,
bytes}}; ``runtime_residency`` (``by_reason``, ``real_host_sync_d2h``/``_h2d``, ``reject``);
``trace_by_op`` {op or bounce site: "basename.py:line(func) <- basename.py:line(func)"} (the
innermost two frames); ``rebel_runtime`` (time inside librbln per primitive and its share of
the region wall time); ``device_memory`` (process-wide high-water mark); ``notes`` [{signal,
fix}]; ``dispatch``; ``wall_ns``.

Identities stay stable across regions: a reason names a cause, never a count (counts live in
``count``/``bytes``/``detail``), so a fallback that recurs with other counts persists in the
cold/warm diff and in baselines. Transfers are counted once: ``real_host_sync_d2h`` is the
witness of the same copies the bounce and ``v2v_slow`` rows count (a ``log`` signal, not one
more bounce), and the runtime's h2d push is expected glue (a ``log`` signal).
:func:`map_dump` is pure (tested on dumps built by the wheel's own ``dump()``);
:class:`RblnRegion` needs the runtime and an NPU.
"""

from __future__ import annotations

import time
from types import TracebackType

from laya_tui.families.explain.aggregate import Aggregator, Entry
from laya_tui.families.explain.placement import no_placement, rbln_placement
from laya_tui.families.explain.rbln_sites import SiteResolver, parse_frames
from laya_tui.families.explain.records import Detail, RblnDump, RegionSummary, SignalSpec, SiteDict

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
#: runtime_residency.by_reason: (direction, real device crossing?) per src-state cause
#: (profiler._RUNTIME_REASONS): only src_device_only_real_d2h moves data off the device.
V2V_REASONS: dict[str, tuple[str, bool]] = {
    "src_not_on_device": ("host", False),
    "src_device_only_real_d2h": ("d2h", True),
    "src_synced_host_served": ("host", False),
}
NO_REASON = "ran on CPU (no reason recorded)"
RECOMPILE_REASON = ("rbln dispatch compile: cold compile of the op for this shape, or a "
                    "warm-cache miss (compare the cold and warm regions)")
UNACCELERATED_FIX = ("candidate for a CPU fast-path handler: this op has none registered, so "
                     "each fallback call takes the slow boxed redispatch")
RESIDENCY_UNAVAILABLE = ("runtime residency counters absent from this dump (the loaded "
                         "torch_rbln._C has no _rt_prof_hidden binding; torch-rbln 0.12.0 "
                         "has it): physical d2h/h2d and reject reasons unknown")
PHYSICAL_D2H_REASON = ("real device->host transfers in the region: the cost witness of the "
                       "host_bounce / v2v_slow rows (the same copies, not an extra bounce)")
H2D_PUSH_REASON = ("runtime pushed host-latest data to the device for a graph to consume: "
                   "expected glue, not a host bounce")
DEVICE_MEMORY_REASON = ("device memory high-water mark (process-wide, reserved by the runtime "
                        "allocator; a level, not a region delta)")
DUMP_FIX = ("install the rebel-compiler release this torch-rbln build was made for "
            "(python -m torch_rbln.diagnose shows both)")

_unavailable: list[str | None] = []
_device: list[str | None] = []


def unavailable_reason() -> str | None:
    """None when ``torch.rbln.explain`` can run here, else the exact reason (cached)."""
    if _unavailable:
        return _unavailable[0]
    from laya_tui.families.rbln_status import runtime_reason, torch_rbln_installed

    reason: str | None = None
    if not torch_rbln_installed():
        reason = "torch-rbln is not installed (pip install 'laya-tui[rbln]')"
    elif (missing := runtime_reason()) is not None:
        reason = missing
    else:
        try:
            import torch  # with autoload on, this is what imports torch_rbln
            import torch_rbln  # noqa: F401
        except Exception as exc:  # FileNotFoundError: Could not find librbln.so...
            reason = f"{type(exc).__name__}: {exc}".strip()
        else:
            if not hasattr(getattr(torch, "rbln", None), "explain"):
                reason = "torch_rbln imported but torch.rbln.explain is missing"
    _unavailable.append(reason)
    return reason


def device_reason() -> str | None:
    """None when a model can go on the ``rbln`` device, else why not (cached).

    A compile-only host has the runtime and no NPU: ``torch.rbln.is_available()`` (which
    never raises) is what tells.
    """
    if _device:
        return _device[0]
    reason = unavailable_reason()
    if reason is None:
        import torch

        if not torch.rbln.is_available():  # type: ignore[attr-defined]
            reason = ("torch.rbln.is_available() is False: the RBLN runtime loads but no NPU "
                      "is usable here (a compile-only host, or RBLN_* settings)")
    _device.append(reason)
    return reason


def parse_trace(text: str | None) -> tuple[SiteDict | None, list[str]]:
    """``"a.py:3(f) <- b.py:9(g)"`` -> (the first frame as written, all frames as strings)."""
    frames = parse_frames(text)
    if not frames:
        return None, []
    strings = [p.strip() for p in str(text).split(" <- ") if p.strip()]
    return frames[0].copy(), strings


def _notes(dump: RblnDump) -> dict[str, str]:
    return {str(n.get("signal")): str(n.get("fix", "")) for n in dump.get("notes") or []}


def fallback_reason(reasons: dict[str, int]) -> str:
    """The region's fallback causes by name only, in the profiler's order (no counts)."""
    names = [n for n in FALLBACK_REASONS if reasons.get(n)]
    names += sorted(n for n in reasons if n not in FALLBACK_REASONS and reasons[n])
    return ", ".join(names) if names else NO_REASON


def map_dump(dump: RblnDump, region: str, *, phase: str | None = None,
             with_stack: bool = True, resolver: SiteResolver | None = None
             ) -> tuple[Aggregator, list[SignalSpec]]:
    """Map one ``dump()`` to aggregated entries plus extra signals (``{"kind", ...}``).

    Counts and bytes are carried through unchanged; each transfer is counted once.
    ``resolver`` turns the runtime's basename frames into real files (default: loaded
    modules, then the working directory).
    """
    agg = Aggregator()
    extras: list[SignalSpec] = []
    notes = _notes(dump)
    trace = dump.get("trace_by_op") or {}
    base: Detail = {"region": region, "phase": phase, "backend": "rbln"}
    if trace and resolver is None:
        resolver = SiteResolver()

    def where(key: str) -> tuple[SiteDict | None, Detail]:
        d = dict(base)
        frames = parse_frames(trace.get(key))
        if not frames or resolver is None:
            return None, d
        site, facts = resolver.site(frames)
        if with_stack:
            d["stack"] = [p.strip() for p in str(trace[key]).split(" <- ") if p.strip()]
            d.update(facts)
        return site, d

    # dispatch/cpu_fallback: per op; the reason histogram is region-level, not per op.
    reasons = {str(k): int(v) for k, v in (dump.get("cpu_fallback_reasons") or {}).items()
               if v}
    unaccel = set(dump.get("cpu_fallback_unaccelerated") or [])
    fb_reason = fallback_reason(reasons)
    fb_fix = notes.get("dispatch/cpu_fallback")
    for op, n in (dump.get("cpu_fallback_by_op") or {}).items():
        site, d = where(op)
        d["reasons_region"] = reasons or None
        fix = fb_fix
        if op in unaccel:
            d["fast_path_handler"] = False
            fix = UNACCELERATED_FIX + (f"; {fb_fix}" if fb_fix else "")
        agg.add("fallback", op, reason=fb_reason, site=site, count=int(n), fix=fix, detail=d)
    for op, n in (dump.get("recompile_by_op") or {}).items():
        site, d = where(op)
        agg.add("recompile", op, reason=RECOMPILE_REASON, site=site, count=int(n),
                fix=notes.get("dispatch/recompile"), detail=d)
    rr = dump.get("runtime_residency") or {}
    phys = rr.get("real_host_sync_d2h") if rr.get("available") else None
    witness = None if phys is None else {"count": int(phys.get("count", 0)),
                                         "bytes": int(phys.get("bytes", 0))}
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
        d["region_physical_d2h"] = witness
        agg.add("host_bounce", name, reason=text, site=site, count=count, nbytes=nbytes,
                fix=fix, detail=d)
    if not rr.get("available"):
        extras.append({"kind": "environment", "subject": "rbln.runtime_residency",
                       "value": "unavailable", "reason": RESIDENCY_UNAVAILABLE,
                       "fix": "use a torch-rbln build whose _C exposes the runtime counters",
                       "detail": dict(base, pending=dump.get("pending_runtime_signals"))})
    else:
        _map_residency(agg, extras, rr, notes, base, region, witness)
    _map_extras(extras, dump, base, region)
    for e in agg:
        e.detail = {k: v for k, v in e.detail.items() if v is not None}
    return agg, extras


def _map_residency(agg: Aggregator, extras: list[SignalSpec], rr: RblnDump,
                   notes: dict[str, str], base: Detail, region: str,
                   witness: dict[str, int] | None) -> None:
    """v2v_slow causes and the reject axis as signals; the physical transfers as facts."""
    for n, v in (rr.get("by_reason") or {}).items():
        if int(v.get("count", 0)) > 0:
            direction, physical = V2V_REASONS.get(n, ("host", False))
            agg.add("host_bounce", "runtime/v2v_slow", reason=n, count=int(v["count"]),
                    nbytes=int(v.get("bytes", 0)), fix=notes.get(f"runtime/v2v_slow:{n}"),
                    detail=dict(base, direction=direction, physical=physical,
                                region_physical_d2h=witness))
    if witness and witness["count"] > 0:
        extras.append({"kind": "log", "subject": f"{region}: physical d2h",
                       "count": witness["count"], "bytes": witness["bytes"],
                       "reason": PHYSICAL_D2H_REASON,
                       "detail": dict(base, direction="d2h", physical=True)})
    h2d = rr.get("real_host_sync_h2d") or {}
    if int(h2d.get("count", 0)) > 0:
        extras.append({"kind": "log", "subject": f"{region}: host->device push",
                       "count": int(h2d["count"]), "bytes": int(h2d.get("bytes", 0)),
                       "reason": H2D_PUSH_REASON,
                       "detail": dict(base, direction="h2d", physical=True)})
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


def _map_extras(extras: list[SignalSpec], dump: RblnDump, base: Detail,
                region: str) -> None:
    """Timings (CPU fallback wall, time inside librbln), device memory, oversubscription."""
    disp = dump.get("dispatch") or {}
    wall_ns = int(dump.get("wall_ns") or 0)
    if disp.get("cpu_fallback_ns"):
        extras.append({"kind": "timing", "subject": f"{region}: cpu_fallback wall",
                       "seconds": round(int(disp["cpu_fallback_ns"]) / 1e9, 9),
                       "detail": dict(base, cpu_fallback=disp.get("cpu_fallback"))})
    rt = dump.get("rebel_runtime") or {}
    if rt.get("total_ns"):
        share = float(rt.get("wall_fraction") or 0.0)
        extras.append({"kind": "timing", "subject": f"{region}: rebel runtime",
                       "seconds": round(int(rt["total_ns"]) / 1e9, 9),
                       "value": round(share, 4),
                       "reason": f"{share * 100:.1f}% of the region wall time inside librbln",
                       "detail": dict(base, wall_ns=wall_ns,
                                      by_primitive=rt.get("by_primitive"))})
        for prim, v in (rt.get("by_primitive") or {}).items():
            ns = int(v.get("ns", 0))
            extras.append({"kind": "timing", "subject": f"{region}: rebel runtime {prim}",
                           "seconds": round(ns / 1e9, 9), "count": int(v.get("calls", 0)),
                           "value": round(ns / wall_ns, 4) if wall_ns else None,
                           "detail": dict(base, primitive=prim, wall_ns=wall_ns)})
    mem = dump.get("device_memory") or {}
    if mem.get("peak_bytes") is not None:
        extras.append({"kind": "log", "subject": f"{region}: device memory peak",
                       "bytes": int(mem["peak_bytes"]), "value": int(mem["peak_bytes"]),
                       "reason": DEVICE_MEMORY_REASON,
                       "detail": dict(base, current_bytes=mem.get("current_bytes"))})
    ht = dump.get("host_threads") or {}
    if ht.get("oversubscribed"):
        extras.append({"kind": "environment", "subject": "host.oversubscribed",
                       "value": f"{ht.get('intended_threads')} threads / {ht.get('cores')} cores",
                       "reason": "host threads exceed the allowed cores: per-op host latency "
                                 "may be inflated", "fix": "tune affinity / OMP_NUM_THREADS",
                       "detail": dict(base)})


def dump_failed(region: str, phase: str | None, exc: BaseException) -> SignalSpec:
    """The signal for a ``stop()``/``dump()`` that raised (torch-rbln and librbln disagree)."""
    return {"kind": "environment", "subject": "rbln.explain.dump", "value": "failed",
            "passed": False, "reason": f"{type(exc).__name__}: {exc}".strip()[:600],
            "fix": DUMP_FIX,
            "detail": {"region": region, "phase": phase, "backend": "rbln"}}


class RblnRegion:
    """``torch.rbln.explain(with_stack=...)`` around the region; needs the RBLN runtime."""

    backend = "rbln"

    def __init__(self, name: str, *, with_stack: bool = True, phase: str | None = None,
                 capture_log: bool = True) -> None:
        from laya_tui.families.explain.dynamo_watch import DynamoWatch

        self.name = name
        self.phase = phase
        self.with_stack = with_stack
        self.capture_log = capture_log
        self.dynamo = DynamoWatch(with_stack=with_stack)
        self.wall_s = 0.0
        self.dump: RblnDump = {}
        self.log_text = ""
        self._agg = Aggregator()
        self._extras: list[SignalSpec] = []

    def __enter__(self) -> RblnRegion:
        import torch

        from laya_tui.families.explain.rbln_log import FdCapture

        self._cap = FdCapture() if self.capture_log else None
        if self._cap is not None:
            self._cap.__enter__()
        self.dynamo.start()
        self._p = torch.rbln.explain(  # type: ignore[attr-defined]
            with_stack=self.with_stack)
        self._t0 = time.perf_counter()
        self._p.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        failure: BaseException | None = None
        try:
            self._p.__exit__(exc_type, exc, tb)
        except Exception as err:  # a counter readout raised: torch-rbln vs librbln
            failure = err
        finally:
            self.wall_s = time.perf_counter() - self._t0
            self.dynamo.stop()
            if self._cap is not None:
                self._cap.__exit__(exc_type, exc, tb)
                self.log_text = self._cap.text
        records = []
        resolver = SiteResolver()
        if self.log_text:
            from laya_tui.families.explain.rbln_log import parse_log

            records = parse_log(self.log_text)
            for rec in records:
                for s in rec.sites:
                    resolver.add_hint(str(s.get("file", "")))
        if failure is None:
            try:
                self.dump = self._p.dump()
            except Exception as err:  # e.g. "runtime hidden-reason axis drifted"
                failure = err
        if failure is not None:
            self._agg, self._extras = Aggregator(), [dump_failed(self.name, self.phase, failure)]
        else:
            self._agg, self._extras = map_dump(self.dump, self.name, phase=self.phase,
                                               with_stack=self.with_stack, resolver=resolver)
        self.dynamo.emit(self._agg, self.name, self.phase)
        if records:
            from laya_tui.families.explain.rbln_log import merge_log

            merge_log(self._agg, records, region=self.name, phase=self.phase)

    @property
    def entries(self) -> list[Entry]:
        return list(self._agg)

    def extra_signals(self) -> list[SignalSpec]:
        return [dict(e) for e in self._extras]

    def summary(self) -> RegionSummary:
        return {"region": self.name, "phase": self.phase, "backend": "rbln", "device": "rbln",
                "wall_s": round(self.wall_s, 6),
                "rbln_wall_ns": self.dump.get("wall_ns"),
                "placement": rbln_placement(self.dump) if self.dump
                else no_placement("torch.rbln.explain gave no counts (its dump() failed)")}
