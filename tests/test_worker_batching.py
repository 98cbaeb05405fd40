"""The batched signal pipe: every signal arrives, in order, promptly, and survives a crash."""

from __future__ import annotations

import asyncio
import time

from laya_tui.core.events import SignalEmitted
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions

PROBES = '''
import os, signal, time
from laya_tui import probe

@probe(family="batch")
def flood(ctx):
    for i in range(5000):
        ctx.signal("fallback", subject=f"op{i}", count=i, site={"file": "m.py", "line": i})

@probe(family="batch")
def burst_then_wait(ctx):
    for i in range(400):
        ctx.signal("log", reason=f"r{i}")
    ctx.signal("log", reason="last of the burst", detail={"at": time.time()})
    time.sleep(1.5)
    ctx.signal("log", reason="after the wait")

@probe(family="crash")
def burst_then_segfault(ctx):
    for i in range(5):
        ctx.signal("log", reason=f"before the crash {i}")
    os.kill(os.getpid(), signal.SIGSEGV)
'''


def _run(tmp_path):
    ws = tmp_path / "ws"
    (ws / "probes").mkdir(parents=True)
    (ws / "probes" / "p.py").write_text(PROBES)
    arrived: dict[str, float] = {}

    def on_event(event):
        if isinstance(event, SignalEmitted) and (reason := event.signal.get("reason")):
            arrived[reason] = time.time()

    async def go():
        runner = Runner(RunOptions(workspace=str(ws), probes=(str(ws / "probes"),),
                                  use_cache=False, cache_dir=str(tmp_path / "c")),
                        on_event=on_event)
        try:
            disc = await runner.discover()
            return await runner.run(disc.probes)
        finally:
            await runner.close()

    results = {r["id"]: r for r in asyncio.run(go())}
    return results, arrived


def test_batched_signals_arrive_complete_in_order_and_live(tmp_path):
    results, arrived = _run(tmp_path)
    flood = results["batch/flood"]
    assert flood["status"] == "ok"
    assert [s["subject"] for s in flood["signals"]] == [f"op{i}" for i in range(5000)]
    assert flood["signals"][4999] == {"kind": "fallback", "probe": "batch/flood",
                                      "subject": "op4999", "count": 4999,
                                      "site": {"file": "m.py", "line": 4999}}
    burst = results["batch/burst_then_wait"]
    assert len(burst["signals"]) == 402
    last = burst["signals"][400]
    # buffered signals are flushed within 50 ms, not held until the probe's next write
    lag = arrived["last of the burst"] - last["detail"]["at"]
    assert lag < 1.0, f"the burst's last signal reached the runner {lag:.2f} s late"


def test_signals_before_a_crash_are_kept(tmp_path):
    results, _ = _run(tmp_path)
    crashed = results["crash/burst_then_segfault"]
    assert crashed["status"] == "crashed"
    assert [s["reason"] for s in crashed["signals"]] == [f"before the crash {i}"
                                                         for i in range(5)]
