"""Keypress-to-paint latency in the dashboard, shared by bench_tui.py (the live dashboard)
and bench_show.py (``laya-tui show``).

A key is sent the way a terminal sends it (a ``Key`` event through the driver, nothing
waited for); every frame the compositor produces is timestamped (``App._display``, where
a real terminal would be written; the segments are rendered to text here too, so the cost
of the terminal's bytes counts). Per key: the first frame after it (the key's response)
and the last one before the screen went quiet (its work done, e.g. a sort of every row;
quiet means no frame for 0.25 s while the loop ran freely, so a stall that paints after it
counts), the loop thread's CPU until the first and until that last frame (what the app
itself spent: on a loaded machine the wall figures hold the time other processes took the
CPU), and a 5 ms heartbeat measuring the longest loop stall while the keys are pressed.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from _loop import Heartbeat

#: (where the focus should be, key, what it does) pressed in this order after the load.
#: The tree starts on "all probes"; the flood reports hold one probe in one family.
SEQUENCE: tuple[tuple[str, str], ...] = (
    ("j", "tree: all probes -> the family (every row of the scope)"),
    ("j", "tree: the family -> its probe"),
    ("k", "tree: back to the family"),
    ("j", "tree: the probe again"),
    ("enter", "into the probe's signals (or its failure)"),
    ("j", "table: next row"),
    ("j", "table: next row"),
    ("k", "table: previous row"),
    ("pagedown", "table: next page"),
    ("G", "table: last row"),
    ("g", "table: first row"),
    ("s", "sort by kind"),
    ("s", "sort by subject"),
    ("S", "reverse the sort"),
    ("slash", "open the filter box"),
    ("7", "type a filter character"),
    ("escape", "clear the filter"),
)
_CHARS = {"slash": "/", "escape": None, "enter": "\r", "pagedown": None, "pageup": None}


class PaintClock:
    """Timestamps of the frames the app puts out (``App._display`` wrapped)."""

    def __init__(self, app: Any) -> None:
        self.stamps: list[float] = []
        self.cpu: list[float] = []  # the loop thread's CPU time at each frame
        self._app = app
        orig = app._display

        def display(screen: Any, renderable: Any) -> None:
            orig(screen, renderable)
            if renderable is None:
                return
            render = getattr(renderable, "render_segments", None)
            if render is not None:  # the bytes a terminal would get (headless skips them)
                render(app.console)
            self.stamps.append(time.perf_counter())
            self.cpu.append(time.thread_time())

        app._display = display


@dataclass
class KeyTimes:
    """One key: seconds to its first frame and to the last frame of its work."""

    key: str
    what: str
    first: float
    last: float
    cpu: float = 0.0  # the loop thread's CPU from the key to its last frame
    first_cpu: float = 0.0  # the loop thread's CPU from the key to its first frame
    stall_cpu: float = 0.0  # the longest loop stall (loop-thread CPU) while its work ran


@dataclass
class KeyRun:
    """Every key of :data:`SEQUENCE` and the loop's longest stall while they were pressed."""

    keys: list[KeyTimes] = field(default_factory=list)
    stall: float = 0.0
    stall_cpu: float = 0.0

    def worst(self, attr: str = "first", *, skip: tuple[str, ...] = ()) -> KeyTimes:
        return max((k for k in self.keys if k.what not in skip),
                   key=lambda k: getattr(k, attr))


async def _press(app: Any, clock: PaintClock, key: str, *, quiet: float = 0.25,
                 timeout: float = 20.0) -> tuple[float, float, float, float]:
    from textual import events

    n0 = len(clock.stamps)
    char = _CHARS.get(key, key if len(key) == 1 else None)
    c0 = time.thread_time()
    cpu_at_last = c0
    t0 = time.perf_counter()
    app._driver.send_message(events.Key(key, char))
    end = t0 + timeout
    seen = n0
    free_since = t0  # the loop has answered every 5 ms sleep on time since then
    before = t0
    while time.perf_counter() < end:
        await asyncio.sleep(0.005)
        now = time.perf_counter()
        if now - before > 0.03:  # the loop was held: what it held it for may paint next
            free_since = now
        before = now
        if len(clock.stamps) > seen:
            seen, cpu_at_last = len(clock.stamps), time.thread_time()
        busy = bool(getattr(app, "updates_pending", False))
        if len(clock.stamps) > n0 and now - max(clock.stamps[-1], free_since) > quiet \
                and not busy:
            break
    if len(clock.stamps) == n0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    return (clock.stamps[n0] - t0, clock.stamps[-1] - t0, cpu_at_last - c0,
            clock.cpu[n0] - c0)


async def key_latencies(app: Any, sequence: tuple[tuple[str, str], ...] = SEQUENCE, *,
                        why: bool = False) -> KeyRun:
    """Press ``sequence`` in a loaded app (inside ``run_test``); the tree has the focus.
    ``why``: print the loop callbacks over 10 ms of CPU per key, and the code on the
    loop's stack in stalls over 30 ms."""
    clock = PaintClock(app)
    await asyncio.sleep(0.3)
    beat = Heartbeat(why=why)
    beat.start()
    run = KeyRun()
    for key, what in sequence:
        seen = len(beat.callbacks.slow)
        beats = len(beat.cpu_late)
        first, last, cpu, first_cpu = await _press(app, clock, key)
        run.keys.append(KeyTimes(key, what, first, last, cpu, first_cpu,
                                 max(beat.cpu_late[beats:], default=0.0)))
        if why:
            for cpu, name in beat.callbacks.slow[seen:]:
                print(f"    {key:>8}: callback {cpu * 1000:.0f} ms CPU {name}", flush=True)
    beat.stop()
    if why:
        for where, stall in sorted(beat.culprits.items(), key=lambda kv: -kv[1])[:10]:
            print(f"    >= {stall * 1000:4.0f} ms in {where}", flush=True)
    run.stall = beat.worst
    run.stall_cpu = max(beat.cpu_late, default=0.0)
    return run


def print_keys(title: str, runs: list[KeyRun]) -> None:
    """Per key: median over runs of the first and the last frame, then the worst."""
    print(f"{title}: keypress -> first frame / -> last frame (wall), and the loop thread's "
          f"CPU until the first / the last frame, median of {len(runs)}; the longest loop "
          f"stall in loop-thread CPU while the key's work ran, max of {len(runs)} (ms)")
    for i, (key, what) in enumerate(SEQUENCE):
        first = statistics.median(r.keys[i].first for r in runs) * 1000
        last = statistics.median(r.keys[i].last for r in runs) * 1000
        fcpu = statistics.median(r.keys[i].first_cpu for r in runs) * 1000
        cpu = statistics.median(r.keys[i].cpu for r in runs) * 1000
        stall = max(r.keys[i].stall_cpu for r in runs) * 1000
        print(f"  {key:>8}  {what:<46} {first:7.0f} / {last:7.0f}   cpu {fcpu:5.0f} / "
              f"{cpu:5.0f}   stall cpu {stall:4.0f}")
    worst = max((k for r in runs for k in r.keys), key=lambda k: k.first)
    worst_cpu = max((k for r in runs for k in r.keys), key=lambda k: k.first_cpu)
    stalls = [r.stall * 1000 for r in runs]
    cpu = [r.stall_cpu * 1000 for r in runs]
    print(f"  slowest response: {worst.first * 1000:.0f} ms ({worst.key}: {worst.what}; "
          f"target < 50 ms); in the loop thread's CPU: {worst_cpu.first_cpu * 1000:.0f} ms "
          f"({worst_cpu.key}: {worst_cpu.what})")
    nav = [k for r in runs for k in r.keys if k.key in ("j", "k", "g", "G", "pagedown")]
    if nav:
        print(f"  navigation (j k g G pagedown, tree and table): first frame max "
              f"{max(k.first for k in nav) * 1000:.0f} ms, last frame max "
              f"{max(k.last for k in nav) * 1000:.0f} ms, CPU max "
              f"{max(k.cpu for k in nav) * 1000:.0f} ms")
    stalled = max((k for r in runs for k in r.keys), key=lambda k: k.stall_cpu)
    print(f"  longest loop stall while the keys were pressed: "
          f"{', '.join(f'{s:.0f}' for s in stalls)} ms (loop-thread CPU "
          f"{', '.join(f'{c:.0f}' for c in cpu)} ms, the longest in {stalled.key}: "
          f"{stalled.what}; target < 50 ms)")
