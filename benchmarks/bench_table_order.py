"""The cost of the signal table's default order (findings first, issue 42) at 200,000 rows.

Usage: python benchmarks/bench_table_order.py [--signals N] [--repeats N]

Rows are real ``SignalRow``s of a ``RunModel`` fed signal events (no Textual). Two shapes:
``flood`` (one probe, every row a fallback: one band, the shape of bench_show/bench_tui)
and ``mixed`` (one probe whose rows cycle through every kind, with zero counts and
passed/failed checks: every band, the worst case). Per shape, in ms (median of repeats):

* ``split``: the first ``BandedOrder.segments`` of the scope (every row ranked once);
* ``again``: the same call once split (a scope change, Esc after a filter): O(probes);
* ``batch``: one call after 1,024 more rows streamed in (what a pump step adds);
* ``gone``: a re-run in which every 1,000th row went away (the model lists the rest anew):
  ``removed`` then ``segments`` (before: the probe split anew, as ``split``);
* ``rank``: ``row_band`` over every row (µs per row).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from laya_tui.core.events import SignalEmitted  # noqa: E402
from laya_tui.core.signals import make_signal  # noqa: E402
from laya_tui.tui.model import Changes, RunModel  # noqa: E402
from laya_tui.tui.widgets.table_bands import BandedOrder, row_band  # noqa: E402

PID = "bench/p"


def _signal(shape: str, i: int) -> dict:
    if shape == "flood":
        return make_signal("fallback", PID, subject=f"aten::op{i}", count=1,
                           reason="no device kernel")
    k = i % 8
    if k == 0:
        return make_signal("environment", PID, subject=f"lib{i}", value="1.0")
    if k == 1:
        return make_signal("tolerance", PID, subject=f"y{i}", value=0.2, limit=0.1,
                           passed=i % 16 == 1)
    if k == 2:
        return make_signal("host_bounce", PID, subject=f"r{i}", count=i % 3)
    if k == 3:
        return make_signal("cast", PID, subject=f"c{i}", count=1, reason="int64->bool")
    if k == 4:
        return make_signal("timing", PID, subject=f"t{i}", seconds=0.1)
    if k == 5:
        return make_signal("recompile", PID, subject=f"f{i}", count=1)
    return make_signal("fallback", PID, subject=f"aten::op{i}", count=k - 5)


def _model(shape: str, n: int) -> RunModel:
    model = RunModel()
    changes = Changes()
    for i in range(n):
        model.apply(SignalEmitted(PID, _signal(shape, i)), changes)
    return model


def measure(shape: str, n: int) -> dict[str, float]:
    model = _model(shape, n)
    segments = [(st.id, st.rows) for st in model.probes.values()]
    bands = BandedOrder()
    t0 = time.perf_counter()
    bands.segments(segments)
    split = time.perf_counter() - t0
    t0 = time.perf_counter()
    bands.segments(segments)
    again = time.perf_counter() - t0
    changes = Changes()
    for i in range(n, n + 1024):
        model.apply(SignalEmitted(PID, _signal(shape, i)), changes)
    t0 = time.perf_counter()
    bands.segments(segments)
    batch = time.perf_counter() - t0
    rows = model.probes[PID].rows
    bands.segments(segments)
    kept = [r for i, r in enumerate(rows) if i % 1000]
    dropped = rows[::1000]
    t0 = time.perf_counter()
    bands.removed(dropped)
    bands.segments([(PID, kept)])
    gone = time.perf_counter() - t0
    t0 = time.perf_counter()
    for r in rows:
        row_band(r)
    rank = (time.perf_counter() - t0) / len(rows)
    return {"split": split * 1e3, "again": again * 1e3, "batch": batch * 1e3,
            "gone": gone * 1e3, "rank": rank * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load {f.read().split()[0]}; {args.signals:,} rows; median of {args.repeats}")
    for shape in ("flood", "mixed"):
        runs = [measure(shape, args.signals) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"  {shape:5}  split {med['split']:7.1f} ms   again {med['again']:6.3f} ms   "
              f"batch of 1,024 {med['batch']:5.2f} ms   gone {med['gone']:5.1f} ms   "
              f"rank {med['rank']:.2f} µs/row")


if __name__ == "__main__":
    main()
