"""Steady state: a cold region around the first call, a warm one around a later call.

What persists into the warm region is recurring overhead; what is gone was one-time. The
same reading as ``torch.rbln.explain_steady``, on either implementation, with the rules it
states: ``fn`` must not have run before, and every call must do the same work (or pass
``warm_fn`` to make the later call a deliberate variation, e.g. a new prompt length).

A warm signal is recurring only when the next call of the same later work shows it again
(one more region around it, emitting nothing): a recompile that a new input set causes is
one-off work for that set, like the cold region's compiles, and the summary says so
instead of counting it as recurring overhead (``detail.recurs`` on each warm signal).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from laya_tui.families.explain.aggregate import Entry, steady_diff
from laya_tui.families.explain.records import SignalDict
from laya_tui.families.explain.region import ExplainRegion, emit_overhead
from laya_tui.families.explain.timing import device_sync

if TYPE_CHECKING:
    from laya_tui.families.probe_context import ProbeContext


#: Instrumented/plain pairs that time the overhead: at least this many...
MIN_OVERHEAD_PAIRS = 5
#: ...then no more once the pairs have taken this many seconds (wall).
OVERHEAD_BUDGET_S = 0.5


@dataclass
class SteadyResult:
    """The two regions and their difference."""

    cold: ExplainRegion
    warm: ExplainRegion
    diff: dict[str, list[str]] = field(default_factory=dict)
    signals: list[SignalDict] = field(default_factory=list)


def _identity(e: Entry) -> tuple[str, str, str]:
    """An entry's (kind, subject, reason), as :func:`aggregate.signal_identity` reads the
    signal it becomes."""
    return (str(e.kind), str(e.subject), str(e.reason))


def explain_steady(ctx: ProbeContext, name: str, fn: Callable[[], object], *,
                   warmup: int = 2, warm_fn: Callable[[], object] | None = None,
                   with_stack: bool = True, model: object = None, device: object = None,
                   backend: str = "auto",
                   overhead_repeats: int = 15,
                   overhead_budget_s: float = OVERHEAD_BUDGET_S) -> SteadyResult:
    """Cold region around ``fn()``, ``warmup`` more calls, warm region around ``warm_fn()``.

    Emits both regions' signals (``detail.phase`` cold / warm; warm ones carry
    ``detail.persists``, in the cold region too, and ``detail.recurs``, in the next call of
    the warm work too), a ``log`` signal with the difference, and timings: the warm
    call's latency instrumented (up to ``overhead_repeats`` more regions that emit nothing)
    and uninstrumented (plain calls interleaved with them), medians, and their ratio. Pairs
    stop early once they have taken ``overhead_budget_s`` (never fewer than
    :data:`MIN_OVERHEAD_PAIRS`): a slow forward (a bf16 decode on a CPU) gets a median of 5,
    not 15 more forwards per cell.
    """
    later = warm_fn or fn

    def region(phase: str, *, emit: bool = False) -> ExplainRegion:
        return ExplainRegion(ctx, name, phase=phase, emit=emit, with_stack=with_stack,
                             model=model, device=device, backend=backend)

    cold = region("cold", emit=True)
    with cold:
        fn()
    for _ in range(max(0, warmup)):
        fn()
    warm = region("warm")
    with warm:
        later()
    # The same later work once more: what shows again recurs, the rest was one-off.
    dev = warm.impl.summary().get("device") if warm.impl is not None else None
    sync = device_sync(dev)
    again = region("warm")
    with again:
        later()
        if sync is not None:
            sync()
    cold_keys = {_identity(e) for e in cold.entries}
    again_keys = {_identity(e) for e in again.entries}
    for e in warm.entries:
        key = _identity(e)
        e.detail["persists"] = key in cold_keys
        e.detail["recurs"] = key in again_keys
    warm.emit_signals = True
    warm._emit()
    diff = steady_diff(cold.signals, warm.signals, again_keys)
    result = SteadyResult(cold=cold, warm=warm, diff=diff)
    recurring, one_off = diff["recurring"], diff["one_off"]
    text = ("steady state: nothing recurs in the warm region" if not recurring else
            f"steady state: {len(recurring)} recurring overhead signal(s) in the warm region")
    if one_off:
        text += f"; {len(one_off)} one-off (gone in the next call of the same work)"
    result.signals.append(ctx.log(text, subject=name, detail={"region": name, **diff,
                                                             "warmup": warmup}))
    # Instrumentation overhead on the warm call: instrumented and plain calls interleaved
    # (so machine noise hits both alike), median of each.
    later()
    inst: list[float] = []
    plain: list[float] = []
    began = time.perf_counter()
    for i in range(max(1, overhead_repeats)):
        if i >= MIN_OVERHEAD_PAIRS and time.perf_counter() - began >= overhead_budget_s:
            break
        extra = region("warm")
        with extra:
            later()
            if sync is not None:
                sync()
        inst.append(extra.wall_s)
        t0 = time.perf_counter()
        later()
        if sync is not None:
            sync()
        plain.append(time.perf_counter() - t0)
    result.signals.extend(emit_overhead(
        ctx, name, statistics.median(inst), statistics.median(plain), samples=len(plain),
        how=f"median of {len(inst)} warm regions, interleaved with plain calls",
        min_ratio=min(inst) / min(plain) if min(plain) > 0 else None))
    return result
