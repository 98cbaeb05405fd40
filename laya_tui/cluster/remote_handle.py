"""A worker on a cluster node, seen from the runner exactly like a local
:class:`~laya_tui.core.worker_handle.WorkerHandle`: ``start``, ``send``, ``next_event``,
``kill``, ``close``, ``alive`` and ``watchdog`` (docs/cluster.md, 'How it runs').

Events come from the node's :class:`~laya_tui.cluster.node_actor.NodeWorker` by long polls
(one ``read`` in flight at a time, never dropped by a timeout here). On the driver's own host
the runner's watchdog samples the worker's process tree as for a local worker; on another
host it sees the pid 0 (nothing to sample), so there progress is the events alone and own
time is wall time, as on a machine without ``/proc``. A relay that dies with its node is
a ``crashed`` cell (node lost), never a hang.
"""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Awaitable
from functools import lru_cache
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

from laya_tui.cluster.node_actor import DIED, NodeWorker
from laya_tui.cluster.relay_types import (
    RayOptions,
    ReadBatch,
    RelayMessage,
    StartReply,
    WorkerSpec,
)
from laya_tui.cluster.session import Node, Session
from laya_tui.core.protocol import Command, Op, Reply, WorkerEvent
from laya_tui.core.worker_handle import WorkerDied, safe_name

if TYPE_CHECKING:
    from ray.actor import ActorClass, ActorHandle

#: Seconds one ``read`` waits on the node for a first event.
POLL_S = 0.5
#: Seconds a worker may take to start on its node (the workspace may travel first).
START_S = 180.0
#: A fraction of a resource: the cell asks for the resource (so Ray places it), and warm
#: workers of several families can share one device, as they do locally (``--jobs``).
SHARE = 0.01


_Reply = TypeVar("_Reply", covariant=True)


class _ActorMethod(Protocol, Generic[_Reply]):
    """A method of a Ray actor handle: ``.remote(...)`` gives an awaitable of its reply."""

    def remote(self, *args: object) -> Awaitable[_Reply]: ...


class _NodeActor(Protocol):
    """The handle of a :class:`NodeWorker` actor: the methods the driver calls."""

    @property
    def start(self) -> _ActorMethod[StartReply]: ...
    @property
    def send(self) -> _ActorMethod[None]: ...
    @property
    def read(self) -> _ActorMethod[ReadBatch]: ...
    @property
    def close(self) -> _ActorMethod[None]: ...


@lru_cache(maxsize=1)
def _actor_class() -> ActorClass[NodeWorker]:
    import ray

    return ray.remote(max_restarts=0, max_task_retries=0)(NodeWorker)


class _RemoteProc:
    """What the runner reads of ``handle.proc``: the worker's pid (on its node)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


class RemoteHandle:
    """One warm worker on ``node``, relayed by a Ray actor."""

    def __init__(self, family: str, session: Session, node: Node, resource: str | None,
                 spec: WorkerSpec, log_dir: str) -> None:
        self.family = family
        self.session = session
        self.node = node
        self.resource = resource
        self.spec = spec
        self.log_dir = log_dir
        self.worker_log = os.path.join(
            log_dir, f"_worker-{safe_name(family)}-{node.id[:8]}.log")
        self.actor: _NodeActor | None = None
        self.proc: _RemoteProc | None = None
        self.killed = False
        self.dead = False
        self._events: collections.deque[RelayMessage] = collections.deque()
        self._pending: asyncio.Future[ReadBatch] | None = None
        self.last_line = b""  # no raw line travels: the result's signals are encoded
        self._log: str | None = None  # the driver's log path of the cell in flight

    @property
    def alive(self) -> bool:
        return self.actor is not None and not (self.killed or self.dead)

    async def start(self) -> None:
        """Create the actor on the node and start its worker; raises WorkerDied."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        opts: RayOptions = {
            "num_cpus": 0, "scheduling_strategy": NodeAffinitySchedulingStrategy(
                self.node.id, soft=False),
            "name": f"{safe_name(self.family)}-{self.node.id[:8]}-{os.urandom(3).hex()}"}
        if self.resource == "GPU":
            opts["num_gpus"] = SHARE
        elif self.resource is not None:
            opts["resources"] = {self.resource: SHARE}
        # Ray's types stop at the handle: its methods' ``.remote`` are untyped there
        self.actor = cast(_NodeActor, _actor_class().options(**opts).remote(
            self.family, dict(self.spec, ship=self.session.ship)))
        try:
            async with asyncio.timeout(START_S):
                facts: StartReply = await self.actor.start.remote()
        except TimeoutError:
            self.kill()
            raise WorkerDied(f"no worker started on node {self.node.name()} within "
                             f"{START_S:g} s") from None
        except Exception as exc:  # noqa: BLE001 - Ray's errors: actor died, env setup
            self.kill()
            raise WorkerDied(self._lost_or(exc, "worker failed to start")) from None
        if "error" in facts:
            _write(self.worker_log, facts.get("worker_log", ""))
            self.kill()
            raise WorkerDied(f"{facts['error']} on node {self.node.name()}")
        self.proc = _RemoteProc(int(facts["pid"]) if self.node.same_host else 0)

    async def send(self, cmd: Command) -> None:
        """Pass one command to the node's worker."""
        if cmd["op"] == Op.RUN:
            self._log = cmd["log"]
        actor = self._started()
        try:
            await actor.send.remote(cmd)
        except Exception as exc:  # noqa: BLE001
            self.dead = True
            raise WorkerDied(self._lost_or(exc, "worker relay ended")) from None

    async def next_event(self, timeout: float | None) -> WorkerEvent:
        """The next event; WorkerDied once the worker or its node is gone, TimeoutError
        past ``timeout`` (the read in flight is kept for the next call)."""
        async with asyncio.timeout(timeout):
            while not self._events:
                if self._pending is None:
                    self._pending = asyncio.ensure_future(self._read())
                try:
                    batch = await asyncio.shield(self._pending)
                finally:
                    if self._pending.done():
                        self._pending = None
                self._events.extend(batch["events"])
        event = self._events.popleft()
        etype = event.get("type")
        if etype == Reply.FINISHED and self._log:
            _write(self._log, event.pop("log_tail", ""))
        elif etype == DIED:
            self.dead = True
            if self._log:
                _write(self._log, event.get("log_tail", ""))
            _write(self.worker_log, event.get("worker_log", ""))
            reason = str(event.get("reason"))
            if self.node.id[:8] not in reason:
                reason += f" on node {self.node.name()}"
            raise WorkerDied(reason)
        return cast(WorkerEvent, event)  # the worker's event, relayed

    async def _read(self) -> ReadBatch:
        try:
            batch: ReadBatch = await self._started().read.remote(POLL_S)
            return batch
        except Exception as exc:  # noqa: BLE001 - the actor or its node is gone
            self.dead = True
            return {"events": [{"type": DIED,
                                "reason": self._lost_or(exc, "worker relay ended")}]}

    def _started(self) -> _NodeActor:
        """The actor, once :meth:`start` made it."""
        if self.actor is None:
            raise WorkerDied(f"no worker started on node {self.node.name()}")
        return self.actor

    def _lost_or(self, exc: BaseException, what: str) -> str:
        """``node lost: ...`` when the node left the cluster, else ``what: <error>``."""
        if not self.session.is_alive(self.node.id):
            return f"node lost: {self.node.name()} left the cluster"
        text = " ".join(str(exc).split())[:300]
        return f"{what}: {type(exc).__name__}: {text}"

    def kill(self) -> None:
        """End the actor now (its worker dies with it: stdin EOF, parent death)."""
        self.killed = True
        if self.actor is None:
            return
        try:
            import ray

            ray.kill(cast("ActorHandle[NodeWorker]", self.actor), no_restart=True)
        except Exception:  # noqa: BLE001 - already gone, or disconnected
            pass

    async def close(self) -> None:
        """Ask the worker to exit and remove its node logs, then end the actor."""
        if self.actor is not None and self.alive:
            try:
                async with asyncio.timeout(5.0):
                    await self.actor.close.remote()
            except Exception:  # noqa: BLE001 - TimeoutError, or the actor is gone
                pass
        if self._pending is not None:
            self._pending.cancel()
        self.kill()


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        pass
