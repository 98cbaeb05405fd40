"""Re-runs in watch mode: the cells a change touched, queued per family and run in the
runner's warm workers under the runner's own limits (its job slots and family locks), with
a newer change superseding a run in flight (docs/architecture.md, 'Watch mode').
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

from laya_tui.core.envs import worker_key
from laya_tui.core.events import Event, ProbeStarted
from laya_tui.core.report_types import CellSpec, ResultDict
from laya_tui.core.runner import Runner

#: What a re-run was for: (the changed file that caused it, when it changed).
Cause = tuple[str | None, float | None]
#: Called with (cell id, cause, result) for every run a newer change did not supersede.
OnDone = Callable[[str, Cause, ResultDict], None]


class RerunScheduler:
    """Queue cells per warm worker (family, ``family@env`` under ``--env``); run each queue
    one cell at a time.

    A cell's *generation* goes up with every change to it. A run counts only when no change
    came in after the worker started reading the files (``ProbeStarted``, unless a change
    was still waiting to be dropped from that worker's modules).
    """

    def __init__(self, runner: Runner, probes: Callable[[], dict[str, CellSpec]],
                 runnable: Callable[[str], bool], deps_of: Callable[[str], set[str]],
                 on_done: OnDone, stop: asyncio.Event, *, use_cache: bool) -> None:
        self.runner = runner
        self._probes = probes
        self._runnable = runnable
        self._deps_of = deps_of
        self._on_done = on_done
        self._use_cache = use_cache
        self._stop = stop  # the watcher's: once set, no new run starts
        self._gen: dict[str, int] = {}
        self._started_gen: dict[str, int] = {}
        self._inflight: set[str] = set()
        self._dirty: dict[str, OrderedDict[str, Cause]] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def schedule(self, pid: str, cause: Cause) -> None:
        """Queue ``pid`` (again): a newer change supersedes its run in flight."""
        self._gen[pid] = self._gen.get(pid, 0) + 1
        fam = worker_key(self._probes()[pid])  # one queue per warm worker: family[@env]
        self._dirty.setdefault(fam, OrderedDict())[pid] = cause
        if pid in self._inflight:
            self.runner.cancel(pid)
        if fam not in self._drivers:
            self._drivers[fam] = asyncio.ensure_future(self._drive(fam))

    def cancel(self, pid: str) -> None:
        """Drop ``pid`` from the queues and end its run in flight."""
        self._gen[pid] = self._gen.get(pid, 0) + 1
        for q in self._dirty.values():
            q.pop(pid, None)
        if pid in self._inflight:
            self.runner.cancel(pid)

    def on_event(self, event: Event) -> None:
        """The runner's listener: a run the worker started reads the files from now on."""
        if isinstance(event, ProbeStarted):
            probe = self._probes().get(event.probe_id)
            pending = self.runner.pending_invalidations(
                worker_key(probe) if probe is not None else event.family)
            if not pending & self._deps_of(event.probe_id):
                self._started_gen[event.probe_id] = self._gen.get(event.probe_id, 0)

    async def wait_idle(self) -> None:
        """Until every queue is empty (or the watcher stops)."""
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            while self._drivers and not self.stopped:
                await asyncio.wait([*self._drivers.values(), stopped],
                                   return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()

    async def shutdown(self, grace: float = 5.0) -> None:
        """End the queues: runs in flight are killed and their drivers end on their own
        (cancelling a task mid-protocol would leave a shared runner's worker out of step)."""
        self._stop.set()
        deadline = time.monotonic() + grace
        while self._drivers and time.monotonic() < deadline:
            for pid in list(self._inflight):
                self.runner.cancel(pid)
            await asyncio.wait(list(self._drivers.values()), timeout=0.1)
        for t in list(self._drivers.values()):
            t.cancel()

    async def _drive(self, fam: str) -> None:
        """Run the family's dirty cells one by one in its warm worker."""
        try:
            q = self._dirty.setdefault(fam, OrderedDict())
            while q and not self.stopped:
                pid, cause = q.popitem(last=False)
                probe = self._probes().get(pid)
                if probe is None or not self._runnable(pid):
                    continue
                gen = self._gen.get(pid, 0)
                self._started_gen[pid] = gen
                async with self.runner.job_slot():
                    if self._gen.get(pid, 0) != gen or self.stopped:
                        continue  # superseded while waiting: it is queued again
                    self._inflight.add(pid)
                    try:
                        use_cache = self._use_cache if cause[0] is None else False
                        result = await self.runner.run_one(probe, use_cache=use_cache)
                    finally:
                        self._inflight.discard(pid)
                if self.stopped or result is None \
                        or self._started_gen.get(pid, gen) != self._gen.get(pid):
                    continue  # a newer change came in after this run read the files
                self._on_done(pid, cause, result)
        finally:
            self._drivers.pop(fam, None)
