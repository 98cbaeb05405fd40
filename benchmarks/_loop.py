"""Event-loop clocks shared by the dashboard benchmarks (bench_tui.py, bench_show.py):
a 5 ms heartbeat's lateness (loop stalls) and the longest single loop callback."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any


class Heartbeat:
    """Measures event-loop stalls: the lateness of a 5 ms sleep, repeatedly.

    With ``why``, a watchdog thread samples the loop thread's stack whenever the loop has
    not beaten for 30 ms, so a long stall names the code that held the loop (the innermost
    laya_tui frame, else the innermost textual/rich frame).
    """

    def __init__(self, period: float = 0.005, why: bool = False, profile: bool = False) -> None:
        self.period = period
        self.profile = profile
        self.late: list[float] = []
        #: the loop thread's CPU time from one beat to the next (the 5 ms period included,
        #: so an upper bound): a stall's cost without the time other processes on a
        #: loaded machine took the CPU away
        self.cpu_late: list[float] = []
        self.beats = 0
        self.why = why
        self.culprits: dict[str, float] = {}  # frame -> longest stall it was seen in
        self._task: asyncio.Task[None] | None = None
        self._last = 0.0
        self._stop = threading.Event()

    @property
    def worst(self) -> float:
        return max(self.late, default=0.0)

    def p99(self, cpu: bool = False) -> float:
        values = self.cpu_late if cpu else self.late
        if not values:
            return 0.0
        ranked = sorted(values)
        return ranked[min(len(ranked) - 1, int(len(ranked) * 0.99))]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t, c = loop.time(), time.thread_time()
            self._last = time.perf_counter()
            await asyncio.sleep(self.period)
            self.late.append(loop.time() - t - self.period)
            self.cpu_late.append(time.thread_time() - c)
            self.beats += 1

    def _watch(self, ident: int) -> None:
        seen: dict[str, float] = {}
        while not self._stop.wait(0.005):
            stall = time.perf_counter() - self._last
            if stall < 0.03:
                if seen:
                    for k, v in seen.items():
                        self.culprits[k] = max(self.culprits.get(k, 0.0), v)
                    seen = {}
                continue
            frame = sys._current_frames().get(ident)
            stack = traceback.extract_stack(frame) if frame is not None else []
            mine = [f for f in stack if "/laya_tui/" in f.filename]
            lib = [f for f in stack if "/textual/" in f.filename or "/rich/" in f.filename
                   or "/asyncio/" in f.filename or "/json/" in f.filename]
            pick = (mine or lib or stack[-1:])
            if pick:
                f = pick[-1]
                where = f"{Path(f.filename).name}:{f.lineno} {f.name}"
                if mine and lib and lib[-1] is not stack[-1]:
                    inner = stack[-1]
                    where += f" > {Path(inner.filename).name}:{inner.lineno} {inner.name}"
                seen[where] = stall

    def start(self) -> None:
        self._last = time.perf_counter()
        self._task = asyncio.ensure_future(self._run())
        self.callbacks = CallbackClock(profile=self.profile)
        self.callbacks.install()
        if self.why:
            threading.Thread(target=self._watch, args=(threading.get_ident(),),
                             daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if getattr(self, "callbacks", None) is not None:
            self.callbacks.uninstall()
        if self._task is not None:
            self._task.cancel()


class CallbackClock:
    """The longest single event-loop callback, in wall time and in the loop thread's own
    CPU time (what it cost, without the time a loaded machine took the CPU away).

    ``profile``: every callback runs under cProfile (slower), and the profiles of the
    three costliest are kept, to name what a long callback did.
    """

    def __init__(self, profile: bool = False) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.cpu_what = ""
        self.profile = profile
        self.profiles: list[tuple[float, str, Any]] = []
        self.slow: list[tuple[float, str]] = []  # callbacks over 10 ms of CPU
        self._orig: Any = None

    def install(self) -> None:
        import cProfile

        handle = asyncio.events.Handle
        orig = self._orig = handle._run
        clock = self

        def _run(h: asyncio.Handle) -> None:
            prof = cProfile.Profile() if clock.profile else None
            w, c = time.perf_counter(), time.thread_time()
            try:
                if prof is None:
                    orig(h)
                else:
                    prof.runcall(orig, h)
            finally:
                c = time.thread_time() - c
                clock.wall = max(clock.wall, time.perf_counter() - w)
                if c > clock.cpu:
                    clock.cpu = c
                    clock.cpu_what = _callback_name(h)
                if c > 0.01:
                    clock.slow.append((c, _callback_name(h)))
                if prof is not None and c > 0.02 and (
                        len(clock.profiles) < 3 or c > clock.profiles[-1][0]):
                    clock.profiles = sorted([*clock.profiles, (c, _callback_name(h), prof)],
                                            key=lambda t: -t[0])[:3]

        handle._run = _run  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._orig is not None:
            asyncio.events.Handle._run = self._orig  # type: ignore[method-assign]
            self._orig = None

    def report(self) -> None:
        import io
        import pstats

        for cpu, what, prof in self.profiles:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(18)
            print(f"--- callback {what}: {cpu * 1000:.0f} ms CPU (under cProfile)")
            print("\n".join(out.getvalue().splitlines()[6:]))


def _callback_name(h: asyncio.Handle) -> str:
    cb = getattr(h, "_callback", None)
    owner = getattr(cb, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        name = getattr(coro, "__qualname__", repr(coro))
        timer = getattr(getattr(coro, "cr_frame", None), "f_locals", {}).get("self")
        callback = getattr(timer, "_callback", None)
        if callback is not None:  # a Textual timer: name what it calls
            name += " -> " + getattr(callback, "__qualname__", repr(callback))
        return name
    return getattr(cb, "__qualname__", repr(cb))
