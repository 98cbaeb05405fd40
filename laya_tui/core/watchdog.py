"""Probe timeouts that measure the probe's work, not the machine's load
(docs/architecture.md, 'Timeouts: work, not load').

A probe is never ended before its timeout ``T``. Past ``T`` it keeps running while it makes
progress, and ends at the first of:

* **idle**: for the idle window ``W`` (``T / 10``, between 1 and 60 s) its process tree
  (the worker and every descendant: compiler children included) neither ran nor waited for
  a CPU for 1 % of ``W``, and sent nothing (no signal, no step): a hang;
* **CPU budget**: the tree's CPU time since the probe started passed ``T`` times the cores
  laya-tui may use (a probe that fits in ``T`` on a quiet machine can never use more): a
  busy loop;
* **ceiling**: its own time passed ``CEILING_FACTOR x T``. Its own time is the wall time
  minus the time the machine's load took from it: the time its threads were ready to run
  but waited for a CPU (``/proc/<pid>/task/<tid>/schedstat``). A probe that sleeps or waits
  on I/O loses nothing; a probe at a third of a core because two hogs share it advances a
  third of a second a second, as its CPU does;
* **wall limit**: ``WALL_FACTOR x T`` of wall time, whatever the machine does: the last
  resort on a machine so loaded that nothing finishes.

Everything comes from ``/proc`` (Linux), sampled at most once a second, off the signal
path: the runner samples only when a sample is due. Without ``/proc`` only signals count as
progress, own time is wall time and there is no CPU budget.

Standard library only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from laya_tui.core.defaults import usable_cores
from laya_tui.core.report_types import BudgetDict
from laya_tui.core.results import SignalLike

_E = TypeVar("_E")  # what ``read`` returns: the worker's events

#: The idle window is this fraction of the timeout ...
IDLE_FRACTION = 0.1
#: ... kept between these bounds (seconds).
IDLE_MIN, IDLE_MAX = 1.0, 60.0
#: A tree that ran or waited for a CPU less than this fraction of the idle window is idle.
IDLE_CPU_FRACTION = 0.01
#: No probe runs past this multiple of its timeout in its own time (wall minus CPU waits).
CEILING_FACTOR = 4.0
#: ... nor past this multiple of its timeout in wall time.
WALL_FACTOR = 10.0
#: Longest time between two samples (seconds).
SAMPLE_EVERY = 1.0
#: Most processes of one tree that are read.
MAX_PROCS = 4096

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = os.path.isdir("/proc/self/task")
_SCHED = os.path.isfile("/proc/self/schedstat")


@dataclass(frozen=True)
class Bounds:
    """The limits of one probe run, all derived from its timeout (seconds)."""

    timeout: float
    idle: float
    cpu: float
    ceiling: float
    wall: float
    interval: float
    cores: int

    @classmethod
    def of(cls, timeout: float, cores: int | None = None) -> Bounds:
        """The bounds of a probe whose timeout is ``timeout`` (see the module docstring)."""
        cores = cores or usable_cores()
        idle = min(IDLE_MAX, max(IDLE_MIN, timeout * IDLE_FRACTION))
        return cls(timeout=timeout, idle=idle, cpu=timeout * cores,
                   ceiling=timeout * CEILING_FACTOR, wall=timeout * WALL_FACTOR,
                   interval=min(SAMPLE_EVERY, idle / 4), cores=cores)

    def as_dict(self) -> BudgetDict:
        """The report's ``budget`` limits."""
        return {"timeout": self.timeout, "idle_window": round(self.idle, 3),
                "cpu_budget": self.cpu, "ceiling": self.ceiling, "wall_limit": self.wall}


@dataclass(frozen=True)
class TreeSample:
    """A process tree at one moment: CPU seconds (reaped children included), its live
    descendants ``(pid, name)``, and per thread ``(seconds run, seconds waited for a CPU)``
    from schedstat (None where the kernel keeps none)."""

    cpu: float
    children: tuple[tuple[int, str], ...] = ()
    sched: dict[tuple[int, int], tuple[float, float]] | None = field(default=None)


def _stat(pid: int) -> tuple[str, float] | None:
    """``(command name, user+system seconds of it and its reaped children)``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    head, _, rest = raw.rpartition(b")")
    fields = rest.split()
    try:
        ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    except (IndexError, ValueError):
        return None
    return head.partition(b"(")[2].decode("utf-8", "replace"), ticks / _TICK


def _threads(pid: int, sched: dict[tuple[int, int], tuple[float, float]] | None
             ) -> list[int]:
    """The children of ``pid``'s threads; each thread's schedstat into ``sched``."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        base = f"/proc/{pid}/task/{tid}/"
        try:
            with open(base + "children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
            if sched is not None:
                with open(base + "schedstat", "rb") as fh:
                    run, wait = fh.read().split()[:2]
                sched[(pid, int(tid))] = (int(run) / 1e9, int(wait) / 1e9)
        except (OSError, ValueError):
            continue
    return out


def sample_tree(pid: int) -> TreeSample | None:
    """``pid`` and all its descendants from ``/proc`` (None without it, or once gone)."""
    if not _PROC:
        return None
    root = _stat(pid)
    if root is None:
        return None
    sched: dict[tuple[int, int], tuple[float, float]] | None = {} if _SCHED else None
    cpu = root[1]
    kids: list[tuple[int, str]] = []
    todo = _threads(pid, sched)
    seen = {pid}
    while todo and len(seen) < MAX_PROCS:
        child = todo.pop()
        if child in seen:
            continue
        seen.add(child)
        st = _stat(child)
        if st is None:
            continue
        kids.append((child, st[0]))
        cpu += st[1]
        todo.extend(_threads(child, sched))
    return TreeSample(cpu, tuple(kids), sched)


class Expired(Exception):
    """A probe run went past its bounds (:attr:`expiry` says which)."""

    def __init__(self, expiry: Expiry) -> None:
        super().__init__(expiry.why)
        self.expiry = expiry


@dataclass(frozen=True)
class Expiry:
    """Why a probe was ended: ``idle``, ``cpu``, ``ceiling`` or ``wall``, with the facts."""

    why: str
    elapsed: float
    cpu: float | None
    idle_for: float
    own: float


class Watchdog:
    """Decides, from samples of the worker's process tree and the events it sends, when a
    probe run has gone past its bounds (see the module docstring).

    The runner reads the worker's events through :meth:`next_event` and tells it which
    carried signals (:meth:`saw_signal`) or began a step (:meth:`saw_step`).
    """

    def __init__(self, pid: int, bounds: Bounds, *,
                 clock: Callable[[], float] = time.monotonic,
                 sampler: Callable[[int], TreeSample | None] = sample_tree) -> None:
        self.pid = pid
        self.bounds = bounds
        self.clock = clock
        self.sampler = sampler
        self.t0 = self._sampled_at = clock()
        first = sampler(pid)
        self.cpu0 = first.cpu if first is not None else None
        self._sched = first.sched if first is not None else None
        self.cpu = 0.0  # CPU seconds since the start
        self.waited = 0.0  # seconds its threads waited for a CPU (summed over threads)
        self.own = 0.0  # its own time: wall minus what the machine's load took
        self.children: tuple[tuple[int, str], ...] = first.children if first else ()
        self._mark = 0.0  # CPU + waits at the last progress
        self.last_progress = self.last_event = self.last_signal = self.t0
        self.longest_idle = 0.0
        self.next_sample = self.t0 + bounds.interval
        self.step: tuple[str, float] | None = None  # (name, when it began)

    def saw_signal(self) -> None:
        """The event just read (:meth:`next_event`) carried signals."""
        self.last_signal = self.last_event

    def saw_step(self, name: str) -> None:
        """The event just read said the probe began step ``name``."""
        self.step = (name, self.last_event)

    async def next_event(self, read: Callable[[float], Awaitable[_E]]) -> _E:
        """The next event of ``read(timeout)`` (the worker's signal pipe), sampling the tree
        whenever a sample is due, even in a flood of events; raises :class:`Expired` once
        a bound is passed. Every event is progress."""
        while True:
            wait = self.due()
            if wait <= 0:
                expiry = self.check()
                if expiry is not None:
                    raise Expired(expiry)
                wait = self.due()
            try:
                event = await read(wait)
            except TimeoutError:
                continue
            self.last_event = self.clock()
            return event

    def due(self) -> float:
        """Seconds until the next sample (the longest the runner may wait for an event)."""
        return max(0.0, self.next_sample - self.clock())

    def _own_time(self, dt: float, sched: dict[tuple[int, int], tuple[float, float]] | None
                  ) -> float:
        """Of ``dt`` seconds of wall time, the probe's own: ``dt`` minus the time it was
        ready to run and waited (with several threads, never less than the share of ready
        time it ran)."""
        if sched is None or self._sched is None:
            return dt
        ran = waited = 0.0
        for tid, (run, wait) in sched.items():
            run0, wait0 = self._sched.get(tid, (0.0, 0.0))  # a new thread: all of it
            ran += max(0.0, run - run0)
            waited += max(0.0, wait - wait0)
        self._sched = sched
        self.waited += waited
        ready = ran + waited
        own = max(dt * ran / ready, dt - waited) if ready > 0 else dt
        return min(dt, max(0.0, own))

    def check(self) -> Expiry | None:
        """Sample the tree if a sample is due; the :class:`Expiry` once a bound is passed."""
        now = self.clock()
        if now < self.next_sample:
            return None
        self.next_sample = now + self.bounds.interval
        dt, self._sampled_at = now - self._sampled_at, now
        sample = self.sampler(self.pid)
        if sample is not None and self.cpu0 is not None:
            self.cpu = max(self.cpu, sample.cpu - self.cpu0)
            self.children = sample.children
            self.own += self._own_time(dt, sample.sched)
            threshold = max(1.0 / _TICK, IDLE_CPU_FRACTION * self.bounds.idle)
            if self.cpu + self.waited - self._mark >= threshold:  # it ran, or wanted to
                self._mark = self.cpu + self.waited
                self.last_progress = now
        else:
            self.own += dt
        idle_for = now - max(self.last_progress, self.last_event)
        self.longest_idle = max(self.longest_idle, idle_for)
        elapsed = now - self.t0
        cpu = self.cpu if self.cpu0 is not None else None
        b = self.bounds
        if elapsed < b.timeout:
            return None
        why = ("wall" if elapsed >= b.wall else "ceiling" if self.own >= b.ceiling
               else "cpu" if cpu is not None and cpu > b.cpu
               else "idle" if idle_for >= b.idle else None)
        return Expiry(why, elapsed, cpu, idle_for, self.own) if why else None

    def usage(self, expiry: Expiry | None = None) -> BudgetDict:
        """The result's ``budget``: the bounds, what the run used of them, what ended it."""
        out = self.bounds.as_dict()
        out["seconds"] = round(self.clock() - self.t0, 3)
        out["own_seconds"] = round(self.own, 3)
        if self.cpu0 is not None:
            out["cpu_seconds"] = round(self.cpu, 3)
        out["longest_idle"] = round(self.longest_idle, 3)
        if expiry is not None:
            out["ended_by"] = expiry.why
        return out

    def reason(self, expiry: Expiry, signals: Sequence[SignalLike]) -> str:
        """The timeout reason: which bound, the step it was in, its last signal."""
        b = self.bounds
        cpu = f", {expiry.cpu:.3g} s of CPU" if expiry.cpu is not None else ""
        if expiry.why == "idle":
            head = (f"timed out after {b.timeout:g} s: no progress for {expiry.idle_for:.0f} s"
                    " (no CPU time, no signal)")
        elif expiry.why == "cpu":
            head = (f"timed out after {expiry.elapsed:.0f} s: used {expiry.cpu or 0:.3g} s of "
                    f"CPU, past its budget of {b.cpu:g} s ({b.timeout:g} s timeout x "
                    f"{b.cores} core{'s' if b.cores != 1 else ''})")
        elif expiry.why == "ceiling":
            head = (f"timed out after {expiry.elapsed:.0f} s: still working after "
                    f"{expiry.own:.0f} s of its own time (the wall time less "
                    f"{self.waited:.0f} s it waited for a CPU), the ceiling of "
                    f"{CEILING_FACTOR:g} x its {b.timeout:g} s timeout{cpu}")
        else:
            head = (f"timed out after {expiry.elapsed:.0f} s: the wall-clock limit of "
                    f"{WALL_FACTOR:g} x its {b.timeout:g} s timeout, still working "
                    f"({expiry.own:.0f} s of its own time{cpu})")
        now = self.clock()
        parts = [head]
        if self.step is not None:
            parts.append(f"in step {self.step[0]} (for {now - self.step[1]:.0f} s)")
        parts.append(f"last signal: {describe_signal(signals[-1])}, "
                     f"{now - self.last_signal:.0f} s ago" if signals else "no signal yet")
        if self.children:
            names = list(dict.fromkeys(name for _, name in self.children))
            parts.append("live children: " + ", ".join(names[:4])
                         + (f" (+{len(names) - 4})" if len(names) > 4 else ""))
        try:
            parts.append(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        except (OSError, AttributeError):
            pass
        return "; ".join(parts)


def describe_signal(sig: SignalLike) -> str:
    """``timing package 204.9 s``: a signal in a few words."""
    text = " ".join(str(x) for x in (sig.get("kind"), sig.get("subject")) if x)
    secs = sig.get("seconds")
    if isinstance(secs, int | float) and not isinstance(secs, bool):
        text += f" {secs:.1f} s"
    return text[:120]
