"""The watchdog's rules (laya_tui/core/watchdog.py) on a simulated clock and process tree, and
its /proc sampling on a real process tree."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from laya_tui.core.defaults import usable_cores
from laya_tui.core.watchdog import (
    CEILING_FACTOR,
    WALL_FACTOR,
    Bounds,
    Expired,
    Expiry,
    TreeSample,
    Watchdog,
    sample_tree,
)


class Sim:
    """A clock and a process tree whose CPU time grows at ``rate`` cores, and whose one
    thread waits for a CPU ``wait`` of each second (None: a kernel without schedstat)."""

    def __init__(self, rate: float = 0.0, proc: bool = True, wait: float | None = None) -> None:
        self.now = 100.0
        self.cpu = 5.0  # earlier probes of the warm worker: not this probe's
        self.rate = rate
        self.wait = wait
        self.ran = self.waited = 0.0
        self.proc = proc

    def clock(self) -> float:
        return self.now

    def sample(self, pid: int) -> TreeSample | None:
        if not self.proc:
            return None
        sched = None if self.wait is None else {(pid, pid): (self.ran, self.waited)}
        return TreeSample(self.cpu, ((pid + 1, "cc1plus"),), sched)

    def advance(self, seconds: float, step: float = 0.05) -> None:
        for _ in range(round(seconds / step)):
            self.now += step
            self.cpu += self.rate * step
            self.ran += self.rate * step
            self.waited += (self.wait or 0.0) * step


def run_until_expiry(sim: Sim, wd: Watchdog, limit: float, *,
                     signal_every: float | None = None,
                     rate_after: tuple[float, float] | None = None):
    """Drive the watchdog like the runner does; (expiry, elapsed) or (None, limit)."""
    next_signal = signal_every
    start = sim.now
    while sim.now - start < limit:
        sim.advance(0.05)
        if rate_after and sim.now - start >= rate_after[0]:
            sim.rate = rate_after[1]
        if next_signal is not None and sim.now - start >= next_signal:
            wd.last_event = sim.now
            wd.saw_signal()
            next_signal += signal_every  # type: ignore[operator]
        if wd.due() <= 0:
            expiry = wd.check()
            if expiry is not None:
                return expiry, sim.now - start
    return None, limit


def make(sim: Sim, timeout: float, cores: int = 2) -> Watchdog:
    return Watchdog(4242, Bounds.of(timeout, cores), clock=sim.clock, sampler=sim.sample)


def test_bounds_follow_the_timeout():
    b = Bounds.of(600, cores=2)
    assert (b.idle, b.cpu, b.ceiling, b.interval) == (60.0, 1200.0, 600 * CEILING_FACTOR, 1.0)
    assert b.wall == 600 * WALL_FACTOR > b.ceiling
    assert Bounds.of(2, cores=1).idle == 1.0  # never below a second
    assert Bounds.of(180, cores=4).idle == pytest.approx(18.0)
    assert Bounds.of(3, cores=1).interval == 0.25  # four samples per idle window
    assert usable_cores() >= 1


def test_a_working_probe_runs_past_its_timeout_until_it_finishes():
    # single-threaded, at a third of a core (two hogs beside it): 3x its quiet-machine time
    sim = Sim(rate=1 / 3, wait=2 / 3)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 25)
    assert expiry is None and elapsed == 25  # 2.5x its timeout, still working: not ended
    assert wd.cpu == pytest.approx(25 / 3, abs=0.1)
    assert wd.own == pytest.approx(25 / 3, abs=0.2)  # its own time: what it ran
    assert wd.waited == pytest.approx(50 / 3, abs=0.2)


def test_on_a_crowded_machine_only_the_wall_limit_ends_a_working_probe():
    # a tenth of a core: 9x its timeout in wall time is still under a timeout of its own
    sim = Sim(rate=0.1, wait=0.9)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 200)
    assert expiry is not None and expiry.why == "wall"
    assert elapsed == pytest.approx(10 * WALL_FACTOR, abs=0.3)
    assert wd.own == pytest.approx(10, abs=0.3) and wd.cpu == pytest.approx(10, abs=0.3)


def test_waiting_for_a_cpu_is_not_idle():
    sim = Sim(rate=0.0005, wait=0.9995)  # starved: runnable all along, it barely ran
    wd = make(sim, timeout=10)
    expiry, _ = run_until_expiry(sim, wd, 200)
    assert expiry is not None and expiry.why == "wall"


def test_a_hung_probe_ends_at_its_timeout():
    sim = Sim(rate=0.0)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 100)
    assert expiry is not None and expiry.why == "idle"
    assert 10 <= elapsed <= 10 + wd.bounds.interval + 0.06


def test_a_probe_that_hangs_late_ends_one_idle_window_after_it_stopped():
    sim = Sim(rate=0.5)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 100, rate_after=(12.0, 0.0))
    assert expiry is not None and expiry.why == "idle"
    # progress is seen at a sample, and so is the idle window's end: two samples late at most
    b = wd.bounds
    assert 12 + b.idle - 0.1 <= elapsed <= 12 + b.idle + 2 * b.interval + 0.1


def test_signals_are_progress_without_cpu():
    sim = Sim(rate=0.0)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 100, signal_every=0.5)
    assert expiry is not None and expiry.why == "ceiling"
    assert elapsed == pytest.approx(10 * CEILING_FACTOR, abs=0.2)


def test_a_busy_loop_ends_when_its_cpu_passes_the_budget():
    sim = Sim(rate=1.0, wait=0.0)  # one core, flat out, on a quiet two-core machine
    wd = make(sim, timeout=10, cores=2)
    expiry, elapsed = run_until_expiry(sim, wd, 100)
    assert expiry is not None and expiry.why == "cpu"
    assert elapsed == pytest.approx(20, abs=1.2)  # timeout x cores of CPU
    # the same loop at a fifth of a core: its own time runs at a fifth too, so the wall
    # limit ends it
    sim = Sim(rate=0.2, wait=0.8)
    wd = make(sim, timeout=10, cores=2)
    expiry, elapsed = run_until_expiry(sim, wd, 200)
    assert expiry is not None and expiry.why == "wall"
    assert elapsed == pytest.approx(100, abs=0.3)
    # without schedstat its own time is the wall time: the ceiling ends it
    sim = Sim(rate=0.2)
    wd = make(sim, timeout=10, cores=2)
    expiry, elapsed = run_until_expiry(sim, wd, 200)
    assert expiry is not None and expiry.why == "ceiling"
    assert elapsed == pytest.approx(10 * CEILING_FACTOR, abs=0.3)


def test_noise_below_one_percent_of_the_window_is_idle():
    sim = Sim(rate=0.005)  # a background thread's odd tick
    wd = make(sim, timeout=10)
    expiry, _ = run_until_expiry(sim, wd, 100)
    assert expiry is not None and expiry.why == "idle"


def test_without_proc_only_signals_count():
    sim = Sim(rate=1.0, proc=False)
    wd = make(sim, timeout=10)
    expiry, elapsed = run_until_expiry(sim, wd, 100)
    assert expiry is not None and expiry.why == "idle" and expiry.cpu is None
    assert "cpu_seconds" not in wd.usage()


def test_the_reason_names_the_bound_the_step_and_the_last_signal():
    sim = Sim(rate=0.0)
    wd = make(sim, timeout=10)
    sim.advance(2)
    wd.last_event = sim.now
    wd.saw_signal()
    sim.advance(1)
    wd.last_event = sim.now
    wd.saw_step("package")
    expiry, _ = run_until_expiry(sim, wd, 100)
    assert expiry is not None
    sig = {"kind": "timing", "subject": "export", "seconds": 42.71}
    reason = wd.reason(expiry, [sig])
    assert reason.startswith("timed out after 10 s: no progress for ")
    assert "in step package (for 7 s)" in reason  # it began 3 s after the probe
    assert "last signal: timing export 42.7 s, 8 s ago" in reason
    assert "live children: cc1plus" in reason
    usage = wd.usage(expiry)
    assert usage["ended_by"] == "idle" and usage["timeout"] == 10
    assert usage["cpu_seconds"] == 0 and usage["longest_idle"] >= 7
    assert "no signal yet" in make(Sim(), 1).reason(expiry, [])
    heads = {why: wd.reason(Expiry(why, 45.0, 3.0, 0.0, 40.0), []).split(";")[0]
             for why in ("cpu", "ceiling", "wall")}
    assert heads["cpu"] == ("timed out after 45 s: used 3 s of CPU, past its budget of 20 s "
                            "(10 s timeout x 2 cores)")
    assert heads["ceiling"] == ("timed out after 45 s: still working after 40 s of its own "
                                "time (the wall time less 0 s it waited for a CPU), the "
                                "ceiling of 4 x its 10 s timeout, 3 s of CPU")
    assert heads["wall"] == ("timed out after 45 s: the wall-clock limit of 10 x its 10 s "
                             "timeout, still working (40 s of its own time, 3 s of CPU)")


def test_next_event_samples_while_waiting_and_in_a_flood():
    sim = Sim(rate=0.0)
    wd = make(sim, timeout=1)
    calls: list[float] = []

    async def read(timeout: float) -> dict:
        calls.append(timeout)
        sim.advance(0.05)
        return {"type": "signals"}  # a flood: never a TimeoutError

    async def drive() -> None:
        while True:
            await wd.next_event(read)

    with pytest.raises(Expired) as info:
        asyncio.run(drive())
    # signals arrived all along, so only the ceiling ends it
    assert info.value.expiry.why == "ceiling"
    assert all(0 <= t <= wd.bounds.interval for t in calls)


BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_sample_tree_counts_children_grandchildren_and_reaped_ones():
    # a child that burns 0.3 s itself, then runs a grandchild burning 0.4 s, then sleeps
    code = (BURN.format(s=0.3) + "import subprocess, sys\n"
            f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.4)!r}])\n"
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        sample = sample_tree(proc.pid)
        while time.monotonic() < deadline:
            sample = sample_tree(proc.pid)
            if sample is not None and sample.cpu >= 0.7 and sample.children:
                break
            time.sleep(0.1)
        assert sample is not None and sample.cpu >= 0.7  # the reaped grandchild's included
        assert sample.children and all(name.startswith("python")
                                       for _, name in sample.children)
        assert sample_tree(2 ** 22 + 12345) is None  # no such process
        if os.path.isfile("/proc/self/schedstat"):  # per thread: seconds run, waited
            assert sample.sched and sum(r for r, _ in sample.sched.values()) > 0
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
