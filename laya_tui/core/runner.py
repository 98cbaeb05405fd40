"""The runner: discovers probes in a worker, runs them in warm per-family workers, survives
their crashes, hangs and garbage, and streams events to whoever listens (UI or headless).

Pure asyncio and the standard library: nothing heavy is imported here (docs/architecture.md,
'Processes and the one rule').
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laya_tui.core.cellid import matches_any
from laya_tui.core.defaults import usable_cores
from laya_tui.core.discovery import (
    Discovery,
    only_error,
    select_discovered,
    shard_discovery,
    unmatched_patterns,
)
from laya_tui.core.envs import base_id, worker_key
from laya_tui.core.events import (
    Event,
    EventSource,
    Listeners,
    ProbeFinished,
    ProbeQueued,
    ProbeStarted,
    SignalEmitted,
)
from laya_tui.core.files import drop_bytecode
from laya_tui.core.protocol import DiscoveredEvent, Op, Reply, RunCommand, WorkerEvent
from laya_tui.core.report_types import (
    CellSpec,
    FileErrorDict,
    ResultDict,
    SignalDict,
)
from laya_tui.core.results import make_result
from laya_tui.core.settings import ProbeOptions, RunOptions
from laya_tui.core.signal_strings import share_strings
from laya_tui.core.watchdog import Bounds, Expired, Watchdog
from laya_tui.core.worker_handle import (
    WorkerDied,
    WorkerHandle,
    WorkerLike,
    log_tail,
    safe_name,
)

if TYPE_CHECKING:  # the cache (hashlib) is imported when a Runner is made
    from laya_tui.core.cache import CacheVersions, ResultCache, SignalSpool

#: Discovery's selection lives in ``core/discovery.py``; its names stay importable here.
__all__ = ["Discovery", "Runner", "WorkerDied", "WorkerHandle", "matches_any", "only_error",
           "unmatched_patterns"]

@dataclass(frozen=True)
class _Outcome:
    """What one run in a worker gave the runner: the result (the report's entry; None when
    a newer change superseded the run: then there is no result at all) and the absolute
    paths the worker saw the cell import (its cache entry's dependency set)."""

    result: ResultDict | None
    abs_deps: tuple[str, ...] = ()


#: A run :meth:`Runner.cancel` killed, or one that finished after it was superseded.
_SUPERSEDED = _Outcome(None)


class Runner(EventSource):
    """Discover and run probes; one warm worker per family, ``jobs`` families at a time."""

    def __init__(self, config: RunOptions, on_event: Callable[[Event], None] | None = None) -> None:
        self.config = config
        self._listeners = Listeners(on_event)
        self.log_dir = tempfile.mkdtemp(prefix="laya-tui-logs-")
        self.workers: dict[str, WorkerLike] = {}
        self._cache: ResultCache | None = None  # made on first use (see cache)
        self._versions: CacheVersions | None = None  # read on first use (see versions)
        self._running: dict[str, str] = {}  # family -> probe id in flight
        self._cancelled: set[str] = set()
        self.stopped = False  # see stop()
        self._lock: dict[str, asyncio.Lock] = {}
        self._slots: asyncio.Semaphore | None = None  # see job_slot()
        self._stale: dict[str, set[str]] = {}  # family -> changed files not yet dropped
        self._recycle: set[str] = set()  # families whose warm worker must restart
        self._disc: WorkerHandle | None = None  # the warm discovery worker (watch mode)
        self._disc_stale: set[str] = set()  # changed files it has not dropped yet
        self.cores = usable_cores()  # the CPU budget of a probe (core.watchdog)

    @property
    def cache(self) -> ResultCache:
        """The result cache, made on first use (hashlib, tempfile: ``--list`` needs none)."""
        if self._cache is None:
            from laya_tui.core.cache import ResultCache, default_cache_dir

            root = self.config.cache_dir or default_cache_dir(self.config.workspace)
            self._cache = ResultCache(root)
        return self._cache

    @cache.setter
    def cache(self, value: ResultCache) -> None:
        self._cache = value

    @property
    def versions(self) -> CacheVersions:
        """This interpreter's library versions (the cache key's), read on first use:
        importlib.metadata and its scan of every distribution cost ``--list`` ~30 ms."""
        if self._versions is None:
            from laya_tui.core.versions import library_versions

            self._versions = dict(library_versions())
        return self._versions

    @versions.setter
    def versions(self, value: CacheVersions) -> None:
        self._versions = value

    # -- discovery ---------------------------------------------------------------------
    async def discover(self, *, warm: bool = False) -> Discovery:
        """Import the probe files in a worker and list their cells (``--only``, ``--shard``).

        By default the worker is thrown away. ``warm`` (watch mode) keeps it for the next
        discovery, which first drops the modules of the files changed since
        (:meth:`invalidate`) instead of importing everything again; a warm worker that
        died is replaced once. :meth:`close_discovery` ends it.
        """
        attempts = 2 if warm else 1
        for attempt in range(attempts):
            handle = self._disc if warm and self._disc is not None and self._disc.alive \
                else None
            try:
                if handle is None:
                    handle = WorkerHandle("_discover", self.config, self.log_dir)
                    if warm:
                        await self.close_discovery()
                        self._disc = handle
                    await handle.start()
                if warm and self._disc_stale:
                    await handle.send({"op": Op.INVALIDATE, "files": sorted(self._disc_stale)})
                    await handle.next_event(timeout=30.0)
                    self._disc_stale.clear()
                await handle.send({"op": Op.DISCOVER, "paths": list(self.config.probes)})
                event = await handle.next_event(timeout=120.0)
                if event["type"] != Reply.DISCOVERED:
                    raise WorkerDied(f"unexpected discovery reply {event['type']!r}")
            except (WorkerDied, TimeoutError, OSError) as exc:
                handle = handle or self._disc
                tail = log_tail(handle.worker_log) if handle is not None else ""
                if warm:
                    await self.close_discovery()
                if attempt == attempts - 1:
                    return Discovery([], [{"file": ",".join(self.config.probes),
                                           "error": f"discovery failed: {exc} {tail[-300:]}"
                                           .strip(), "line": None}])
                continue
            finally:
                if not warm and handle is not None:
                    await handle.close()
            return self._select(event)
        raise AssertionError("unreachable")

    async def close_discovery(self) -> None:
        """End the warm discovery worker, if any (see :meth:`discover`)."""
        handle, self._disc = self._disc, None
        self._disc_stale.clear()
        if handle is not None:
            handle.kill()
            await handle.close()

    def _select(self, event: DiscoveredEvent) -> Discovery:
        """The ``discovered`` reply, narrowed by ``--only`` and ``--shard``."""
        return select_discovered(event, self.config, self._select_shard)

    def _select_shard(self, probes: list[CellSpec], errors: list[FileErrorDict]) -> Discovery:
        """``--shard K/N``: keep part K of the selection (see :mod:`laya_tui.core.shard`)."""
        return shard_discovery(probes, errors, self.config, lambda: self.cache.root)

    # -- running -----------------------------------------------------------------------
    async def run(self, probes: list[CellSpec], *, use_cache: bool | None = None
                  ) -> list[ResultDict]:
        """Run probe cells (the cache first, unless ``use_cache`` is False, or the run
        options say so when it is None); results in the order given."""
        for p in probes:
            self.on_event(ProbeQueued(p["id"], p["family"]))
        by_family: dict[str, list[CellSpec]] = {}  # by worker: family[@env]
        for p in probes:
            by_family.setdefault(worker_key(p), []).append(p)
        families = self._schedule(by_family)
        results: dict[str, ResultDict] = {}
        sem = self.job_slot()

        ran: list[ResultDict] = []  # in the order they ran: a family's first paid start-up

        async def family_task(fam: str) -> None:
            cells = by_family[fam]
            # Its first cell alone, then the slot goes round: every family's first result
            # comes before any family's second (the semaphore wakes waiters in turn).
            for batch in (cells[:1], cells[1:]):
                async with sem:
                    for p in batch:
                        if self.stopped:
                            return
                        got = await self.run_one(p, use_cache=use_cache)
                        if got is not None:
                            results[p["id"]] = got
                            ran.append(got)

        await asyncio.gather(*(family_task(f) for f in families))
        if self.config.shard is None and not self.stopped:  # shards read, never write these
            from laya_tui.core.shard import record_durations

            record_durations(self.cache.root, ran)
        return [results[p["id"]] for p in probes if p["id"] in results]

    def job_slot(self) -> asyncio.Semaphore:
        """The ``--jobs`` limit: hold one to run a family's cells (``run``) or one cell (the
        watcher's re-runs), so every caller of this runner shares it."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self.config.jobs))
        return self._slots

    def _schedule(self, by_family: dict[str, list[CellSpec]]) -> list[str]:
        """The families in run order, their cells ordered in place, by the cache's recorded
        durations (:func:`laya_tui.core.run_order.run_order`)."""
        from laya_tui.core.run_order import run_order
        from laya_tui.core.shard import read_cache_durations

        return run_order(by_family, read_cache_durations(self.cache.root),
                         first_cell=self.config.order != "shortest-first")

    async def run_one(self, probe: CellSpec, *,
                      use_cache: bool | None = None) -> ResultDict | None:
        """Run one cell in its family's warm worker (or serve it from the cache): its
        result, or None when :meth:`cancel` superseded the run (watch mode)."""
        use_cache = self.config.use_cache if use_cache is None else use_cache
        options = self._cache_options()
        versions = self._versions_for(probe)
        if use_cache:
            hit = self.cache.lookup(probe["id"], probe.get("params"), options, versions)
            if hit is not None:
                now = time.time()  # the span of this serving, not of the cached run
                hit = {**hit, "cached": True, "started": now, "ended": now}
                self.on_event(ProbeStarted(probe["id"], probe["family"], time.time()))
                for sig in hit.get("signals", []):
                    self.on_event(SignalEmitted(probe["id"], sig))
                self.on_event(ProbeFinished(hit))
                return hit
        lock = self._lock.setdefault(worker_key(probe), asyncio.Lock())
        spool = self.cache.spool(probe["id"])  # the signals' text as the worker wrote it
        try:
            async with lock:
                outcome = await self._execute(probe, spool)
            result = outcome.result
            if result is None:
                # A superseded run is no result: not cached, no ProbeFinished (the listeners
                # see the newer run next), None for the caller.
                return None
            deps = sorted(set(probe.get("deps", [])) | set(outcome.abs_deps))
            # sliced: encoding a 100k-signal result at once would hold the loop ~0.2 s
            # (the spooled text is copied instead when it holds every signal)
            await self.cache.store_async(probe["id"], probe.get("params"), options,
                                         versions, deps, result, spool)
        finally:
            if spool is not None:
                spool.close()
        self.on_event(ProbeFinished(result))
        return result

    def _versions_for(self, probe: CellSpec) -> CacheVersions:
        """The versions a cell's cache entry is keyed on: its environment's, else laya-tui's
        own interpreter's."""
        env = probe.get("env")
        for e in self.config.envs if env else ():
            if e.name == env:
                return e.cache_versions()
        return self.versions

    def _cache_options(self) -> ProbeOptions:
        """The run options that shape results (the workspace path itself does not)."""
        opts = self.config.options()
        opts.pop("workspace", None)
        opts.pop("demo", None)  # decides which cells exist, never what one of them gives
        return opts

    async def _worker(self, family: str, env: str | None = None) -> WorkerLike:
        """The warm worker of ``family`` (a worker key: ``family@env`` in an environment),
        under its lock, with pending invalidations applied."""
        handle = self.workers.get(family)
        stale = self._stale.pop(family, None)
        if handle is not None and handle.alive and family in self._recycle:
            await handle.close()
        elif handle is not None and handle.alive and stale:
            try:
                await handle.send({"op": Op.INVALIDATE, "files": sorted(stale)})
                await handle.next_event(timeout=10.0)
            except (WorkerDied, TimeoutError):
                handle.kill()
                await handle.close()
        if handle is not None and not handle.alive:
            await handle.close()  # reap a killed or exited worker before its successor starts
        if handle is None or not handle.alive:
            self._recycle.discard(family)
            handle = WorkerHandle(family, self.config, self.log_dir,
                                  next((e for e in self.config.envs if e.name == env), None)
                                  if env else None)
            self.workers[family] = handle
            await handle.start()
        return handle

    async def _execute(self, probe: CellSpec,
                       spool: SignalSpool | None = None) -> _Outcome:
        pid, fam, key = probe["id"], probe["family"], worker_key(probe)
        log_path = os.path.join(self.log_dir, safe_name(pid) + ".log")
        if os.path.exists(log_path):
            os.unlink(log_path)
        signals: list[SignalDict] = []
        files: dict[str, str] = {}  # one string per call-site file, shared by the signals
        t0 = time.perf_counter()
        started = time.time()  # wall clock, for --trace
        timeout = self.config.timeout_for(probe)
        self._cancelled.discard(pid)
        try:
            handle = await self._worker(key, probe.get("env"))
        except (WorkerDied, TimeoutError, OSError) as exc:
            ended = self._ended(
                probe, "crashed", f"worker failed to start: {exc}", t0, started, signals,
                log_tail(os.path.join(self.log_dir, f"_worker-{safe_name(key)}.log")))
            ended["budget"] = Bounds.of(timeout, self.cores).as_dict()  # the limits it had
            return _Outcome(ended)
        self._running[key] = pid
        wd: Watchdog | None = None
        try:
            cmd: RunCommand = {"op": Op.RUN, "id": pid, "file": probe["file"],
                               "func": probe["func"], "param": probe.get("param"),
                               "log": log_path}
            if probe.get("env"):
                cmd["cell"] = base_id(probe)  # the id discovery gave it (no @env)
            await handle.send(cmd)
            assert handle.proc is not None
            wd = Watchdog(handle.proc.pid, Bounds.of(timeout, self.cores))
            while True:
                event: WorkerEvent = await wd.next_event(handle.next_event)  # raises Expired
                if event["type"] == Reply.STARTED:
                    self.on_event(ProbeStarted(pid, fam, time.time()))
                elif event["type"] == Reply.SIGNALS:  # a batch: one line, one json.loads
                    batch = event.get("signals")
                    if (event.get("probe") != pid or not isinstance(batch, list)
                            or not all(type(s) is dict for s in batch)):
                        raise WorkerDied("malformed signal event on the signal pipe: "
                                         + json.dumps(event)[:200])
                    signals.extend(batch)
                    if spool is not None:
                        spool.add(handle.last_line, event)
                    wd.saw_signal()
                    share_strings(batch, pid, files)  # one copy of each repeated string
                    on_event = self.on_event
                    for sig in batch:
                        on_event(SignalEmitted(pid, sig))
                    await asyncio.sleep(0)  # buffered lines never suspend readline: let
                    # the UI's loop breathe between batches in a flood
                elif event["type"] == Reply.SIGNAL:  # one signal (the batched form is usual)
                    sig = event.get("signal")
                    if not isinstance(sig, dict) or event.get("probe") != pid:
                        raise WorkerDied("malformed signal event on the signal pipe: "
                                         + json.dumps(event)[:200])
                    signals.append(sig)
                    if spool is not None:
                        spool.decline()  # a lone signal line: the result is encoded
                    wd.saw_signal()
                    self.on_event(SignalEmitted(pid, sig))
                elif event["type"] == Reply.STEP and event.get("probe") == pid:
                    wd.saw_step(str(event.get("step"))[:200])
                elif event["type"] == Reply.FINISHED and event.get("id") == pid:
                    if pid in self._cancelled:  # it ended before the kill landed
                        return _SUPERSEDED
                    result = make_result(
                        probe, event.get("status", "failed"), event.get("reason"),
                        seconds=round(time.perf_counter() - t0, 3),
                        deps=self._rel_deps(probe, event.get("deps", [])), signals=signals,
                        log_tail=log_tail(log_path), started=started, ended=time.time(),
                        error=event.get("error"))
                    result["budget"] = wd.usage()
                    return _Outcome(result, tuple(event.get("deps", [])))
                else:
                    raise WorkerDied(f"unexpected event on the signal pipe: {event['type']!r}")
        except Expired as exc:
            handle.kill()
            await handle.close()
            if pid in self._cancelled:
                return _SUPERSEDED
            assert wd is not None  # Expired comes from the watchdog
            ended = self._ended(probe, "timeout", wd.reason(exc.expiry, signals), t0, started,
                                signals, log_tail(log_path))
            ended["budget"] = wd.usage(exc.expiry)
            return _Outcome(ended)
        except WorkerDied as exc:
            handle.kill()
            await handle.close()
            if pid in self._cancelled:
                return _SUPERSEDED
            reason = str(exc)
            tail = log_tail(log_path) or log_tail(handle.worker_log)
            ended = self._ended(probe, "crashed", reason, t0, started, signals, tail)
            # the budget it ran under, crashed or not (what it used, where it got that far)
            ended["budget"] = (wd.usage() if wd is not None
                               else Bounds.of(timeout, self.cores).as_dict())
            return _Outcome(ended)
        finally:
            self._running.pop(key, None)

    def _ended(self, probe: CellSpec, status: str, reason: str, t0: float,
               started: float, signals: list[SignalDict], tail: str) -> ResultDict:
        """A run the worker did not finish: crashed or timed out."""
        return make_result(probe, status, reason, seconds=round(time.perf_counter() - t0, 3),
                           deps=self._rel_deps(probe, []), signals=signals, log_tail=tail,
                           started=started, ended=time.time())

    def _rel_deps(self, probe: CellSpec, run_deps: list[str]) -> list[str]:
        root = os.path.realpath(self.config.workspace)
        out = []
        for d in sorted(set(probe.get("deps", [])) | set(run_deps)):
            rel = os.path.relpath(d, root)
            out.append(d if rel.startswith("..") else rel)
        return out

    def cancel(self, probe_id: str) -> bool:
        """Kill the worker running ``probe_id`` (watch mode: a newer change supersedes it).

        :meth:`run_one` then returns None for it: never cached, never announced.
        """
        for fam, pid in self._running.items():
            if pid == probe_id:
                self._cancelled.add(pid)
                self.workers[fam].kill()
                return True
        return False

    async def invalidate(self, files: set[str], *, recycle: bool = False) -> None:
        """Mark ``files`` changed: each warm worker drops the modules that depend on them
        right before its next run (under its family lock, so never mid-run or mid-reply),
        and the warm discovery worker before its next discovery.

        ``recycle`` restarts the warm run workers instead, for changes no module reload can
        apply (a native extension, a file loaded by a library at import time).
        """
        real = {os.path.realpath(f) for f in files}
        for path in real:  # now, for the fresh workers a cancel starts as well
            drop_bytecode(path)
        for fam, handle in self.workers.items():
            if handle.alive:
                self._stale.setdefault(fam, set()).update(real)
                if recycle:
                    self._recycle.add(fam)
        if self._disc is not None and self._disc.alive:
            self._disc_stale |= real

    def pending_invalidations(self, family: str) -> frozenset[str]:
        """Changed files the warm worker of ``family`` (a worker key, ``family@env`` in an
        environment) has not dropped yet (it will, right before its next run): a run
        starting now still sees their old modules."""
        return frozenset(self._stale.get(family, ()))

    async def close(self) -> None:
        """End every worker and remove the log folder."""
        await self.close_discovery()
        await asyncio.gather(*(h.close() for h in self.workers.values()), return_exceptions=True)
        self.workers.clear()
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def stop(self) -> None:
        """Stop the run (Ctrl-C, SIGTERM): no further cell starts, every worker dies now."""
        self.stopped = True
        self.kill_all()

    def kill_all(self) -> None:
        """Synchronous last resort (signal handlers, atexit): SIGKILL every worker group."""
        for h in self.workers.values():
            h.kill()
        if self._disc is not None:
            self._disc.kill()
