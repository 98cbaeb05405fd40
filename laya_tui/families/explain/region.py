"""``ctx.explain(name)``: the region object probes open, and how it turns into signals.

Picks the implementation (RBLN's ``torch.rbln.explain`` for a model on an ``rbln`` device
when the runtime loads; the portable region otherwise), and on exit emits one signal per
aggregated (kind, subject, reason, site), the region's wall time, a ``host_bounce`` line
saying "no device in region" for a CPU-only region, and, given ``baseline=fn``, the
uninstrumented latency and the overhead ratio.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from laya_tui.families.explain.records import SignalDict
from laya_tui.families.explain.timing import device_sync, median_latency

if TYPE_CHECKING:
    from laya_tui.families.explain.aggregate import Entry
    from laya_tui.families.explain.portable import PortableRegion
    from laya_tui.families.explain.rbln import RblnRegion
    from laya_tui.families.probe_context import ProbeContext

NO_DEVICE = ("no device in region: model and tensors live on the CPU, so there is no host "
             "boundary to cross (nothing measured, not a zero)")


class ExplainRegion:
    """Context manager returned by ``ctx.explain``; ``.signals`` holds what it emitted."""

    def __init__(self, ctx: ProbeContext | None, name: str, *, with_stack: bool = True,
                 phase: str | None = None, model: object = None, device: object = None,
                 baseline: Callable[[], object] | None = None, backend: str = "auto",
                 emit: bool = True, rbln_log: bool = True) -> None:
        if backend not in ("auto", "portable", "rbln"):
            raise ValueError(f"explain backend must be auto, portable or rbln, got {backend!r}")
        self.ctx = ctx
        self.name = name
        self.with_stack = with_stack
        self.phase = phase
        self.model = model
        self.device = device
        self.baseline = baseline
        self.backend = backend
        self.emit_signals = emit
        self.rbln_log = rbln_log
        self.signals: list[SignalDict] = []
        self.impl: PortableRegion | RblnRegion | None = None

    # -- choosing the implementation ---------------------------------------------------
    def _choose(self) -> PortableRegion | RblnRegion:
        from laya_tui.families.explain.portable import PortableRegion, resolve_device
        from laya_tui.families.explain.rbln import RblnRegion, unavailable_reason

        dev = resolve_device(self.model, self.device)
        wants_rbln = self.backend == "rbln" or (self.backend == "auto" and dev is not None
                                                and dev.startswith("rbln"))
        reason = unavailable_reason()
        if reason is not None:
            self._note_rbln_unavailable(reason)
        if wants_rbln and reason is None:
            return RblnRegion(self.name, with_stack=self.with_stack, phase=self.phase,
                              capture_log=self.rbln_log)
        return PortableRegion(self.name, with_stack=self.with_stack, phase=self.phase,
                              model=self.model, device=self.device)

    def _note_rbln_unavailable(self, reason: str) -> None:
        ctx = self.ctx
        if ctx is None or getattr(ctx, "_laya_rbln_noted", False) or not self.emit_signals:
            return
        try:  # our own flag on the probe's ctx (not one of its declared attributes)
            setattr(ctx, "_laya_rbln_noted", True)  # noqa: B010
        except AttributeError:
            pass
        self.signals.append(ctx.environment(
            "explain.rbln_region", "unavailable", reason=reason,
            fix="run on an RBLN host with rebel-compiler installed; this region is the "
                "portable one (same signal kinds)",
            detail={"backend": "portable"}))

    # -- context manager -------------------------------------------------------------
    def __enter__(self) -> ExplainRegion:
        impl = self.impl = self._choose()
        impl.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self.impl is not None, "__exit__ without __enter__"
        self.impl.__exit__(exc_type, exc, tb)
        if exc_type is None and self.emit_signals:
            self._emit()

    # -- results ------------------------------------------------------------------------
    @property
    def entries(self) -> list[Entry]:
        """Aggregated entries (``kind``, ``subject``, ``reason``, ``site``, ``count``...)."""
        return self.impl.entries if self.impl is not None else []

    @property
    def wall_s(self) -> float:
        return self.impl.wall_s if self.impl is not None else 0.0

    def _emit(self) -> None:
        ctx, impl = self.ctx, self.impl
        assert ctx is not None and impl is not None, "signals need a ctx and an entered region"
        summary = impl.summary()
        for entry in impl.entries:
            fields = entry.fields()
            fields["detail"] = {k: v for k, v in (fields.get("detail") or {}).items()
                                if v is not None} or None
            self.signals.append(ctx.signal(entry.kind, **fields))
        if getattr(impl, "no_device", False):
            rec = getattr(impl, "rec", None)
            detail = {"region": self.name, "phase": self.phase, "device": "cpu"}
            if rec is not None:
                detail["cpu_scalar_reads"] = rec.cpu_scalar_reads
            self.signals.append(ctx.signal(
                "host_bounce", subject=f"region {self.name}", count=0, reason=NO_DEVICE,
                detail={k: v for k, v in detail.items() if v is not None}))
        for extra in getattr(impl, "extra_signals", lambda: [])():
            kind = extra.pop("kind")
            self.signals.append(ctx.signal(kind, **extra))
        self.signals.append(ctx.timing(f"{self.name}: region wall", self.wall_s,
                                       detail={k: v for k, v in summary.items()
                                               if v is not None}))
        if self.baseline is not None:
            lat = median_latency(self.baseline, sync=device_sync(summary.get("device")))
            self.signals.extend(emit_overhead(
                ctx, self.name, self.wall_s, lat["median_s"], samples=lat["samples"],
                how="this region's wall time (one call)"))


def emit_overhead(ctx: ProbeContext, name: str, instrumented_s: float, uninstrumented_s: float, *,
                  samples: int, how: str, min_ratio: float | None = None
                  ) -> list[SignalDict]:
    """Emit the uninstrumented latency and the overhead ratio as ``timing`` signals."""
    base = uninstrumented_s
    ratio = instrumented_s / base if base > 0 else None
    out = [ctx.timing(f"{name}: forward uninstrumented", base,
                      detail={"median_of": samples, "after_warmup": True})]
    out.append(ctx.timing(
        f"{name}: instrumentation overhead", max(0.0, instrumented_s - base),
        value=None if ratio is None else round(ratio, 3),
        reason=None if ratio is None else f"instrumented/uninstrumented = {ratio:.2f}x",
        detail={"instrumented_s": round(instrumented_s, 6), "uninstrumented_s": round(base, 6),
                "ratio": None if ratio is None else round(ratio, 3), "instrumented": how,
                "ratio_of_minimums": None if min_ratio is None else round(min_ratio, 3)}))
    return out
