"""Probe timeouts that measure the probe's work, not the machine's load
(docs/architecture.md, 'Timeouts: work, not load').

A probe is never ended before its timeout ``T``. Past ``T`` it keeps running while it makes
progress, and ends at the first of:

* **idle**: for the idle window ``W`` (``T / 10``, between 1 and 60 s) its process tree
  (the worker and every descendant: compiler children included) gained less than 1 % of
  ``W`` in CPU time and it sent nothing (no signal, no step);
* **CPU budget**: the tree's CPU time since the probe started passed ``T`` times the cores
  laya-tui may use (a probe that fits in ``T`` on a quiet machine can never use more);
* **ceiling**: ``CEILING_FACTOR x T`` of wall time, whatever it does.

CPU time comes from ``/proc`` (Linux), sampled at most once a second, off the signal path:
the runner calls :meth:`Watchdog.check` only when a sample is due. Without ``/proc`` only
signals count as progress and there is no CPU budget (the ceiling still holds).

Standard library only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from laya_tui.core.defaults import usable_cores

#: The idle window is this fraction of the timeout ...
IDLE_FRACTION = 0.1
#: ... kept between these bounds (seconds).
IDLE_MIN, IDLE_MAX = 1.0, 60.0
#: A tree that gained less than this fraction of the idle window in CPU time is idle.
IDLE_CPU_FRACTION = 0.01
#: No probe runs past this multiple of its timeout (wall clock).
CEILING_FACTOR = 4.0
#: Longest time between two samples (seconds).
SAMPLE_EVERY = 1.0

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = os.path.isdir("/proc/self/task")


@dataclass(frozen=True)
class Bounds:
    """The limits of one probe run, all derived from its timeout (seconds)."""

    timeout: float
    idle: float
    cpu: float
    ceiling: float
    interval: float
    cores: int

    @classmethod
    def of(cls, timeout: float, cores: int | None = None) -> Bounds:
        """The bounds of a probe whose timeout is ``timeout`` (see the module docstring)."""
        cores = cores or usable_cores()
        idle = min(IDLE_MAX, max(IDLE_MIN, timeout * IDLE_FRACTION))
        return cls(timeout=timeout, idle=idle, cpu=timeout * cores,
                   ceiling=timeout * CEILING_FACTOR, interval=min(SAMPLE_EVERY, idle / 4),
                   cores=cores)

    def as_dict(self) -> dict[str, float]:
        """The report's ``budget`` limits."""
        return {"timeout": self.timeout, "idle_window": round(self.idle, 3),
                "cpu_budget": self.cpu, "ceiling": self.ceiling}


@dataclass(frozen=True)
class TreeSample:
    """CPU seconds of a process tree (reaped children included) and its live descendants."""

    cpu: float
    children: tuple[tuple[int, str], ...] = ()


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


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def sample_tree(pid: int) -> TreeSample | None:
    """CPU time of ``pid`` and all its descendants from ``/proc`` (None without it)."""
    if not _PROC:
        return None
    root = _stat(pid)
    if root is None:
        return None
    cpu = root[1]
    kids: list[tuple[int, str]] = []
    todo = _children(pid)
    seen = {pid}
    while todo and len(seen) < 4096:
        child = todo.pop()
        if child in seen:
            continue
        seen.add(child)
        st = _stat(child)
        if st is None:
            continue
        kids.append((child, st[0]))
        cpu += st[1]
        todo.extend(_children(child))
    return TreeSample(cpu, tuple(kids))


class Expired(Exception):
    """A probe run went past its bounds (:attr:`expiry` says which)."""

    def __init__(self, expiry: Expiry) -> None:
        super().__init__(expiry.why)
        self.expiry = expiry


@dataclass(frozen=True)
class Expiry:
    """Why a probe was ended: ``idle``, ``cpu`` or ``ceiling``, with the facts."""

    why: str
    elapsed: float
    cpu: float | None
    idle_for: float


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
        self.t0 = clock()
        first = sampler(pid)
        self.cpu0 = first.cpu if first is not None else None
        self.cpu = 0.0  # CPU seconds since the start
        self.children: tuple[tuple[int, str], ...] = first.children if first else ()
        self._mark_cpu = 0.0  # CPU seconds at the last progress
        self.last_progress = self.t0
        self.last_event = self.t0
        self.last_signal = self.t0
        self.longest_idle = 0.0
        self.next_sample = self.t0 + bounds.interval
        self.step: tuple[str, float] | None = None  # (name, when it began)

    def saw_signal(self) -> None:
        """The event just read (:meth:`next_event`) carried signals."""
        self.last_signal = self.last_event

    def saw_step(self, name: str) -> None:
        """The event just read said the probe began step ``name``."""
        self.step = (name, self.last_event)

    async def next_event(self, read: Callable[[float], Awaitable[dict[str, Any]]]
                         ) -> dict[str, Any]:
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

    def check(self) -> Expiry | None:
        """Sample the tree if a sample is due; the :class:`Expiry` once a bound is passed."""
        now = self.clock()
        if now < self.next_sample:
            return None
        self.next_sample = now + self.bounds.interval
        sample = self.sampler(self.pid)
        threshold = max(1.0 / _TICK, IDLE_CPU_FRACTION * self.bounds.idle)
        if sample is not None and self.cpu0 is not None:
            self.cpu = max(self.cpu, sample.cpu - self.cpu0)
            self.children = sample.children
            if self.cpu - self._mark_cpu >= threshold:
                self._mark_cpu = self.cpu
                self.last_progress = now
        progress = max(self.last_progress, self.last_event)
        idle_for = now - progress
        self.longest_idle = max(self.longest_idle, idle_for)
        elapsed = now - self.t0
        cpu = self.cpu if self.cpu0 is not None else None
        if elapsed < self.bounds.timeout:
            return None
        if elapsed >= self.bounds.ceiling:
            return Expiry("ceiling", elapsed, cpu, idle_for)
        if cpu is not None and cpu > self.bounds.cpu:
            return Expiry("cpu", elapsed, cpu, idle_for)
        if idle_for >= self.bounds.idle:
            return Expiry("idle", elapsed, cpu, idle_for)
        return None

    def usage(self, expiry: Expiry | None = None) -> dict[str, Any]:
        """The result's ``budget``: the bounds, what the run used of them, what ended it."""
        out: dict[str, Any] = self.bounds.as_dict()
        out["seconds"] = round(self.clock() - self.t0, 3)
        if self.cpu0 is not None:
            out["cpu_seconds"] = round(self.cpu, 3)
        out["longest_idle"] = round(self.longest_idle, 3)
        if expiry is not None:
            out["ended_by"] = expiry.why
        return out

    def reason(self, expiry: Expiry, signals: list[dict[str, Any]]) -> str:
        """The timeout reason: which bound, the step it was in, its last signal."""
        b = self.bounds
        if expiry.why == "idle":
            head = (f"timed out after {b.timeout:g} s: no progress for {expiry.idle_for:.0f} s"
                    " (no CPU time, no signal)")
        elif expiry.why == "cpu":
            head = (f"timed out after {expiry.elapsed:.0f} s: used {expiry.cpu or 0:.3g} s of "
                    f"CPU, past its budget of {b.cpu:g} s ({b.timeout:g} s timeout x "
                    f"{b.cores} core{'s' if b.cores != 1 else ''})")
        else:
            cpu = f", {expiry.cpu:.0f} s of CPU" if expiry.cpu is not None else ""
            head = (f"timed out after {expiry.elapsed:.0f} s: still working at the ceiling, "
                    f"{CEILING_FACTOR:g} x its {b.timeout:g} s timeout{cpu}")
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


def describe_signal(sig: dict[str, Any]) -> str:
    """``timing package 204.9 s``: a signal in a few words."""
    text = " ".join(str(x) for x in (sig.get("kind"), sig.get("subject")) if x)
    secs = sig.get("seconds")
    if isinstance(secs, int | float) and not isinstance(secs, bool):
        text += f" {secs:.1f} s"
    return text[:120]
