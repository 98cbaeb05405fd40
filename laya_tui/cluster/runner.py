"""The runner of ``--cluster``: the local :class:`~laya_tui.core.runner.Runner` with its
workers on Ray cluster nodes (docs/cluster.md).

Discovery, ``--only``, scheduling, timeouts, the cache, gates and outputs are the local
runner's. What changes: each cell is placed on a node by what it needs
(:mod:`laya_tui.cluster.placement`) and runs in the warm worker of its family on that node
(:class:`~laya_tui.cluster.remote_handle.RemoteHandle`); its result records the node
(``node: {id, host, resources, versions}``); a crash or timeout names the node; its cache
entry is keyed by the versions of the nodes that could run it as well.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from laya_tui.cluster.needs import need_of
from laya_tui.cluster.paths import package_dirs
from laya_tui.cluster.placement import Placed, Refused, place
from laya_tui.cluster.relay_types import WorkerSpec
from laya_tui.cluster.remote_handle import RemoteHandle
from laya_tui.cluster.session import Node, Session
from laya_tui.core.envs import worker_key
from laya_tui.core.errors import UsageError
from laya_tui.core.events import Event, ProbeStarted
from laya_tui.core.report_types import CellSpec, ResultDict
from laya_tui.core.results import make_result
from laya_tui.core.runner import Discovery, Runner, _Outcome
from laya_tui.core.settings import RunOptions

if TYPE_CHECKING:
    from laya_tui.core.cache import CacheVersions, SignalSpool

#: In a reason: a module the node could not import (a library it lacks).
MISSING = "No module named "


class ClusterRunner(Runner):
    """A :class:`Runner` whose workers run on the nodes of a Ray cluster."""

    def __init__(self, config: RunOptions, on_event: Callable[[Event], None] | None = None
                 ) -> None:
        address = getattr(config, "cluster", None)
        if not address:
            raise ValueError("ClusterRunner needs RunOptions.cluster")
        super().__init__(config, on_event)
        self.session = Session(address, config.workspace)
        self._opened = False
        self._connecting = asyncio.Lock()
        #: worker key -> node id -> its warm worker there
        self.pool: dict[str, dict[str, RemoteHandle]] = {}
        self._placed: dict[str, Placed] = {}  # worker key -> the node of the cell at hand
        self._lost: dict[str, Node] = {}  # nodes that left the cluster during the run

    async def connect(self) -> Session:
        """Connect once (Ray's ``init`` blocks: it runs in a thread); raises UsageError."""
        async with self._connecting:
            if self._opened:
                return self.session
            await asyncio.to_thread(self.session.open)
            self._opened = True
            if not self.session.alive():
                errors = [n.error for n in self.session.nodes.values() if n.error]
                raise UsageError("--cluster: no node can run laya-tui"
                                 + (f": {errors[0]}" if errors else ""))
        return self.session

    async def discover(self, *, warm: bool = False) -> Discovery:
        """Discover on this machine (probe files are read here and travel to the nodes)
        while connecting; a connection that fails stops the run before anything runs."""
        connecting = asyncio.ensure_future(self.connect())
        try:
            disc = await super().discover(warm=warm)
        finally:
            await connecting  # never left half-connected: close() disconnects after it
        return disc

    async def run_one(self, probe: CellSpec, *,
                      use_cache: bool | None = None) -> ResultDict | None:
        await self.connect()
        return await super().run_one(probe, use_cache=use_cache)

    def _versions_for(self, probe: CellSpec) -> CacheVersions:
        """The driver's versions plus those of every node that could run the cell."""
        base = dict(super()._versions_for(probe))
        where = self._choose(probe)
        nodes = self._candidates(where)
        base["cluster"] = {
            "need": need_of(probe, self.config.device).label(),
            "nodes": sorted({json.dumps(n.versions, sort_keys=True) for n in nodes}),
            "outcome": where.reason if isinstance(where, Refused) else None}
        return base

    def _candidates(self, where: Placed | Refused) -> list[Node]:
        if isinstance(where, Refused):
            return []
        res = where.resource
        alive = self.session.alive()
        same = [n for n in alive if (n.offers(res) if res else n.plain)]
        return same or [where.node]

    def _choose(self, probe: CellSpec) -> Placed | Refused:
        key = worker_key(probe)
        warm = {nid: 1 for handles in self.pool.values() for nid, h in handles.items()
                if h.alive}
        current = next((nid for nid, h in self.pool.get(key, {}).items() if h.alive), None)
        unusable = tuple(n for n in self.session.nodes.values() if n.alive and n.error)
        return place(need_of(probe, self.config.device), self.session.alive(),
                     list(self._lost.values()), warm, current, unusable)

    async def _execute(self, probe: CellSpec, spool: SignalSpool | None = None) -> _Outcome:
        """Place the cell, run it in its family's worker on that node (the local runner's
        loop), then record the node on the result."""
        where = self._choose(probe)
        if isinstance(where, Refused):
            return _Outcome(self._refused(probe, where))
        key = worker_key(probe)
        self._placed[key] = where
        outcome: _Outcome = await super()._execute(probe, spool)
        result = outcome.result
        if result is not None:
            node = where.node
            result["node"] = node.record()  # report/5
            reason = str(result.get("reason") or "")
            # a crash, a hang, or a library the node lacks: the node is part of the why
            if (result.get("status") in ("crashed", "timeout") or MISSING in reason) \
                    and node.id[:8] not in reason:
                result["reason"] = f"{reason} (on node {node.name()})"
            if result.get("status") == "crashed" and reason.startswith("node lost"):
                node.alive = False
                self._lost[node.id] = node
        return outcome

    def _refused(self, probe: CellSpec, where: Refused) -> ResultDict:
        """The result of a cell no node can run: skipped, or crashed (node lost)."""
        now = time.time()
        self.on_event(ProbeStarted(probe["id"], probe["family"], now))
        return make_result(probe, where.status, where.reason, seconds=0.0,
                           deps=self._rel_deps(probe, []), signals=[], log_tail="",
                           started=now, ended=now)

    async def _worker(self, family: str, env: str | None = None) -> RemoteHandle:
        """The warm worker of ``family`` on the node chosen for the cell at hand."""
        where = self._placed[family]
        handles = self.pool.setdefault(family, {})
        handle = handles.get(where.node.id)
        # watch mode: changed files restart the family's workers (no reload across hosts)
        if self._stale.pop(family, None) or family in self._recycle:
            self._recycle.discard(family)
            for old in handles.values():
                await old.close()
            handles.clear()
            handle = None
        if handle is not None and (not handle.alive or handle.resource != where.resource):
            await handle.close()
            handle = None
        if handle is None:
            handle = RemoteHandle(family, self.session, where.node, where.resource,
                                  self._spec(env), self.log_dir)
            handles[where.node.id] = handle
            self.workers[family] = handle
            await handle.start()
        self.workers[family] = handle
        return handle

    def _spec(self, env: str | None = None) -> WorkerSpec:
        """What a node needs to start a worker like the local one (``env``: the
        ``--env`` interpreter it runs, at the same path on the node)."""
        spec: WorkerSpec = {"options": self.config.options(),
                            "workspace": os.path.realpath(self.config.workspace),
                            "dirs": package_dirs()}
        found = next((e for e in self.config.envs if e.name == env), None) if env else None
        if found is not None:
            spec["env"] = {"name": found.name, "python": found.python}
        return spec

    def _all(self) -> list[RemoteHandle]:
        return [h for handles in self.pool.values() for h in handles.values()]

    async def close(self) -> None:
        """End every worker and actor of the run, then disconnect."""
        await asyncio.gather(*(h.close() for h in self._all()), return_exceptions=True)
        self.pool.clear()
        self.workers.clear()
        await super().close()
        if self._opened:
            await asyncio.to_thread(self.session.close)
            self._opened = False

    def kill_all(self) -> None:
        """Cancel every remote worker now (Ctrl-C, ``q``, SIGTERM)."""
        for h in self._all():
            h.kill()
        super().kill_all()
