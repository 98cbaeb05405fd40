"""Event pump benchmark: how long one budgeted drain slice holds the app's loop.

Usage: python benchmarks/bench_pump.py [--signals N] [--budget S]

The runner's callback appends events to the EventPump; the app drains them into the model
on a timer, at most ``budget`` seconds per slice (checked every 128 events). This pushes N
signals of one probe and drains them slice by slice, printing the slices' median and
longest wall time and their ratio to the budget (target: the longest slice stays within
the budget plus one 128-event stride, i.e. a ratio near 1, never tens).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from laya_tui.core.events import ProbeStarted, SignalEmitted  # noqa: E402
from laya_tui.tui.model import RunModel  # noqa: E402
from laya_tui.tui.pump import EventPump  # noqa: E402


def slices(n: int, budget: float) -> list[tuple[float, int]]:
    """(seconds, rows added) of every drain slice for ``n`` streamed signals."""
    model = RunModel()
    pump = EventPump(model, budget=budget)
    pump.push(ProbeStarted("f/flood", "f", 1.0))
    for i in range(n):
        pump.push(SignalEmitted("f/flood", {"kind": "fallback", "subject": f"aten::op_{i % 997}",
                                            "count": i % 13 + 1, "reason": f"r{i % 31}"}))
    out = []
    while pump.pending:
        t0 = time.perf_counter()
        changes = pump.drain()
        out.append((time.perf_counter() - t0, len(changes.added)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=100_000)
    ap.add_argument("--budget", type=float, action="append")
    args = ap.parse_args()
    for budget in args.budget or [0.002, 0.008]:
        got = slices(args.signals, budget)
        secs = [s for s, _ in got]
        per_event = sum(secs) / max(1, sum(n for _, n in got))
        print(f"budget {budget * 1000:.1f} ms, {args.signals:,} signals: {len(got)} slices, "
              f"median {statistics.median(secs) * 1000:.2f} ms "
              f"({statistics.median(secs) / budget:.2f}x budget), longest "
              f"{max(secs) * 1000:.2f} ms ({max(secs) / budget:.2f}x budget); "
              f"{per_event * 1e6:.1f} us per signal, a 128-event stride "
              f"{per_event * 128 * 1000:.2f} ms")


if __name__ == "__main__":
    main()
